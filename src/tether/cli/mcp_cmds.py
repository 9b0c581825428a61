"""`tether mcp list | add | remove | login NAME | logout NAME`: the command-line surface of
`mcp.servers` (settings) and of MCP OAuth (`tether.mcp.oauth`).

Owns: argument parsing and messages (stderr), exit codes (0 ok, 1 bad input, settings or a
failed login). Does not own: the schema (`tether.settings.model.McpServerSettings`), the flow.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from tether.cli.output import err, fail
from tether.errors import ConfigError

# The settings stack (pydantic), asyncio and filelock are imported by the commands that run on
# them: importing this module (every `tether` start-up) stays light (start-up time,
# bench/startup.py).

mcp_app = typer.Typer(
    help="Configure MCP servers and log in to remote ones.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _pairs(items: list[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=" if what == "env" else ":")
        if not sep or not key.strip():
            sep_name = "KEY=VALUE" if what == "env" else "Name: value"
            raise ConfigError(f"--{what} {item!r}: expected {sep_name}")
        out[key.strip()] = value.strip() if what != "env" else value
    return out


@mcp_app.command("list")
def mcp_list(
    cwd: Annotated[Path, typer.Option(help="The project folder.")] = Path("."),
) -> None:
    """Print the configured MCP servers as JSON lines (no server is started)."""
    from tether.settings import load_settings

    try:
        settings = load_settings(cwd.resolve()).settings
    except ConfigError as exc:
        raise fail(exc) from None
    for name, s in settings.mcp.servers.items():
        row: dict[str, Any] = {"name": name, "enabled": s.enabled}
        if s.command is not None:
            row |= {"transport": "stdio", "command": [s.command, *s.args]}
        else:
            row |= {"transport": "http", "url": s.url, "oauth": s.oauth is not None}
        print(json.dumps(row, ensure_ascii=False))
    if not settings.mcp.servers:
        err("no MCP servers configured (add one with `tether mcp add`)")


@mcp_app.command("add")
def mcp_add(
    name: Annotated[str, typer.Argument(help="The server name (letters, digits, _ . -).")],
    command: Annotated[
        list[str] | None,
        typer.Argument(help="A stdio server's command and arguments (after --)."),
    ] = None,
    url: Annotated[str | None, typer.Option(help="A remote server's URL.")] = None,
    env: Annotated[
        list[str] | None, typer.Option(help="KEY=VALUE for a stdio server (repeatable).")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option(help="'Name: value' for a remote server (repeatable).")
    ] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Add it disabled.")] = False,
    project: Annotated[
        bool, typer.Option("--project", help="Write <cwd>/.tether/settings.json.")
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Add (or replace) an MCP server: `tether mcp add NAME -- CMD ARGS...` or
    `tether mcp add NAME --url URL`."""
    from tether.settings import save_setting

    try:
        if bool(command) == bool(url):
            raise ConfigError("give a command (after --) or --url, not both")
        entry: dict[str, Any] = {}
        if command:
            entry = {"command": command[0], "args": command[1:]}
            if env:
                entry["env"] = _pairs(env, "env")
        else:
            entry = {"url": url}
            if header:
                entry["headers"] = _pairs(header, "header")
        if disabled:
            entry["enabled"] = False
        key = "mcp.servers." + name.replace(".", "\\.")
        path = save_setting("project" if project else "user", key, entry, project_dir=cwd.resolve())
    except ConfigError as exc:
        raise fail(exc) from None
    err(f"added MCP server {name!r} in {path}")


@mcp_app.command("remove")
def mcp_remove(
    name: Annotated[str, typer.Argument(help="The server name.")],
    project: Annotated[
        bool, typer.Option("--project", help="Edit <cwd>/.tether/settings.json.")
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Remove an MCP server from the user (default) or project settings file."""
    from filelock import FileLock

    from tether.settings.files import read_json_object, settings_path, validate_layer, write_atomic

    path = settings_path("project" if project else "user", cwd.resolve())
    try:
        with FileLock(str(path) + ".lock", timeout=10):
            data = read_json_object(path) or {}
            mcp = data.get("mcp")
            servers = cast(dict[str, Any], mcp).get("servers") if isinstance(mcp, dict) else None
            if not isinstance(servers, dict) or name not in servers:
                raise ConfigError(f"no MCP server {name!r} in {path}")
            del cast(dict[str, Any], servers)[name]
            validate_layer(data, str(path))
            write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    except ConfigError as exc:
        raise fail(exc) from None
    err(f"removed MCP server {name!r} from {path}")


@mcp_app.command("login")
def mcp_login(
    name: Annotated[str, typer.Argument(help="A remote server's name.")],
    cwd: Annotated[Path, typer.Option(help="The project folder.")] = Path("."),
) -> None:
    """Authorize tether with a remote MCP server (OAuth in the browser); tokens are stored in
    the system keyring or the 0600 credential file."""
    import asyncio

    from tether.mcp.config import resolve_server
    from tether.mcp.connection import McpServerError
    from tether.mcp.oauth import login
    from tether.settings import load_settings

    root = cwd.resolve()
    try:
        settings = load_settings(root).settings
        server = settings.mcp.servers.get(name)
        if server is None:
            raise ConfigError(f"no MCP server {name!r} in the settings")
        spec = resolve_server(name, server, root)
        count, place = asyncio.run(login(spec, root))
    except (ConfigError, McpServerError) as exc:
        raise fail(exc) from None
    if place is None:
        err(f"MCP server {name!r} did not ask for authorization ({count} tools)")
    else:
        err(f"logged in to MCP server {name!r} ({count} tools); tokens stored in {place}")


@mcp_app.command("logout")
def mcp_logout(name: Annotated[str, typer.Argument(help="The server name.")]) -> None:
    """Remove a server's stored OAuth tokens (idempotent)."""
    from tether.mcp.oauth import forget_tokens

    try:
        removed = forget_tokens(name)
    except ConfigError as exc:
        raise fail(exc) from None
    if removed:
        err(f"removed the MCP server {name!r} tokens from: {', '.join(removed)}")
    else:
        err(f"no stored tokens for MCP server {name!r}: nothing removed")
