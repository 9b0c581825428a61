"""`tether --help` stays light (issue 12): it imports neither the agent stack nor pydantic,
asyncio or rich — each command imports what it runs on when it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import contextlib, io, json, sys
sys.argv = ["tether", *json.loads(sys.argv[1])]
try:
    with contextlib.redirect_stdout(io.StringIO()):
        from tether.cli.main import main
        main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

HEAVY = ("pydantic", "pydantic_core", "asyncio", "rich", "ssl", "httpx", "textual", "dbos")
HEAVY_TETHER = ("tether.agent", "tether.settings", "tether.providers", "tether.tools", "tether.tui")


def loaded(*argv: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(argv))],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def heavy(mods: list[str], *, allow: tuple[str, ...] = ()) -> list[str]:
    return [
        m
        for m in mods
        if (m.split(".")[0] in HEAVY and m.split(".")[0] not in allow) or m.startswith(HEAVY_TETHER)
    ]


def test_help_imports_no_heavy_module() -> None:
    mods = loaded("--help")
    assert "tether.cli.main" in mods  # the probe really ran the CLI
    assert heavy(mods) == []


def test_command_help_imports_no_tether_stack() -> None:
    # typer itself coerces a command's parameters through pydantic (typer._adapters)
    for argv in (["run", "--help"], ["mcp", "--help"], ["config", "--help"]):
        assert heavy(loaded(*argv), allow=("pydantic", "pydantic_core")) == [], argv


def test_jobs_views_import_no_agent_stack(tmp_path: Path) -> None:
    """`tether jobs status` and the other views run no task: they import neither the agent
    nor a provider SDK (the Jobs tests fork their commands from an interpreter that has all of
    it imported, `kit.zygote`, so only a fresh process shows this)."""
    (tmp_path / "p" / ".tether" / "jobs").mkdir(parents=True)
    env = {**os.environ, "TETHER_HOME": str(tmp_path / "home")}
    for argv in (["jobs", "status"], ["jobs", "workers"], ["jobs", "logs", "x"]):
        mods = loaded(*argv, cwd=tmp_path / "p", env=env)
        assert "tether.jobs.folder" in mods, argv  # the probe really ran the command
        stack = [m for m in mods if m.startswith(("tether.agent", "tether.providers"))]
        assert stack == [] and "openai" not in mods and "tether.jobs.runner" not in mods, argv
