"""`tether --help` stays light (issue 12): it imports neither the agent stack nor pydantic,
asyncio or rich — each command imports what it runs on when it runs."""

from __future__ import annotations

import json
import subprocess
import sys

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


def loaded(*argv: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(argv))],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
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
