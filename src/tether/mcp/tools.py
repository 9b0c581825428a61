"""MCP servers' tools as tether `Tool`s: the small API a run uses.

Owns: `McpTools` — from the `mcp.servers` settings to connections (`tether.mcp.connection`),
the offered tools (`mcp__<server>__<tool>`, `tether.mcp.config.tool_names`) plus one
`mcp_read_resource` tool, keeping a registry current on tools/list_changed, the listing cache
that lets a lazy server's tools be offered before it starts, warnings for servers that are
skipped, and closing everything (`aclose`).
Does not own: the protocol (the `mcp` SDK), the result mapping (`tether.mcp.convert`), the
persisted-output gate (applied by the loop to every tool result).

Start: an `eager` server starts in `start()` (concurrently, each within its start-up limit); a
`lazy` one (the default) whose listing is cached from an earlier run is offered from the cache
and starts at its first call; without a cached listing it starts in `start()` too (its tools
must be known to be offered). A server that fails to start is skipped with a warning
(`on_warning(kind, message)`: `mcp_server_failed`, or `mcp_login_required` for a remote
server that wants an OAuth login in a headless run). A tool call never raises: a server that
is down, crashed, timed out or refused gives an is_error result naming the server.

A server that did not start within its start-up limit is remembered (`late_path`, next to its
listing cache): the next runs do not wait for it. They start it in the background with one
warning (`mcp_server_late`) and go on; when it is ready its tools join the offered ones (and
the attached registry: the next request offers them) and its listing is cached, so the run
after that offers it at once (lazy). It failing again is one `mcp_server_failed` warning.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tether.errors import ConfigError, McpServerError, McpStartTimeout
from tether.mcp.config import Lookup, ServerSpec, default_lookup, resolve_server, tool_names
from tether.mcp.connection import WARNINGS_DIR, ServerConnection
from tether.mcp.convert import call_result_parts, describe_tool, resource_parts, tool_schema
from tether.mcp.oauth import build_auth
from tether.sandbox.base import Sandbox
from tether.sandbox.policy import PathPolicy
from tether.settings.model import McpServerSettings
from tether.tools.base import Tool
from tether.tools.context import ToolOutput
from tether.tools.env import DEFAULT_REFUSED
from tether.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

READ_RESOURCE_TOOL = "mcp_read_resource"
CALL_GRACE_S = 5.0
"""Added to a server's call limit for the runner's own limit (the connection's fires first)."""

OnWarning = Callable[[str, str], None]
"""Called with (kind, message) for a skipped server."""


def _cache_key(spec: ServerSpec) -> str:
    ident = json.dumps([spec.command, spec.url, sorted(spec.env.items())], sort_keys=True)
    return hashlib.sha256(ident.encode()).hexdigest()[:12]


def listing_path(cache_dir: Path, spec: ServerSpec) -> Path:
    """Where the tool listing of `spec` from its last connection is cached (one file per
    server name and launch description: command, URL, environment)."""
    return cache_dir / "mcp-tools" / f"{spec.name}-{_cache_key(spec)}.json"


def read_listing(cache_dir: Path, spec: ServerSpec) -> tuple[mt.Tool, ...] | None:
    """The tools `spec`'s server listed at its last connection, or None (never connected
    with this launch description, or an unreadable cache file)."""
    path = listing_path(cache_dir, spec)
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return tuple(mt.Tool.model_validate(t) for t in raw)
    except (OSError, ValueError, ValidationError, TypeError):
        return None


def late_path(cache_dir: Path, spec: ServerSpec) -> Path:
    """The mark of a server that did not start within its limit at its last try (next runs
    start it in the background instead of waiting)."""
    return listing_path(cache_dir, spec).with_suffix(".late")


def write_listing(cache_dir: Path, spec: ServerSpec, tools: Sequence[mt.Tool]) -> None:
    """Cache `tools` as `spec`'s listing (a failure is logged, not raised)."""
    path = listing_path(cache_dir, spec)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
        path.write_text(json.dumps(data), encoding="utf-8")
    except OSError as exc:
        log.debug("MCP tool listing cache not written: %s", exc)


class McpTools:
    """The MCP servers of a run and their tools.

    Args:
        servers: `mcp.servers` from the settings (disabled ones are ignored).
        root: the working folder (stdio servers may write only there, under the sandbox).
        session_dir: the session's artifact folder: stdio servers' stderr goes to
            `<session_dir>/mcp-warnings/<server>.log`; None: discarded.
        sandbox: the OS sandbox stdio servers run in, or None.
        refused_env: variable names stdio servers never see unless their `env` names them.
        on_warning: told about skipped servers (kind, message).
        default_start: `mcp.start` (`lazy` or `eager`).
        cache_dir: where listings of lazy servers are cached; None: no cache.
        lookup: resolves `${VAR}` (default: environment, then the credential store).
        allow_unsandboxed: start stdio servers even when `sandbox` is None (default: they are
            skipped with a warning, as a run without a sandbox is in safe mode anyway).
        policy: the tools' policy stdio servers are confined by (`tools` settings:
            `tether.sandbox.policy.policy_for`), or None.
        only: offer only the tools of these (offered) names, `tools.only`; None: all.
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        root: Path,
        session_dir: Path | None = None,
        sandbox: Sandbox | None = None,
        refused_env: Iterable[str] = DEFAULT_REFUSED,
        on_warning: OnWarning | None = None,
        default_start: str = "lazy",
        cache_dir: Path | None = None,
        lookup: Lookup = default_lookup,
        allow_unsandboxed: bool = False,
        policy: PathPolicy | None = None,
        only: Collection[str] | None = None,
    ) -> None:
        self.root = root
        self._only = None if only is None else frozenset(only)
        self.on_warning = on_warning
        self.cache_dir = cache_dir
        self.connections: dict[str, ServerConnection] = {}
        self._offered: dict[str, dict[str, str]] = {}  # server -> {offered: original}
        self._listings: dict[str, tuple[mt.Tool, ...]] = {}  # server -> the listing offered
        self._tools: dict[str, Tool] = {}
        self._registry: ToolRegistry | None = None
        self._auth: dict[str, Any] = {}
        self._late: dict[str, asyncio.Task[None]] = {}  # server -> its start in the background
        self.on_joined: Callable[[str], None] | None = None
        """Told the name of a server started in the background once its tools joined."""
        refused = tuple(refused_env)
        log_dir = session_dir / WARNINGS_DIR if session_dir is not None else None
        for name, settings in servers.items():
            if not settings.enabled:
                continue
            try:
                spec = resolve_server(
                    name, settings, root, default_start=default_start, lookup=lookup
                )
            except ConfigError as exc:
                self._warn("mcp_server_failed", f"MCP server `{name}` skipped: {exc}")
                continue
            if spec.command and sandbox is None and not allow_unsandboxed:
                self._warn(
                    "mcp_server_failed",
                    f"MCP server `{name}` skipped: no OS sandbox to run it in",
                )
                continue
            auth = build_auth(spec)
            self._auth[name] = auth
            self.connections[name] = ServerConnection(
                spec,
                root=root,
                sandbox=sandbox,
                refused_env=refused,
                log_dir=log_dir,
                auth=auth,
                on_tools_changed=self._changed_callback(name),
                policy=policy,
                on_warning=self._warn,
            )

    def _warn(self, kind: str, message: str) -> None:
        log.debug("%s: %s", kind, message)
        if self.on_warning is not None:
            self.on_warning(kind, message)

    # --- listing cache ------------------------------------------------------------------

    def _cached(self, spec: ServerSpec) -> tuple[mt.Tool, ...] | None:
        return None if self.cache_dir is None else read_listing(self.cache_dir, spec)

    def _store_cache(self, spec: ServerSpec, tools: Sequence[mt.Tool]) -> None:
        if self.cache_dir is not None:
            write_listing(self.cache_dir, spec, tools)
            late_path(self.cache_dir, spec).unlink(missing_ok=True)

    def _was_late(self, spec: ServerSpec) -> bool:
        return self.cache_dir is not None and late_path(self.cache_dir, spec).is_file()

    def _mark_late(self, spec: ServerSpec) -> None:
        if self.cache_dir is None:
            return
        path = late_path(self.cache_dir, spec)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        except OSError as exc:
            log.debug("MCP late-start mark not written: %s", exc)

    async def _start_late(self, conn: ServerConnection) -> None:
        """Start `conn` in the background; when it is ready its tools join (module docstring)."""
        try:
            await conn.start()
        except McpServerError as exc:
            self._warn("mcp_server_failed", f"{exc}; its tools are not offered")
            return
        self._store_cache(conn.spec, conn.tools)
        stale = self._tools.pop(READ_RESOURCE_TOOL, None)  # rebuilt: its enum of servers grew
        if stale is not None and self._registry is not None and READ_RESOURCE_TOOL in self._registry:
            self._registry.remove(READ_RESOURCE_TOOL)
        self._replace(conn.name, conn.tools)
        if self.on_joined is not None:
            self.on_joined(conn.name)

    # --- tools --------------------------------------------------------------------------

    async def start(self, taken: Iterable[str] = ()) -> list[Tool]:
        """Start the servers that must start now (module docstring) and return the tools to
        offer: each server's tools, then `mcp_read_resource` when any server is usable.

        Args:
            taken: names already used by other tools (MCP names avoid them).
        """
        used = set(taken)

        async def start_one(conn: ServerConnection) -> tuple[mt.Tool, ...] | None:
            cached = None if conn.spec.eager else self._cached(conn.spec)
            if cached is not None:
                return cached
            if self._was_late(conn.spec):
                self._late[conn.name] = asyncio.create_task(
                    self._start_late(conn), name=f"mcp-late:{conn.name}"
                )
                self._warn(
                    "mcp_server_late",
                    f"MCP server `{conn.name}` did not start in time in an earlier run; "
                    "the run goes on without it and its tools join when it is ready",
                )
                return None
            try:
                await conn.start()
            except McpStartTimeout as exc:
                self._mark_late(conn.spec)
                self._warn(
                    "mcp_server_failed",
                    f"{exc} (`startup_timeout`); its tools are not offered, and later runs "
                    "start it without waiting",
                )
                return None
            except McpServerError as exc:
                auth = self._auth.get(conn.name)
                if auth is not None and getattr(auth, "login_required", False):
                    self._warn(
                        "mcp_login_required",
                        f"MCP server `{conn.name}` skipped: it needs authorization; run "
                        f"`tether mcp login {conn.name}`",
                    )
                else:
                    self._warn("mcp_server_failed", f"{exc}; its tools are not offered")
                return None
            self._store_cache(conn.spec, conn.tools)
            return conn.tools

        conns = list(self.connections.values())
        listings = await asyncio.gather(*(start_one(c) for c in conns))
        for conn, listing in zip(conns, listings, strict=True):
            if listing is None:
                continue
            self._offer(conn, listing, used)
            used |= set(self._offered[conn.name])
        if self._offered and self._allowed(READ_RESOURCE_TOOL):
            self._tools[READ_RESOURCE_TOOL] = self._read_resource_tool()
        return list(self._tools.values())

    def _allowed(self, name: str) -> bool:
        return self._only is None or name in self._only

    def _offer(self, conn: ServerConnection, listing: Sequence[mt.Tool], used: set[str]) -> None:
        self._listings[conn.name] = tuple(listing)
        by_name = {t.name: t for t in listing}
        offered = tool_names(conn.name, list(by_name), used)
        offered = {n: o for n, o in offered.items() if self._allowed(n)}
        self._offered[conn.name] = offered
        for name, original in offered.items():
            self._tools[name] = self._make_tool(conn, name, by_name[original])

    def _make_tool(self, conn: ServerConnection, name: str, mcp_tool: mt.Tool) -> Tool:
        original = mcp_tool.name

        async def call(**arguments: Any) -> ToolOutput:
            return await self.call(conn.name, original, arguments)

        return Tool(
            name=name,
            description=describe_tool(conn.name, mcp_tool.description, mcp_tool.title),
            parameters=tool_schema(mcp_tool.input_schema),
            fn=call,
            timeout_s=conn.spec.timeout_s + CALL_GRACE_S,
            is_async=True,
        )

    @property
    def tools(self) -> list[Tool]:
        """The tools offered now."""
        return list(self._tools.values())

    def offered_names(self) -> frozenset[str]:
        """The names of the tools offered now (`mcp__<server>__<tool>`, `mcp_read_resource`)."""
        return frozenset(self._tools)

    def attach(self, registry: ToolRegistry) -> None:
        """Keep `registry` current when a server's tool list changes (tools/list_changed)."""
        self._registry = registry

    def _changed_callback(self, server: str) -> Callable[[Sequence[mt.Tool]], None]:
        def changed(listing: Sequence[mt.Tool]) -> None:
            self._replace(server, listing)

        return changed

    def _replace(self, server: str, listing: Sequence[mt.Tool]) -> None:
        conn = self.connections[server]
        old = self._offered.pop(server, {})
        for name in old:
            self._tools.pop(name, None)
            if self._registry is not None and name in self._registry:
                self._registry.remove(name)
        used = set(self._tools)
        if self._registry is not None:
            used |= set(self._registry.names())
        read_tool = self._tools.pop(READ_RESOURCE_TOOL, None)
        self._offer(conn, listing, used)
        if self._allowed(READ_RESOURCE_TOOL):
            self._tools[READ_RESOURCE_TOOL] = read_tool or self._read_resource_tool()
        if self._registry is not None:
            for name in self._offered[server]:
                self._registry.add(self._tools[name])
            if READ_RESOURCE_TOOL in self._tools and READ_RESOURCE_TOOL not in self._registry:
                self._registry.add(self._tools[READ_RESOURCE_TOOL])
        self._store_cache(conn.spec, listing)

    # --- calls --------------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> ToolOutput:
        """Call `tool` on `server`; every failure is an is_error result naming the server.

        Raises:
            asyncio.CancelledError: the call was cancelled (the server is sent
                `notifications/cancelled` by the SDK).
        """
        conn = self.connections.get(server)
        if conn is None:
            return ToolOutput(f"no MCP server `{server}` in this run", is_error=True)
        was_running = conn.running
        try:
            result = await conn.call_tool(tool, dict(arguments))
        except TimeoutError:
            return ToolOutput(
                f"MCP server `{server}`: tool `{tool}` timed out after {conn.spec.timeout_s:g} s; "
                "the call was cancelled",
                is_error=True,
            )
        except McpServerError as exc:
            return ToolOutput(str(exc), is_error=True)
        except MCPError as exc:
            return ToolOutput(f"MCP server `{server}` refused `{tool}`: {exc}", is_error=True)
        except Exception as exc:
            return ToolOutput(
                f"MCP server `{server}`: `{tool}` failed: {type(exc).__name__}: {exc}",
                is_error=True,
            )
        if not was_running and conn.tools != self._listings.get(server):
            # a (re)start listed other tools than those offered (a stale cache): offer these
            self._replace(server, conn.tools)
        parts, is_error = call_result_parts(result)
        return ToolOutput(parts, is_error=is_error)

    def _read_resource_tool(self) -> Tool:
        servers = sorted(self._offered)

        async def read(server: str, uri: str) -> ToolOutput:
            conn = self.connections.get(server)
            if conn is None or server not in self._offered:
                names = ", ".join(sorted(self._offered)) or "(none)"
                return ToolOutput(f"no MCP server `{server}`; servers: {names}", is_error=True)
            try:
                result = await conn.read_resource(uri)
            except TimeoutError:
                return ToolOutput(
                    f"MCP server `{server}`: reading {uri} timed out after "
                    f"{conn.spec.timeout_s:g} s",
                    is_error=True,
                )
            except McpServerError as exc:
                return ToolOutput(str(exc), is_error=True)
            except MCPError as exc:
                return ToolOutput(f"MCP server `{server}` cannot read {uri}: {exc}", is_error=True)
            return ToolOutput(resource_parts(result))

        timeout = max((c.spec.timeout_s for c in self.connections.values()), default=60.0)
        return Tool(
            name=READ_RESOURCE_TOOL,
            description="Read a resource (by URI) from an MCP server, e.g. a `resource link` "
            "a tool returned.",
            parameters={
                "type": "object",
                "properties": {
                    "server": {
                        "type": "string",
                        "enum": servers,
                        "description": "the MCP server name",
                    },
                    "uri": {"type": "string", "description": "the resource URI"},
                },
                "required": ["server", "uri"],
                "additionalProperties": False,
            },
            fn=read,
            timeout_s=timeout + CALL_GRACE_S,
            is_async=True,
        )

    async def aclose(self) -> None:
        """Stop every server, and the starts still under way in the background (idempotent)."""
        late = [t for t in self._late.values() if not t.done()]
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        await asyncio.gather(
            *(c.aclose() for c in self.connections.values()), return_exceptions=True
        )
