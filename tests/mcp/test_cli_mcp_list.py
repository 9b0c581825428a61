"""`tether mcp list`: each server's tools from its last connection (`--connect` starts the
servers `run` would load, inside the sandbox, and lists them now), and a project's servers
marked as not loaded while the project is not approved (`tether trust`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kit.mcp import DEMO
from tether.cli.main import app
from tether.sandbox.detect import detect_sandbox

pytestmark = pytest.mark.timeout(180)
runner = CliRunner()


def _rows(args: list[str]) -> list[dict[str, Any]]:
    r = runner.invoke(app, ["mcp", "list", *args])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))  # the listing cache lives there
    proj = tmp_path / "proj"
    (proj / ".tether").mkdir(parents=True)
    server = {"command": sys.executable, "args": [str(DEMO)]}
    (proj / ".tether" / "settings.json").write_text(
        json.dumps({"mcp": {"servers": {"demo": server}}})
    )
    return proj


def test_an_unapproved_projects_servers_are_marked_not_loaded(project: Path) -> None:
    r = runner.invoke(app, ["mcp", "list", "--cwd", str(project)])
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [(x["name"], x["loaded"]) for x in rows] == [("demo", False)], r.output
    assert "tether trust" in rows[0]["why"] and "not approved" in r.output
    # --connect does not start what run would not load
    rows = _rows(["--cwd", str(project), "--connect"])
    assert rows[0]["loaded"] is False and "tools" not in rows[0]


@pytest.mark.skipif(detect_sandbox() is None, reason="no OS sandbox on this machine")
def test_tools_from_the_last_connection_and_with_connect(project: Path) -> None:
    assert runner.invoke(app, ["trust", "--cwd", str(project)]).exit_code == 0
    rows = _rows(["--cwd", str(project)])
    assert rows[0]["loaded"] is True and rows[0]["tools"] is None  # never connected yet
    rows = _rows(["--cwd", str(project), "--connect"])
    assert "add" in rows[0]["tools"], rows
    rows = _rows(["--cwd", str(project)])  # from the listing the connection left
    assert "add" in rows[0]["tools"], rows
