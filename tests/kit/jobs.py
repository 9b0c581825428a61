"""Helpers for the Jobs tests: a loopback model that answers by the request's content (so
concurrent runs of many tasks need no shared script), a project with a jobs folder, and
`tether` in a subprocess with that model selected through the user settings file.

The model: a task whose prompt holds `TOOL` gets one `bash` call appending a line to
`side/<task>.txt` (a side effect a repeated call would double), one holding `SLOW` a
`bash` call sleeping 120 s; after any tool result, or for
any other prompt, the answer is `done <first word of the prompt>`."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, cast

from kit import cli, zygote
from kit.faultserver import FaultServer, Step, text, tool


def _first_user_text(body: Any) -> str:
    for m in body.get("messages", []):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                parts = cast("list[Any]", c)
                return " ".join(
                    cast("dict[str, str]", p).get("text", "") for p in parts if isinstance(p, dict)
                )
    return ""


class LoopModel(FaultServer):
    """The content-driven loopback model; `delay_s` per reply."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        super().__init__(self._reply)

    def _reply(self, n: int, path: str, body: Any) -> Step:
        if self.delay_s:
            time.sleep(self.delay_s)
        messages = body.get("messages", [])
        prompt = _first_user_text(body)
        word = prompt.split()[0] if prompt.split() else "?"
        if messages and messages[-1].get("role") == "tool":
            return text(f"done {word}")
        if "SLOW" in prompt:
            return tool("bash", command="sleep 120")
        if "TOOL" in prompt:
            return tool("bash", command=f"mkdir -p side && echo ran >> side/{word}.txt")
        return text(f"done {word}")

    def finals(self) -> dict[str, int]:
        """Per first prompt word: requests answered with a final text."""
        out: dict[str, int] = {}
        for r in self.requests:
            body = r["body"]
            word = (_first_user_text(body).split() or ["?"])[0]
            msgs = body.get("messages", [])
            if msgs and (msgs[-1].get("role") == "tool" or "TOOL" not in _first_user_text(body)):
                out[word] = out.get(word, 0) + 1
        return out


def project(tmp: Path, model: LoopModel, *, jobs_settings: dict[str, Any] | None = None) -> Path:
    """A project folder with `.tether/jobs/ai-jobs` and the user settings selecting `model`
    (under `tmp/cfg`, which `env` points TETHER_CONFIG_DIR to)."""
    root = tmp / "proj"
    (root / ".tether" / "jobs").mkdir(parents=True)
    (root / ".tether" / "jobs" / "ai-jobs").touch()
    cfg = tmp / "cfg"
    cfg.mkdir(exist_ok=True)
    settings: dict[str, Any] = {
        "model": "loop/m",
        "providers": {"loop": {"type": "openai", "base_url": model.openai_url}},
        "retry": {"max_attempts": 5, "base": "20ms", "max": "100ms"},
    }
    if jobs_settings:
        settings["jobs"] = jobs_settings
    (cfg / "settings.json").write_text(json.dumps(settings))
    return root


def task_file(root: Path, name: str, prompt: str, **front: Any) -> Path:
    lines = ["---", *(f"{k}: {json.dumps(v)}" for k, v in front.items()), "---", prompt, ""]
    p = root / ".tether" / "jobs" / f"{name}.md"
    p.write_text("\n".join(lines) if front else prompt + "\n")
    return p


def env(tmp: Path, **extra: str) -> dict[str, str]:
    """`kit.cli.cli_env` with the home `tmp/home` and the user settings under `tmp/cfg`."""
    return cli.cli_env(tmp / "home", TETHER_CONFIG_DIR=str(tmp / "cfg"), **extra)


RUNS = ("dispatch", "run", "worker")
"""The commands that refuse an unapproved project: the helpers below approve the project's
files as they are (`tether trust`, what its user does after reviewing them) before each."""


def approve(tmp: Path, root: Path) -> None:
    """`tether trust` in `root` (the user approves the project's current files)."""
    done = cli.run_cli(["trust"], tmp / "home", cwd=root, TETHER_CONFIG_DIR=str(tmp / "cfg"))
    assert done.returncode == 0, done.stderr


def tether(
    tmp: Path, root: Path, *args: str, timeout: float = 180, trust: bool = True, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`tether jobs ARGS` as a process in `root` (DBOS keeps process-wide state: each command
    is a process of its own, as a user's is), forked from the warmed interpreter
    (`kit.zygote`)."""
    if trust and args and args[0] in RUNS:
        approve(tmp, root)
    return zygote.run(["jobs", *args], env=env(tmp, **extra), cwd=root, timeout=timeout)


def popen(
    tmp: Path,
    root: Path,
    *args: str,
    start_new_session: bool = False,
    stderr: Path | None = None,
    **extra: str,
) -> zygote.Forked:
    """`tether jobs ARGS` started in `root` and left running (forked from the warmed
    interpreter, `kit.zygote`); stdout discarded, stderr written to the file `stderr` or
    discarded."""
    if args and args[0] in RUNS:
        approve(tmp, root)
    if stderr is None:
        return zygote.start(
            ["jobs", *args], env=env(tmp, **extra), cwd=root, start_new_session=start_new_session
        )
    with stderr.open("w") as err:  # the child has its own copy
        return zygote.start(
            ["jobs", *args],
            env=env(tmp, **extra),
            cwd=root,
            stderr=err.fileno(),
            start_new_session=start_new_session,
        )


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def jobs_url(tmp: Path, root: Path) -> str:
    """The embedded SQLite jobs database of `root` under `tmp/home` (`default_database_url`)."""
    from tether.jobs.engine import default_project

    return f"sqlite:///{tmp / 'home' / 'jobs' / default_project(root)}.sqlite"


def job_sessions(tmp: Path, root: Path, url: str | None = None) -> Any:
    """The store holding `root`'s Jobs sessions: the jobs database (`url`, else the embedded
    SQLite one under `tmp/home`), as any worker reads it."""
    from tether.jobs.engine import sessions_url
    from tether.session.dbstore import DbSessionStore

    return DbSessionStore(sessions_url(url or jobs_url(tmp, root)), tmp / "home" / "sessions")
