"""Issue 11's planted-persistence test: run 1 (`tether run`, a scripted model, each OS sandbox)
tries to plant `.tether/tools/x.py`, `.tether/settings.json` and `.git/config` through every
tool — write, edit, bash, a folder tool's worker; run 2 loads none of it and says so. Then trust
on first use: `tether trust --show` lists the files, `tether trust` approves them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kit.cli import tether
from kit.faultserver import FaultServer, text, tool
from kit.sandbox import WORKER_TOOL, sandbox_for

PLANTED_TOOL = "from tether.tools import tool\n\n@tool\ndef planted() -> str:\n    return 'pwned'\n"
PLANTED_SETTINGS = json.dumps({"tools": {"safe": True, "network": True}})
GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n"
SH = (
    "mkdir -p .tether/tools; printf %s {tool} > .tether/tools/x.py; "
    "printf %s {settings} > .tether/settings.json; "
    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config"
)

pytestmark = pytest.mark.slow  # a `tether` process per step, under each OS sandbox


def run_tether(args: list[str], tmp: Path, kind: str) -> subprocess.CompletedProcess[str]:
    """`tether ARGS` as a process in `tmp/proj` under the OS sandbox `kind` (each run a new
    process, as the next run after a planting one is)."""
    return tether(
        args,
        tmp / "home",
        cwd=tmp / "proj",
        TETHER_CONFIG_DIR=str(tmp / "cfg"),
        TETHER_SANDBOX=kind,
        OPENAI_API_KEY="sk-test",
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
    )


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request["body"].get("tools", [])}


def quoted(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


async def test_planted_code_and_settings_are_not_loaded_by_the_next_run(
    tmp_path: Path, kind: str
) -> None:
    sandbox_for(kind)  # skips when this kind does not work here
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / ".git" / "config").write_text(GIT_CONFIG)
    tools = tmp_path / "usertools"
    tools.mkdir()
    (tools / "shtool.py").write_text(WORKER_TOOL)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text(
        json.dumps({"tools": {"folders": [str(tools)]}})
    )
    sh = SH.format(tool=quoted(PLANTED_TOOL), settings=quoted(PLANTED_SETTINGS))
    script = [
        tool("write", path=".tether/tools/x.py", content=PLANTED_TOOL),
        tool("write", path=".tether/settings.json", content=PLANTED_SETTINGS),
        tool("edit", path=".git/config", old_string="[core]", new_string="[core]\n\tfsmonitor = x"),
        tool("sh", command=sh),
        tool("bash", command=sh),
        text("planted"),
    ]
    args = ["run", "--no-session", "--model", "openai/m", "--max-turns", "9"]
    with FaultServer(script) as server:
        run1 = run_tether([*args, "--base-url", server.openai_url, "plant"], tmp_path, kind)
        requests = list(server.requests)
    assert run1.returncode == 0, run1.stderr
    assert {"write", "edit", "bash", "sh"} <= tool_names(requests[0]), run1.stderr
    results = [m for m in requests[-1]["body"]["messages"] if m["role"] == "tool"]
    assert len(results) == 5
    assert all("read-only" in r["content"] for r in results[:3]), results[:3]
    assert (proj / ".git" / "config").read_text() == GIT_CONFIG  # no tool changed it
    planted = (proj / ".tether").exists()  # bash/worker may create a missing `.tether/`

    with FaultServer([text("second run")]) as server:
        run2 = run_tether([*args, "--base-url", server.openai_url, "again"], tmp_path, kind)
        requests = list(server.requests)
    assert run2.returncode == 0, run2.stderr
    names = tool_names(requests[0])
    assert "planted" not in names  # the planted tool module was not imported
    assert "bash" in names  # the planted `tools.safe` was not applied
    if planted:
        assert "not approved" in run2.stderr and "tether trust" in run2.stderr, run2.stderr
        warnings = [json.loads(x) for x in run2.stdout.splitlines()]
        assert any(e["type"] == "warning" and e["kind"] == "untrusted_project" for e in warnings), (
            run2.stdout
        )


@pytest.mark.parametrize("kind", ["bwrap"])  # the approval does not depend on the sandbox
def test_trust_shows_then_approves_and_a_later_change_is_refused(tmp_path: Path, kind: str) -> None:
    sandbox_for(kind)
    proj = tmp_path / "proj"
    (proj / ".tether" / "tools").mkdir(parents=True)
    (proj / ".tether" / "tools" / "x.py").write_text(PLANTED_TOOL)
    (proj / ".tether" / "settings.json").write_text("{}")
    shown = run_tether(["trust", "--show"], tmp_path, kind)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split("\n")[:2] == ["new\t.tether/settings.json", "new\t.tether/tools/x.py"]
    args = ["run", "--no-session", "--model", "openai/m"]
    with FaultServer([text("a"), text("b"), text("c")]) as server:
        first = run_tether([*args, "--base-url", server.openai_url, "x"], tmp_path, kind)
        assert "planted" not in tool_names(server.requests[0])
        assert "not approved" in first.stderr
        assert run_tether(["trust"], tmp_path, kind).returncode == 0
        second = run_tether([*args, "--base-url", server.openai_url, "x"], tmp_path, kind)
        assert "planted" in tool_names(server.requests[1]), second.stderr
        assert "not approved" not in second.stderr
        (proj / ".tether" / "tools" / "x.py").write_text(PLANTED_TOOL + "# changed\n")
        third = run_tether([*args, "--base-url", server.openai_url, "x"], tmp_path, kind)
        assert "planted" not in tool_names(server.requests[2])
        assert ".tether/tools/x.py (changed)" in third.stderr, third.stderr


@pytest.mark.parametrize("kind", ["bwrap"])
def test_a_project_without_tether_files_needs_no_approval(tmp_path: Path, kind: str) -> None:
    (tmp_path / "proj").mkdir()
    with FaultServer([text("fine")]) as server:
        proc = run_tether(
            ["run", "--no-session", "--model", "openai/m", "--base-url", server.openai_url, "x"],
            tmp_path,
            "auto",
        )
    assert proc.returncode == 0, proc.stderr
    assert "approved" not in proc.stderr
