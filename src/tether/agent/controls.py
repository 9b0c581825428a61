"""What a host does to a live `Agent` between and during runs: the model chain and its switch,
safe mode and the approval mode, steering, manual compaction, cancelling one tool call, and
the MCP servers' lifecycle (`start` / `aclose` / `async with`).

Owns: `AgentControls`, the base class of `tether.agent.loop.Agent` that holds these methods
(the loop itself, `run`, stays in `loop.py`). Does not own: building the parts (`__init__`,
`tether.agent.build`), the run (`tether.agent.loop`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Self

from tether.agent import build
from tether.agent.approval import ApprovalGate, ApprovalMode
from tether.agent.attempts import Attempts
from tether.agent.context import AutoCompaction
from tether.agent.events import AgentEvent
from tether.agent.runtime import Runtime
from tether.agent.servers import McpServers
from tether.agent.state import RunState
from tether.agent.tool_calls import ToolCalls
from tether.compaction.pressure import ModelLimits
from tether.errors import ConfigError
from tether.messages import Provenance, text_turn
from tether.providers.base import Provider
from tether.providers.retry import RetryPolicy
from tether.sandbox.policy import NO_SANDBOX_WARNING
from tether.settings import AgentConfig
from tether.tools.context import ToolContext
from tether.tools.registry import ToolRegistry
from tether.tracing import Tracing
from tether.wire import Repair, ViewBuilder

__all__ = ["AgentControls"]


class AgentControls:
    """The host-facing controls of an `Agent` (see the module docstring). The attributes
    below are set by `Agent.__init__`."""

    config: AgentConfig
    runtime: Runtime
    notes: list[str]
    limits: ModelLimits
    compaction: AutoCompaction | None
    registry: ToolRegistry
    tool_context: ToolContext
    mcp: McpServers
    tracing: Tracing
    safe_mode: bool
    safe_mode_forced: bool
    new_id: Callable[[], str]
    chain: tuple[Provider, ...]
    _emit: Callable[[AgentEvent], None]
    _retry: RetryPolicy
    _tool_calls: ToolCalls
    _views: list[ViewBuilder]
    _attempts: Attempts
    _steering: tuple[str, ...] = ()

    def _on_repair(self, repair: Repair) -> None:
        raise NotImplementedError  # Agent's

    def _state(self) -> RunState:
        raise NotImplementedError  # Agent's

    # -- the model chain ----------------------------------------------------------------------

    @property
    def provider(self) -> Provider:
        """The first provider of the chain (the one tried first)."""
        return self.chain[0]

    @provider.setter
    def provider(self, provider: Provider) -> None:
        """Switch the model mid-session: `provider` heads the chain from the next request on
        (the fallback providers stay behind it); the wire view is rebuilt for its target."""
        self._set_chain((provider, *self.chain[1:]))

    def _set_chain(self, chain: tuple[Provider, ...]) -> None:
        self.chain = chain
        self._views = [  # one per chain position: the wire view differs per target
            ViewBuilder(
                p.target,
                route=Provenance(provider=p.name, api=p.target, model=p.model),
                supports_prefill=bool(getattr(p, "supports_prefill", False)),
                on_repair=self._on_repair,
                # Within a run only the loop appends to `history`; `run()` resets the builder in
                # case a caller edited it in between, so the O(history) prefix check is not needed.
                check_prefix=False,
            )
            for p in chain
        ]
        self._attempts = Attempts(
            chain,
            policy=self._retry,
            emit=self._emit,
            sleep=self.runtime.sleep,
            rng=self.runtime.rng,
            tracing=self.tracing,
        )

    def switch_model(self, model: str) -> None:
        """Switch to `model` ("provider/model") from the next request on: the chain becomes
        that model alone; the limits (window, output cap) and the compaction's window follow.

        Raises:
            ConfigError: (AuthError included) the model does not resolve.
        """
        chain = build.resolve_models(model, self.config, note=self.notes.append)
        windows = build.configured_windows(self.config)
        self.limits = build.model_limits(
            chain[0], self.config.context.window, self.notes.append, configured=windows
        )
        if self.compaction is not None:
            self.compaction.monitor.set_limits(self.limits)
        self._set_chain(chain)

    # -- safe mode and approval ---------------------------------------------------------------

    def set_safe_mode(self, on: bool) -> None:
        """Offer and run only safe (read-only) tools from the next request on; calls of the
        current reply that are already running are not stopped.

        Raises:
            ConfigError: turning it off while no OS sandbox is available (forced safe mode).
        """
        if not on and self.safe_mode_forced:
            raise ConfigError(NO_SANDBOX_WARNING)
        self.safe_mode = on

    @property
    def approval_mode(self) -> ApprovalMode:
        """The approval mode now: `read-only` while safe mode is on."""
        return "read-only" if self.safe_mode else self._tool_calls.approval.mode

    def set_approval_mode(self, mode: ApprovalMode) -> None:
        """Switch the approval mode from the next call on (`read-only` turns safe mode on;
        any other mode turns it off).

        Raises:
            ConfigError: leaving `read-only` while no OS sandbox is available.
        """
        if mode == "read-only":
            self.set_safe_mode(True)
            return
        self.set_safe_mode(False)
        self._tool_calls.approval.mode = mode

    @property
    def approval(self) -> ApprovalGate:
        """The approval gate (its `approver` may be attached or replaced by a host)."""
        return self._tool_calls.approval

    # -- during a run: one tool call, steering --------------------------------------------------

    def cancel_tool(self, call_id: str) -> bool:
        """End one running tool call; its result becomes `TOOL_CANCELLED` (is_error) and the run
        goes on. Returns False when no call with that id is running."""
        return self._tool_calls.cancel(call_id)

    def steer(self, text: str) -> None:
        """Queue a user message for the running loop: it is appended to the history right
        before the next request (after the current tool results), so the model sees it at the
        next turn boundary. Messages still queued when a run ends stay in `pending_steering`
        (the host sends them as the next prompt)."""
        if text.strip():
            self._steering = (*self._steering, text)

    @property
    def pending_steering(self) -> tuple[str, ...]:
        """Queued steering messages not yet appended, oldest first."""
        return self._steering

    def take_steering(self) -> tuple[str, ...]:
        """Remove and return the queued steering messages (a host sending them itself)."""
        out, self._steering = self._steering, ()
        return out

    def _take_steering(self, state: RunState) -> None:
        for text in self.take_steering():
            state.append(text_turn(self.new_id(), "user", text))

    # -- between runs: manual compaction --------------------------------------------------------

    async def compact_now(self, focus: str | None = None) -> bool:
        """Compact the history now (reason `manual`), keeping `focus` in the summary. Returns
        False when there was nothing to compact or compaction is off.

        Raises:
            RunError: `context_overflow` when the summary failed and nothing can be truncated.
        """
        if self.compaction is None:
            return False
        for views in self._views:
            views.reset()
        state = self._state()
        return await self.compaction.compact(state, reason="manual", focus=focus) is not None

    # -- the MCP servers' lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Start the config's MCP servers (`mcp.servers`) in the running loop and add their
        tools; `run` does it when needed. A server that fails is skipped with a `warning`
        event (`mcp_server_failed`, `mcp_login_required`); nothing raises."""
        await self.mcp.start(self.registry, self.tool_context)

    async def aclose(self) -> None:
        """Stop the MCP servers (their tools leave the registry); idempotent. `async with
        agent:` calls it on exit; `run_sync` after each run."""
        await self.mcp.aclose(self.registry)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
