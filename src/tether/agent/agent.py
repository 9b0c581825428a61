"""`Agent`: the object a host holds — one agent over one session, a thin facade over its parts
(`tether.agent.assembly.parts.AgentParts`) and the loop (`tether.agent.turn.loop.run_turns`).

Owns: building an agent (`Agent(...)`, `from_settings(cwd)`, `from_parts`), and what a host
does to a live agent: switch the model, session settings, safe mode and approval mode,
steering, cancelling one call, manual compaction, `start` / `aclose` / `async with`.
Does not own: the parts and how they are derived (`tether.agent.assembly.parts`,
`tether.agent.assembly.build`), the loop (`tether.agent.turn.loop`), the session file
(`tether.agent.sessions`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

from tether.agent import user_controls
from tether.agent.approval import ApprovalGate, ApprovalMode
from tether.agent.assembly import build, prompting
from tether.agent.assembly.assemble import assemble
from tether.agent.assembly.build import ModelLike
from tether.agent.assembly.chains import ChainCache
from tether.agent.assembly.parts import SETTINGS_APPLIED_LIVE, AgentParts
from tether.agent.assembly.servers import McpServers
from tether.agent.events import WarningEvent
from tether.agent.host import Host
from tether.agent.runtime import Runtime
from tether.agent.sessions import MODEL_EVENT, AgentSession
from tether.agent.subagents import Subagents, with_task_tool
from tether.agent.turn.budget import Budget
from tether.agent.turn.children import ChildUsage
from tether.agent.turn.compacting import AutoCompaction
from tether.agent.turn.hooks import Hooks
from tether.agent.turn.loop import Controls, close_interrupted, run_turns
from tether.agent.turn.state import RunResult, RunState
from tether.compaction.monitor import ContextMonitor
from tether.errors import ConfigError
from tether.messages import ContentBlock, Turn
from tether.providers.base import Provider
from tether.sandbox.policy import NO_SANDBOX_WARNING
from tether.settings import AgentConfig
from tether.tokens import ModelLimits
from tether.tools.base import Tool, ToolContext
from tether.tools.registry import ToolRegistry
from tether.tracing import Tracing

__all__ = ["Agent"]


class Agent:
    """One agent over one session: `Agent("anthropic/claude-sonnet-4-5")`.

    Everything configurable is in `config` (`tether.AgentConfig`, the settings-file shape);
    the arguments here are what a settings file cannot hold: the model objects, the tools, the
    host's callbacks, the session. `Agent.from_settings(cwd)` builds exactly the agent
    `tether run` builds in that folder (settings files, tool folders, credentials).

    Args:
        model: `"provider/model"` (`"local"`, `"openai/gpt-4o"`, a name from the config's
            `providers`), a provider object, or a list of them in fallback order (see
            `tether.providers.fallback` for which faults hand over); None takes the config's
            `model` selection (entries without a key are skipped, see `notes`).
        config: the configuration (default `AgentConfig()`): turns, timeouts, retries, tool
            policy (sandbox, safe mode, network, deny paths, refused env names, output
            threshold capped at the model's window), thinking decay, compaction, hooks.
        tools: the tools offered (a registry or a sequence of `Tool`; `builtin_tools()` for
            tether's own).
        system: the system prompt (default `config.run.system`).
        root: the working folder; file tools are confined to it.
        host: the host's callbacks: events, approval, the `question` tool's bridge, setup
            notes, the agent's path (`tether.agent.host.Host`; default: none).
        session: the history to continue and where new turns go
            (`tether.agent.sessions.AgentSession`: `.resume(store, id)`, `.new(store, cwd=)`,
            or in memory; default: a new in-memory session).
        runtime: the process-facing hooks (environment, sleep, jitter, ids, tracing; see
            `tether.agent.runtime.Runtime` and `tether.testing.deterministic`).
        hooks: library hooks (`tether.agent.turn.hooks.Hooks`), run before the settings' shell
            hooks (`config.hooks`).
        compaction: True: automatic compaction as `config.context` says (built from the
            model's window); False: none; or your own `AutoCompaction`.

    Attributes:
        notes: one-line setup notes (a fallback entry skipped, an unknown context window).

    The model's `info.supports_prefill` (`tether.providers.catalog.ModelInfo`) says whether it
    accepts an assistant-final request (else the wire view ends with a user turn; Anthropic
    rejects prefill on newer models: "This model does not support assistant message prefill").

    Raises:
        ConfigError: (AuthError included) a model that does not resolve, an invalid config.
        tether.sandbox.base.SandboxUnavailableError: the config (or `TETHER_SANDBOX`) forces
            a sandbox kind that does not work on this machine.
    """

    def __init__(
        self,
        model: ModelLike | None = None,
        *,
        config: AgentConfig | None = None,
        tools: ToolRegistry | Sequence[Tool] = (),
        system: str | None = None,
        root: Path | str = ".",
        host: Host | None = None,
        session: AgentSession | None = None,
        runtime: Runtime | None = None,
        hooks: Hooks | None = None,
        compaction: AutoCompaction | bool = True,
    ) -> None:
        cfg = config if config is not None else AgentConfig()
        host = host or Host()
        session = session or AgentSession()
        self.notes: list[str] = []
        self._host = host
        chain = build.resolve_models(model, cfg, note=self._note)
        parts = assemble(
            cfg,
            chain,
            tools,
            root=Path(root),
            session=session,
            system=system,
            host=host,
            runtime=runtime,
            hooks=hooks,
            compaction=compaction,
            note=self._note,
        )
        self._adopt(parts, session)

    @classmethod
    def from_parts(cls, parts: AgentParts, session: AgentSession | None = None) -> Self:
        """An agent over parts made by `tether.agent.assembly.assemble.assemble` (for what the
        constructor does not take, e.g. `hygiene=` rules); `session` must be the one the
        parts were assembled with (its folder is in `parts.tool_context`)."""
        agent = cls.__new__(cls)
        agent.notes = []
        agent._host = parts.host
        agent._adopt(parts, session or AgentSession())
        return agent

    def _adopt(self, parts: AgentParts, session: AgentSession) -> None:
        subagents = Subagents(self, type(self))
        self._subagents = subagents
        parts = replace(
            parts, tool_context=replace(parts.tool_context, spawn=subagents.spawn)
        ).with_policy(ChildUsage(subagents.take_usage))
        cfg = parts.config
        self._config = cfg
        self._history: list[Turn] = list(session.history)
        self._used_call_ids: set[str] = {c.id for t in self._history for c in t.tool_calls}
        self._controls = Controls(
            parts=parts,
            session=session,
            safe_mode=cfg.tools.safe or parts.sandbox_missing or cfg.tools.approval == "read-only",
            resumed=bool(self._history),
        )
        self._mcp = McpServers(lambda: self.parts.config, parts.emit, self._note)  # live `mcp.*`
        user_controls.adopt(self)

    @classmethod
    def from_settings(
        cls,
        cwd: Path | str = ".",
        *,
        model: ModelLike | None = None,
        base_url: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        system: str | None = None,
        host: Host | None = None,
        session: AgentSession | None = None,
        runtime: Runtime | None = None,
        chains: ChainCache | None = None,
    ) -> Self:
        """The agent `tether run` builds in `cwd`: the user and project settings files
        (`tether.settings`; the project's files only once approved, `tether trust`: else a
        `warning` event `untrusted_project`), the built-in tools plus the tool folders and the
        `task` tool (unless `agents.task_tool` is off), the `question` tool when the host can
        ask (`host.questions`), `web_fetch` (unless `tools.web.fetch` is off), the `lsp` tool
        (when a language server is installed, unless `lsp.enabled` is off), the credentials
        of the chain's providers (redacted from tool output), automatic compaction, and
        tether's default system prompt over the session's facts (`tether.agent.assembly.prompting`: the
        environment, the instruction files, the skills listing and the `skill` tool; a resumed
        session's stored facts, else new ones recorded when its file opens).

        Args:
            cwd: the project folder (settings, tool folders; the tools' working folder).
            model: pins the model (as `--model`; strict), else the settings' selection.
            base_url: the endpoint for the model(s) (as `--base-url`).
            overrides: dotted config fields to replace (`{"tools.safe": True}`; as flags do;
                `{"tools.only": [...]}` for a Job's `tools`).
            chains: reuse the providers built before from the same model inputs
                (`tether.agent.assembly.chains.ChainCache`, one per event loop).
            Others: as `Agent`.

        Raises:
            ConfigError: (AuthError included) a settings file or model that is invalid, or a
                `tools.only` name that is no tool of these settings (`check_only_tools`).
        """
        host = host or Host()
        early: list[str] = []
        overrides = user_controls.with_stored_effort(overrides, session)

        def say(line: str) -> None:
            early.append(line)
            if host.note is not None:
                host.note(line)

        root, cfg, chain, tools, refused = user_controls.from_settings_files(
            cwd, model=model, base_url=base_url, overrides=overrides, note=say,
            resolve=None if chains is None else chains.resolve, session=session,
        )
        if refused is not None:  # an unapproved project: its files were not loaded
            say(f"warning: {refused}")
            host.emit(WarningEvent(kind="untrusted_project", message=refused))
        session = session or AgentSession()
        facts = prompting.prepare_context(
            root, cfg, chain, session, note=say, headless=host.approver is None
        )
        tools += prompting.context_tools(facts, tools)
        report = prompting.context_report(facts)
        if report is not None:
            say(report)
        with_task_tool(tools, cfg.agents, say)
        prompting.host_tools(tools, cfg, host)
        agent = cls(
            chain,
            config=cfg,
            tools=tools,
            system=system,
            root=root,
            host=host,
            session=session,
            runtime=runtime,
        )
        agent.notes[:0] = early
        return agent

    def _note(self, line: str) -> None:
        self.notes.append(line)
        if self._host.note is not None:
            self._host.note(line)

    # -- what the agent is made of (read-only) --------------------------------------------------

    @property
    def parts(self) -> AgentParts:
        """The agent's parts now (a model switch or a settings change replaces them)."""
        return self._controls.parts

    @property
    def config(self) -> AgentConfig:
        """The config the agent was built with (`parts.config` adds the session's changes)."""
        return self._config

    @property
    def session(self) -> AgentSession:
        """The agent's session (history source, where turns go, started calls)."""
        return self._controls.session

    @property
    def history(self) -> list[Turn]:
        """The turns so far (the loop appends to this list; use `append` to add one)."""
        return self._history

    @property
    def chain(self) -> tuple[Provider, ...]:
        """The providers in fallback order."""
        return self.parts.chain

    @property
    def provider(self) -> Provider:
        """The first provider of the chain (the one tried first)."""
        return self.parts.chain[0]

    @property
    def limits(self) -> ModelLimits:
        """The first model's context window and output cap (tokens)."""
        return self.parts.limits

    @property
    def compaction(self) -> AutoCompaction | None:
        """Automatic compaction, or None when off."""
        return self.parts.compaction

    @property
    def context_monitor(self) -> ContextMonitor | None:
        """The monitor measuring the context: the compaction's, or with compaction off the
        runaway guard's (None only for parts built without either)."""
        context = self.parts.compaction or self.parts.guard
        return None if context is None else context.monitor

    @property
    def registry(self) -> ToolRegistry:
        """The tools offered."""
        return self.parts.registry

    @property
    def tool_context(self) -> ToolContext:
        """What a running tool may know (root, env, sandbox, session folder)."""
        return self.parts.tool_context

    @property
    def root(self) -> Path:
        """The working folder (a real path)."""
        return self.parts.root

    @property
    def system(self) -> str | None:
        """The system prompt sent with each request."""
        return self.parts.run.system

    @property
    def max_turns(self) -> int:
        """Requests per run at most (`run.max_turns`; `run(max_turns=)` overrides one run)."""
        return self.parts.run.max_turns

    @property
    def runtime(self) -> Runtime:
        """The process-facing hooks."""
        return self.parts.runtime

    @property
    def library_hooks(self) -> Hooks | None:
        """The library hooks given (`Agent(hooks=...)`; the hook runner is the parts')."""
        return self.parts.library_hooks

    @property
    def agent_path(self) -> tuple[str, ...]:
        """This agent's path: `("main",)`, or a subagent's."""
        return self.parts.agent_path

    @property
    def tracing(self) -> Tracing:
        """Where the agent's spans go (off unless the config or the runtime says)."""
        return self.parts.tracing

    @property
    def subagents(self) -> Subagents:
        """This agent's children (`running` by `task` call id)."""
        return self._subagents

    @property
    def mcp(self) -> McpServers:
        """This agent's MCP servers."""
        return self._mcp

    def current_view(self) -> tuple[Turn, ...]:
        """The wire view of the history as it stands, for the chain's first provider."""
        return self.parts.view(self._history)

    def redact(self, text: str) -> str:
        """`text` with known secret values and secret-shaped strings masked (tool output)."""
        return self.parts.redact(text)

    def append(self, turn: Turn) -> None:
        """Add `turn` to the history and persist it (before a run: messages given on stdin).

        Raises:
            tether.errors.SessionError: the session file cannot be opened.
        """
        self.session.open()
        self._state().append(turn)

    def _state(self) -> RunState:
        return RunState(
            history=self._history, session=self.session, used_call_ids=self._used_call_ids
        )

    # -- the model and session settings -----------------------------------------------------------

    def switch_model(self, model: ModelLike) -> None:
        """Switch to `model` ("provider/model", a provider object, or a list in fallback
        order) from the next request on, also during a run; the limits (window, output cap)
        and the compaction's window follow.

        Raises:
            ConfigError: (AuthError included) the model does not resolve.
        """
        chain = build.resolve_models(model, self.parts.config, note=self._note)
        self._controls.parts = self.parts.with_model(chain, self._note)
        if isinstance(model, str):  # kept by the session: a resume runs on it again
            self.session.record_event(MODEL_EVENT, {"model": model})
        user_controls.say(self, self._note)

    def apply_settings(self, values: Mapping[str, Any]) -> None:
        """Change dotted settings for this session, from the next request on: `model`,
        `tools.approval`, `tools.safe`, `tools.add_dirs`, `run.*`, `context.*`, `retry.*`
        (`AgentParts.with_settings`, `user_controls`), all checked before any is applied.

        Raises:
            ConfigError: a value the schema rejects, a key that cannot change mid-session, a
                model that does not resolve, or safe mode turned off without an OS sandbox
                (then the earlier keys of `values` are applied).
        """
        try:
            self.parts.config.with_values(dict(values))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"invalid setting: {exc}".splitlines()[0]) from None
        rest = {k: v for k, v in values.items() if k.startswith(SETTINGS_APPLIED_LIVE)}
        unknown = [k for k in values if k not in rest and k not in _CONTROL_KEYS]
        if unknown:
            raise ConfigError(f"cannot change {', '.join(unknown)} during a session")
        if "model" in values:  # `config` stays the config the agent was built with
            self.switch_model(str(values["model"]))
        if "tools.approval" in values:
            self.set_approval_mode(values["tools.approval"])
        if "tools.safe" in values:
            self.set_safe_mode(bool(values["tools.safe"]))
        if rest:
            self._controls.parts = self.parts.with_settings(rest)
        self._controls.parts = user_controls.applied(self.parts, self.session, values)

    # -- safe mode and approval -------------------------------------------------------------------

    @property
    def safe_mode(self) -> bool:
        """Only safe (read-only) tools are offered and run."""
        return self._controls.safe_mode

    @property
    def safe_mode_forced(self) -> bool:
        """No OS sandbox works here, so safe mode cannot be turned off."""
        return self.parts.sandbox_missing

    def set_safe_mode(self, on: bool) -> None:
        """Offer and run only safe (read-only) tools from the next request on; calls of the
        current reply that are already running are not stopped.

        Raises:
            ConfigError: turning it off while no OS sandbox is available (forced safe mode).
        """
        if not on and self.parts.sandbox_missing:
            raise ConfigError(NO_SANDBOX_WARNING)
        self._controls.safe_mode = on

    @property
    def approval(self) -> ApprovalGate:
        """The approval gate (its `approver` may be attached or replaced by a host)."""
        return self.parts.tool_calls.approval

    @property
    def approval_mode(self) -> ApprovalMode:
        """The approval mode now: `read-only` while safe mode is on."""
        return "read-only" if self.safe_mode else self.approval.mode

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
        self.approval.mode = mode

    @property
    def plan_mode(self) -> bool:
        """Plan mode: only safe tools; each prompt asks for a plan; a run ending with an
        answer emits it as a `plan` event (the host approves it, then `set_plan_mode(False)`)."""
        return self._controls.plan_mode

    def set_plan_mode(self, on: bool) -> None:
        """Turn plan mode on or off from the next request on."""
        self._controls.plan_mode = on

    def share_budget(self, budget: Budget | None) -> None:
        """Count this agent's spending in `budget` (a subagent's: its caller's)."""
        self._controls.parts = self.parts.with_budget(budget)

    # -- during a run: one tool call, steering ----------------------------------------------------

    def cancel_tool(self, call_id: str) -> bool:
        """End one running tool call; its result becomes `TOOL_CANCELLED` (is_error) and the run
        goes on. Returns False when no call with that id is running."""
        return self.parts.tool_calls.cancel(call_id)

    def steer(self, text: str) -> None:
        """Queue a user message for the running loop: it is appended to the history right
        before the next request (after the current tool results), so the model sees it at the
        next turn boundary. Messages still queued when a run ends stay in `pending_steering`
        (the host sends them as the next prompt)."""
        if text.strip():
            self._controls.steering.append(text)

    @property
    def pending_steering(self) -> tuple[str, ...]:
        """Queued steering messages not yet appended, oldest first."""
        return tuple(self._controls.steering)

    def take_steering(self) -> tuple[str, ...]:
        """Remove and return the queued steering messages (a host sending them itself)."""
        out = tuple(self._controls.steering)
        self._controls.steering.clear()
        return out

    # -- runs -------------------------------------------------------------------------------------

    def close_interrupted(self) -> Turn | None:
        """Append `interrupted` is_error results for tool calls that have none (after a crash
        or cancel, before new user text). Returns the appended turn, if any.

        Raises:
            tether.errors.SessionError: the session file cannot be opened.
        """
        self.session.open()
        return close_interrupted(self.parts, self._state())

    async def run(
        self, prompt: str | Sequence[ContentBlock] | None = None, *, max_turns: int | None = None
    ) -> RunResult:
        """Run the loop until a reply has no tool calls or `max_turns` requests were made.

        Args:
            prompt: the new user message (text or content blocks); None to continue the
                history as it stands (e.g. after a resume).
            max_turns: requests at most in this run (default `run.max_turns`).

        Raises:
            RunError: the provider failed (kind from the error taxonomy).
            asyncio.CancelledError: the run was cancelled; the partial turn was persisted.
            tether.errors.SessionError: the session file cannot be opened (nothing ran).
        """
        self.session.open()
        parts = self.parts
        env = os.environ if parts.runtime.env is None else parts.runtime.env
        # one `invoke_agent` span per run; a subagent's run nests under its `task` call's span
        with parts.tracing.run(parts.provider, session_id=self.session.id, env=env) as span:
            await self.start()  # the MCP servers, once per event loop (none unless configured)
            return await run_turns(
                self._controls,
                self._state(),
                prompt,
                max_turns=self.max_turns if max_turns is None else max_turns,
                span=span,
            )

    def run_sync(
        self, prompt: str | Sequence[ContentBlock] | None = None, *, max_turns: int | None = None
    ) -> RunResult:
        """`run(prompt)` to completion from synchronous code (not inside a running loop); the
        MCP servers it started are stopped before it returns."""

        async def run_then_close() -> RunResult:
            try:
                return await self.run(prompt, max_turns=max_turns)
            finally:
                await self.aclose()

        return asyncio.run(run_then_close())

    async def compact_now(self, focus: str | None = None) -> bool:
        """Compact the history now (reason `manual`), keeping `focus` in the summary. Returns
        False when there was nothing to compact or compaction is off.

        Raises:
            RunError: `context_overflow` when the summary failed and nothing can be truncated.
        """
        parts = self.parts
        if parts.compaction is None:
            return False
        self.session.open()
        for views in parts.views:
            views.reset()
        result = await parts.compaction.compact(parts, self._state(), reason="manual", focus=focus)
        return result is not None

    # -- the MCP servers' and tools' lifecycle ----------------------------------------------------
    async def start(self) -> None:
        """Start the config's MCP servers (`mcp.servers`) in the running loop and add their
        tools; `run` does it when needed. A server that fails is skipped with a `warning`
        event (`mcp_server_failed`, `mcp_login_required`); nothing raises."""
        await self._mcp.start(self.parts.registry, self.parts.tool_context)

    async def aclose(self) -> None:
        """Stop the MCP servers (their tools leave the registry), the background shells and the
        agent's own language servers; idempotent (`async with agent:`, `run_sync`)."""
        await self._mcp.aclose(self.parts.registry)
        ctx = self.parts.tool_context
        for service in (ctx.shells, ctx.lsp if self._host.lsp is None else None):
            if service is not None:
                await service.aclose()

    async def __aenter__(self) -> Self:
        return await self.start() or self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_CONTROL_KEYS = ("model", "tools.approval", "tools.safe", "tools.add_dirs")
"""Settings `apply_settings` hands to the agent's controls rather than to the parts."""
