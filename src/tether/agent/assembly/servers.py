"""The agent's MCP servers: started from the config (`mcp.servers`) when the agent first
runs, their tools added to its registry, stopped by `Agent.aclose()`.

Owns: `McpServers` — one agent's `tether.mcp.McpTools` over its life: built at the first
`start` (by then the session's artifact folder is known: stdio servers' stderr is logged
there), started in the running event loop, restarted when a later run uses another loop
(`run_sync` runs each call in a fresh loop) or the live settings' `mcp` section changed
(`Agent.apply_settings({"mcp.servers": ...})`: the tool entries are rebuilt at the next run,
no restart), and closed with its tools removed from the registry. Warnings for skipped servers
go to the agent's event stream (`warning` events) and to its setup notes. Each server's
lifecycle is an `env` event: `up` or `down` when started, `down` when stopped.
Does not own: the servers' protocol and tools (`tether.mcp`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tether.agent.assembly import build
from tether.agent.events import AgentEvent, EnvEvent, WarningEvent
from tether.sandbox.base import Sandbox
from tether.settings import AgentConfig
from tether.tools.context import ToolContext
from tether.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from tether.mcp import McpTools


def mcp_tools(
    settings: AgentConfig,
    root: Path,
    *,
    session_dir: Path | None,
    sandbox: Sandbox | None,
    on_warning: Callable[[str, str], None],
) -> McpTools | None:
    """The MCP servers of `settings` (`mcp.servers`), or None when none is enabled. Nothing
    starts here: `await McpTools.start()` does (see `tether.mcp.tools`)."""
    if not any(s.enabled for s in settings.mcp.servers.values()):
        return None
    from tether.mcp import McpTools
    from tether.providers.models import default_cache_dir
    from tether.sandbox.policy import policy_for

    return McpTools(
        settings.mcp.servers,
        root=root,
        session_dir=session_dir,
        sandbox=sandbox,
        refused_env=build.refused_env(settings),
        on_warning=on_warning,
        default_start=settings.mcp.start,
        cache_dir=default_cache_dir(),
        policy=policy_for(settings.tools, root),
        only=settings.tools.only,
    )


def _servers_key(config: AgentConfig) -> tuple[object, ...]:
    """What the running servers and their tool entries are built from: when it changes (a
    live settings change), the next `start` rebuilds them."""
    return (config.mcp, config.tools.only, config.tools.sandbox, config.tools.network)


class McpServers:
    """The MCP servers of one agent (none when the config enables none).

    Args:
        config: the agent's config (`mcp` section; refused environment names), or a function
            giving the live one (`Agent`: its settings as `apply_settings` last changed them):
            when its `mcp` section (or `tools.only`) changed since the servers started, the
            next `start` stops them, takes their tools out of the registry and starts the
            servers the new section names (live settings rebuild the MCP tool entries).
        emit: the agent's event sink (`warning` events for skipped servers).
        note: also told each warning line (`warning: ...`), or None.
    """

    def __init__(
        self,
        config: AgentConfig | Callable[[], AgentConfig],
        emit: Callable[[AgentEvent], None],
        note: Callable[[str], None] | None = None,
    ) -> None:
        self._config_of: Callable[[], AgentConfig] = (
            (lambda: config) if isinstance(config, AgentConfig) else config
        )
        self.emit = emit
        self.note = note
        self.tools: McpTools | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._key: tuple[object, ...] | None = None
        self._added: list[str] = []
        self._up: list[str] = []
        self._why: dict[str, str] = {}

    @property
    def config(self) -> AgentConfig:
        """The config the servers are (or will be) started from."""
        return self._config_of()

    @property
    def enabled(self) -> bool:
        """Whether the config enables any server."""
        return any(s.enabled for s in self.config.mcp.servers.values())

    def _warn(self, kind: str, message: str) -> None:
        if self.note is not None:
            self.note(f"warning: {message}")
        for name in self.config.mcp.servers:  # the server a warning is about (`down` detail)
            if f"`{name}`" in message or repr(name) in message:
                self._why.setdefault(name, message)
        self.emit(WarningEvent(kind=kind, message=message))

    def _report(self) -> None:
        """Each enabled server's `env` event after a start: `up` with its tools, else `down`."""
        from tether.mcp.config import SEPARATOR, TOOL_PREFIX, sanitize

        offered = self.tools.offered_names() if self.tools is not None else frozenset[str]()
        for name, spec in self.config.mcp.servers.items():
            if not spec.enabled:
                continue
            prefix = f"{TOOL_PREFIX}{sanitize(name)}{SEPARATOR}"
            count = sum(1 for t in offered if t.startswith(prefix))
            if count:
                self._up.append(name)
                up = EnvEvent(what="mcp_server", name=name, state="up", detail=f"{count} tools")
                self.emit(up)
            else:
                why = self._why.get(name, "not started (no tools offered)")
                self.emit(EnvEvent(what="mcp_server", name=name, state="down", detail=why))

    async def start(self, registry: ToolRegistry, ctx: ToolContext) -> None:
        """Start the servers in the running loop unless they already run in it; their tools
        join `registry` (names that collide with existing tools are changed, see
        `tether.mcp`). A server that fails is skipped with a warning; nothing raises."""
        loop = asyncio.get_running_loop()
        config = self.config
        key = _servers_key(config)
        if self.tools is not None and self._loop is loop and key == self._key:
            return
        if self.tools is not None:  # the settings changed, or a loop that has ended
            if self._loop is loop:
                await self.tools.aclose()
            self._forget(registry)
        if not any(s.enabled for s in config.mcp.servers.values()):
            return
        self._key = key
        self.tools = mcp_tools(
            config,
            ctx.root,
            session_dir=ctx.session_dir,
            sandbox=ctx.sandbox,
            on_warning=self._warn,
        )
        if self.tools is None:
            return
        self._loop = loop
        for t in await self.tools.start(taken=registry.names()):
            registry.add(t)
            self._added.append(t.name)
        self.tools.attach(registry)
        self.tools.on_joined = self._joined
        self._report()

    def _joined(self, name: str) -> None:
        """A server started in the background is ready: its `env` event `up`."""
        from tether.mcp.config import SEPARATOR, TOOL_PREFIX, sanitize

        prefix = f"{TOOL_PREFIX}{sanitize(name)}{SEPARATOR}"
        offered = self.tools.offered_names() if self.tools is not None else frozenset[str]()
        count = sum(1 for t in offered if t.startswith(prefix))
        self._up.append(name)
        self.emit(EnvEvent(what="mcp_server", name=name, state="up", detail=f"{count} tools"))

    def _forget(self, registry: ToolRegistry) -> None:
        names = set(self._added)
        if self.tools is not None:
            names |= self.tools.offered_names()
        for name in names:
            if name in registry:
                registry.remove(name)
        self._added.clear()
        self.tools = None
        self._loop = None
        for name in self._up:
            self.emit(EnvEvent(what="mcp_server", name=name, state="down", detail="stopped"))
        self._up.clear()

    async def aclose(self, registry: ToolRegistry) -> None:
        """Stop the servers and take their tools out of `registry` (idempotent)."""
        tools = self.tools
        if tools is None:
            return
        if self._loop is asyncio.get_running_loop():
            await tools.aclose()
        self._forget(registry)
