"""`tether mcp list | add | remove | logout`: editing `mcp.servers` in the settings files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tether.cli.main import app
from tether.credentials import store_key
from tether.settings import load_settings
from tether.settings.files import user_config_dir

runner = CliRunner()


def test_add_list_remove(tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["mcp", "add", "files", "--env", "ROOT=/data", "--", "npx", "-y", "server-fs", "."]
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["mcp", "add", "gh", "--url", "https://api.example/mcp", "--header", "X-A: b"]
    )
    assert r.exit_code == 0, r.output
    servers = load_settings(tmp_path).settings.mcp.servers
    assert servers["files"].command == "npx" and servers["files"].args == ["-y", "server-fs", "."]
    assert servers["files"].env == {"ROOT": "/data"}
    assert servers["gh"].headers == {"X-A": "b"}
    r = runner.invoke(app, ["mcp", "list", "--cwd", str(tmp_path)])
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["name"], x["transport"]) for x in rows] == [("files", "stdio"), ("gh", "http")]
    r = runner.invoke(app, ["mcp", "remove", "files"])
    assert r.exit_code == 0, r.output
    assert list(load_settings(tmp_path).settings.mcp.servers) == ["gh"]
    r = runner.invoke(app, ["mcp", "remove", "files"])
    assert r.exit_code == 1 and "no MCP server 'files'" in r.output


def test_bad_input_is_one_line_exit_1() -> None:
    r = runner.invoke(app, ["mcp", "add", "x"])
    assert r.exit_code == 1 and "give a command" in r.output
    r = runner.invoke(app, ["mcp", "add", "x", "--url", "ftp://nope"])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert not (user_config_dir() / "settings.json").exists() or "x" not in (
        user_config_dir() / "settings.json"
    ).read_text()
    r = runner.invoke(app, ["mcp", "login", "nothere"])
    assert r.exit_code == 1 and "no MCP server 'nothere'" in r.output


def test_login_refuses_stdio_and_logout_is_idempotent() -> None:
    runner.invoke(app, ["mcp", "add", "local", "--", "server"])
    r = runner.invoke(app, ["mcp", "login", "local"])
    assert r.exit_code == 1 and "stdio server" in r.output
    store_key("mcp.gh", '{"url": "u"}', store="file")
    r = runner.invoke(app, ["mcp", "logout", "gh"])
    assert r.exit_code == 0 and "removed" in r.output
    r = runner.invoke(app, ["mcp", "logout", "gh"])
    assert r.exit_code == 0 and "nothing removed" in r.output


def test_add_refuses_a_name_that_exists_unless_forced(tmp_path: Path) -> None:
    """The third trial: `mcp add NAME` silently replaced a server of that name (as Claude
    Code's `claude mcp add` refuses it: remove first)."""
    assert runner.invoke(app, ["mcp", "add", "srv", "--", "first-server"]).exit_code == 0
    path = user_config_dir() / "settings.json"
    before = path.read_text()
    r = runner.invoke(app, ["mcp", "add", "srv", "--url", "https://api.example/mcp"])
    assert r.exit_code == 1
    assert r.output == (
        f"tether: MCP server 'srv' already exists in {path}: `tether mcp remove srv` first, "
        "or add --force to replace it\n"
    )
    assert path.read_text() == before
    r = runner.invoke(app, ["mcp", "add", "srv", "--force", "--", "second-server"])
    assert r.exit_code == 0 and r.output == f"tether: replaced MCP server 'srv' in {path}\n"
    assert load_settings(tmp_path).settings.mcp.servers["srv"].command == "second-server"
    # the same name in the other file is another entry: the project's is added
    r = runner.invoke(app, ["mcp", "add", "srv", "--project", "--cwd", str(tmp_path), "--", "p"])
    assert r.exit_code == 0, r.output
