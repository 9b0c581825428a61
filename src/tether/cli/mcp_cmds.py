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
    connect: Annotated[
        bool,
        typer.Option(
            "--connect",
            help="Start the servers `run` would load (sandboxed) and list their tools now.",
        ),
    ] = False,
) -> None:
    """Print the configured MCP servers as JSON lines: each one's tools as listed at its last
    connection (`--connect`: now), and whether `tether run` loads it (a project's servers are
    not loaded until the project is approved with `tether trust`)."""
    from tether.settings import load_settings
    from tether.settings.trust import trusted_settings

    root = cwd.resolve()
    try:
        every = load_settings(root).settings
        loaded, refused = trusted_settings(root)
    except ConfigError as exc:
        raise fail(exc) from None
    run_servers = loaded.settings.mcp.servers
    live = _connect(loaded.settings, root) if connect else {}
    for name, s in every.mcp.servers.items():
        row: dict[str, Any] = {"name": name, "enabled": s.enabled}
        if s.command is not None:
            row |= {"transport": "stdio", "command": [s.command, *s.args]}
        else:
            row |= {"transport": "http", "url": s.url, "oauth": s.oauth is not None}
        if run_servers.get(name) != s:
            row |= {"loaded": False, "why": f"project not approved (`tether trust` in {root})"}
        else:
            row["loaded"] = s.enabled
            row |= live.get(name) or _last_listing(name, s, root)
        print(json.dumps(row, ensure_ascii=False))
    if not every.mcp.servers:
        err("no MCP servers configured (add one with `tether mcp add`)")
    elif refused is not None:
        err(refused)


def _last_listing(name: str, settings: Any, root: Path) -> dict[str, Any]:
    """`{"tools": [names]}` from the server's last connection (`{"tools": null}`: none yet)."""
    from tether.mcp.config import resolve_server
    from tether.mcp.tools import read_listing
    from tether.providers.models import default_cache_dir

    try:
        spec = resolve_server(name, settings, root)
    except ConfigError as exc:
        return {"tools": None, "error": str(exc)}
    listing = read_listing(default_cache_dir(), spec)
    return {"tools": None if listing is None else [t.name for t in listing]}


def _connect(config: Any, root: Path) -> dict[str, dict[str, Any]]:
    """Start every enabled server of `config` now (as `tether run` would: stdio ones inside the
    sandbox) and list its tools; `{name: {"tools": [...]} | {"tools": null, "error": ...}}`."""
    import asyncio

    from tether.agent.assembly.build import refused_env
    from tether.mcp import McpTools
    from tether.providers.models import default_cache_dir
    from tether.sandbox.detect import detect_sandbox
    from tether.sandbox.policy import policy_for

    servers = {
        n: s.model_copy(update={"start": "eager"})
        for n, s in config.mcp.servers.items()
        if s.enabled
    }
    errors: dict[str, str] = {}

    def warned(_kind: str, message: str) -> None:
        name = message.split("`")[1] if message.count("`") >= 2 else ""
        errors[name] = message

    async def run() -> dict[str, dict[str, Any]]:
        kind = config.tools.sandbox
        mcp = McpTools(
            servers,
            root=root,
            sandbox=detect_sandbox(None if kind == "auto" else kind),
            refused_env=refused_env(config),
            on_warning=warned,
            cache_dir=default_cache_dir(),
            policy=policy_for(config.tools, root),
        )
        try:
            await mcp.start()
            return {
                n: {"tools": [t.name for t in c.tools]}
                for n, c in mcp.connections.items()
                if c.running
            }
        finally:
            await mcp.aclose()

    try:
        found = asyncio.run(run())
    except ConfigError as exc:
        raise fail(exc) from None
    for name in servers:
        if name not in found:
            found[name] = {"tools": None, "error": errors.get(name, "not started")}
    return found


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
    force: Annotated[
        bool, typer.Option("--force", help="Replace a server of that name in the same file.")
    ] = False,
    project: Annotated[
        bool, typer.Option("--project", help="Write <cwd>/.tether/settings.json.")
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Add an MCP server: `tether mcp add NAME -- CMD ARGS...` or `tether mcp add NAME --url
    URL`. A server of that name in the same file is refused (one line, exit 1) unless
    `--force` replaces it."""
    from tether.settings.files import read_setting
    from tether.settings.trust import keeping_approval

    root = cwd.resolve()
    key = "mcp.servers." + name.replace(".", "\\.")
    try:
        where, exists, _ = read_setting("project" if project else "user", key, project_dir=root)
    except ConfigError as exc:
        raise fail(exc) from None
    if exists and not force:
        err(
            f"MCP server {name!r} already exists in {where}: `tether mcp remove {name}"
            f"{' --project' if project else ''}` first, or add --force to replace it"
        )
        raise typer.Exit(1)
    with keeping_approval(root, enabled=project) as notes:
        path = _add(name, command, url, env, header, disabled, project, root)
    err(f"{'replaced' if exists else 'added'} MCP server {name!r} in {path}")
    for note in notes:
        err(note)


def _add(
    name: str,
    command: list[str] | None,
    url: str | None,
    env: list[str] | None,
    header: list[str] | None,
    disabled: bool,
    project: bool,
    root: Path,
) -> Path:
    """Write the server's entry (`mcp add`); returns the settings file written."""
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
        return save_setting("project" if project else "user", key, entry, project_dir=root)
    except ConfigError as exc:
        raise fail(exc) from None


@mcp_app.command("remove")
def mcp_remove(
    name: Annotated[str, typer.Argument(help="The server name.")],
    project: Annotated[
        bool, typer.Option("--project", help="Edit <cwd>/.tether/settings.json.")
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder for --project.")] = Path("."),
) -> None:
    """Remove an MCP server from the user (default) or project settings file."""

    from tether.settings.files import settings_path
    from tether.settings.trust import keeping_approval

    root = cwd.resolve()
    path = settings_path("project" if project else "user", root)
    with keeping_approval(root, enabled=project) as notes:
        _remove(name, path)
    err(f"removed MCP server {name!r} from {path}")
    for note in notes:
        err(note)


def _remove(name: str, path: Path) -> None:
    """Delete the server's entry from the settings file `path` (`mcp remove`)."""
    from filelock import FileLock

    from tether.atomic import write_atomic
    from tether.settings.files import read_json_object, validate_layer

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


@mcp_app.command("login")
def mcp_login(
    name: Annotated[str, typer.Argument(help="A remote server's name.")],
    cwd: Annotated[Path, typer.Option(help="The project folder.")] = Path("."),
) -> None:
    """Authorize tether with a remote MCP server (OAuth in the browser); tokens are stored in
    the system keyring or the 0600 credential file."""
    import asyncio

    from tether.errors import McpServerError
    from tether.mcp.config import resolve_server
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
