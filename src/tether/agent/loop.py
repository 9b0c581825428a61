"""The tool loop: request → stream → assemble → persist → run tools → persist results → repeat.

Owns: one agent run over a session's history: building each request from the incremental wire
view, assembling the streamed reply, re-minting colliding tool-call ids before anything runs,
persisting each assistant turn BEFORE its tools run, having the calls run
(`tether.agent.tool_calls`: parallel, timed, gated) and persisting the results turn, automatic
compaction before each request (`tether.agent.context`), and cancellation (the partial turn is
persisted, pending calls get `interrupted` results so the session stays well-formed).
Does not own: transport (providers), the wire passes (`tether.wire`), tool bodies
(`tether.tools`), file formats (`tether.session`), the host's controls between and during runs
(model switch, safe mode, approval mode, steering, manual compaction, MCP lifecycle:
`tether.agent.controls.AgentControls`, `Agent`'s base class).

Errors: provider faults arrive as `StreamError` values; `tether.agent.attempts` retries them and
falls back along the provider chain, then raises `RunError(kind)` after an `error` event.
Nothing from a failed attempt is persisted or executed. Run limits (`tether.agent.limits`): a
reply cut by `max_tokens` is resumed with "Please continue." (bounded), and the thinking budget
may decay per turn. Cancellation raises
`asyncio.CancelledError` after the partial turn is persisted.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tether.agent import build, hook_points
from tether.agent.approval import ApprovalGate, Approver
from tether.agent.attempts import Attempts, summary_call
from tether.agent.build import ModelLike
from tether.agent.context import AutoCompaction
from tether.agent.controls import AgentControls
from tether.agent.events import (
    AgentEvent,
    DoneEvent,
    ErrorEvent,
    SessionStartEvent,
    ToolCallEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
    WireRepairEvent,
)
from tether.agent.gate import CallGate
from tether.agent.hooks import HookRunner, Hooks
from tether.agent.limits import CONTINUE_PROMPT, Continuations, thinking_budget_for_turn
from tether.agent.runtime import Runtime, default_id_factory
from tether.agent.servers import McpServers
from tether.agent.state import RunResult, RunState, SummaryCall, TurnSink
from tether.agent.subagents import Subagents
from tether.agent.tool_calls import (
    INTERRUPTED,
    NEVER_RAN,
    STARTED_EVENT,
    STARTED_LOST,
    ToolCalls,
)
from tether.agent.tool_calls import TOOL_CANCELLED as TOOL_CANCELLED  # re-exported
from tether.errors import LengthResumeExhausted, RunError
from tether.messages import (
    ContentBlock,
    RunStopReason,
    TextBlock,
    ToolCallBlock,
    Turn,
    text_turn,
)
from tether.providers.base import ModelRequest, Provider, ToolSpec
from tether.settings import AgentConfig
from tether.tools.base import Tool, ToolContext
from tether.tools.env import redact_secrets, scrubbed_env, secret_values
from tether.tools.hygiene import Hygiene, HygieneConfig
from tether.tools.persist import OutputLimits
from tether.tools.policy import NO_SANDBOX_WARNING, offered_specs
from tether.tools.question import QuestionBridge
from tether.tools.registry import ToolRegistry
from tether.tools.sandbox import detect_sandbox
from tether.tracing import Span, tracing_for
from tether.wire import Repair, ViewBuilder, interrupt_results, remint_tool_call_ids
from tether.wire.resume import is_retried_message, pending_tool_calls

__all__ = ["TOOL_CANCELLED", "Agent", "RunResult", "TurnSink", "default_id_factory", "run_sync"]


class Agent(AgentControls):
    """One agent over one history: `Agent("anthropic/claude-sonnet-4-5")`.

    Everything configurable is in `config` (`tether.AgentConfig`, the settings-file shape);
    the arguments here are what a settings file cannot hold: the model objects, the tools, the
    session, the host's callbacks. `Agent.from_settings(cwd)` builds exactly the agent
    `tether run` builds in that folder (settings files, tool folders, credentials).

    Args:
        model: `"provider/model"` (`"local"`, `"openai/gpt-4o"`, a name from the config's
            `providers`), a provider object, or a list of them in fallback order (see
            `tether.providers.fallback` for which faults hand over); None takes the config's
            `model` selection (entries without a key are skipped, see `agent.notes`).
        config: the configuration (default `AgentConfig()`): turns, timeouts, retries, tool
            policy (sandbox, safe mode, network, deny paths, refused env names, output
            threshold capped at the model's window), thinking decay, compaction.
        tools: the tools offered (a registry or a sequence of `Tool`; `builtin_tools()` for
            tether's own).
        system: the system prompt (default `config.run.system`).
        root: the working folder; file tools are confined to it.
        session: where new turns are persisted (each write is flushed), or None.
        session_dir: the artifact folder for persisted tool outputs (default: the session's,
            when it has a `session_dir`).
        history: earlier turns (a resumed session); appended to in place as the run goes.
        on_event: called with every `AgentEvent`, synchronously.
        compaction: True: automatic compaction as `config.context` says (built from the
            model's window); False: none; or your own `AutoCompaction`.
        hygiene: dedup / stale-read rules (`tether.tools.hygiene`); None for the defaults.
        question_bridge: how the `question` tool reaches the user; None when headless.
        approver: the host's approval callback (`tether.agent.approval`): asked before the
            calls `config.tools.approval` does not let through; None: nothing is asked.
        runtime: the process-facing hooks (environment, sleep, jitter, ids; see
            `tether.agent.runtime.Runtime` and `tether.testing.deterministic`).
        hooks: library hooks (`tether.agent.hooks.Hooks`), run before the settings' shell
            hooks (`config.hooks`).
        agent_path: this agent's path: `("main",)`, or a subagent's (`tether.agent.subagents`
            builds those): in approval requests, hook inputs and forwarded events.

    Attributes:
        notes: one-line setup notes (a fallback entry skipped, an unknown context window).
        limits: the first model's context window and output cap (tokens).

    The model's `supports_prefill` attribute says whether it accepts an assistant-final
    request (else the wire view ends with a user turn; Anthropic rejects prefill on newer
    models: "This model does not support assistant message prefill", case T12).

    Raises:
        ConfigError: (AuthError included) a model that does not resolve, an invalid config.
        tether.tools.sandbox.SandboxUnavailableError: the config (or `TETHER_SANDBOX`) forces
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
        session: TurnSink | None = None,
        session_dir: Path | None = None,
        history: Sequence[Turn] = (),
        on_event: Callable[[AgentEvent], None] | None = None,
        compaction: AutoCompaction | bool = True,
        hygiene: HygieneConfig | None = None,
        question_bridge: QuestionBridge | None = None,
        approver: Approver | None = None,
        runtime: Runtime | None = None,
        hooks: Hooks | None = None,
        agent_path: Sequence[str] = ("main",),
    ) -> None:
        cfg = config if config is not None else AgentConfig()
        rt = runtime or Runtime()
        self.config = cfg
        self.runtime = rt
        self.hooks = hooks
        self.agent_path: tuple[str, ...] = tuple(agent_path)
        self.subagents = Subagents(self)
        self.notes: list[str] = []
        chain = build.resolve_models(model, cfg, note=self.notes.append)
        if isinstance(tools, ToolRegistry):
            self.registry = tools
        else:
            self.registry = ToolRegistry()
            for t in tools:
                self.registry.add(t)
        self.system = system if system is not None else cfg.run.system
        windows = build.configured_windows(cfg)
        self.limits = build.model_limits(
            chain[0], cfg.context.window, self.notes.append, configured=windows
        )
        for fallback in chain[1:]:  # their windows only matter where the server allocates one
            if hasattr(fallback, "use_context_window"):
                build.model_limits(
                    fallback, cfg.context.window, self.notes.append, configured=windows
                )
        if isinstance(compaction, AutoCompaction):
            self.compaction: AutoCompaction | None = compaction
        elif compaction:
            fixed = build.fixed_text(self.system, list(self.registry))
            self.compaction = build.context_manager(self.limits, cfg, fixed=fixed)
        else:
            self.compaction = None
        self.max_continuations = cfg.run.continuation_limit
        self.thinking_decay = build.thinking_decay(cfg)
        self.root = Path(root).resolve()
        self.history: list[Turn] = list(history)
        self._resumed = bool(self.history)
        self.session = session
        self.max_turns = cfg.run.max_turns
        self.tool_timeout_s = cfg.tools.timeout_s
        self.max_output_tokens = cfg.run.max_output_tokens
        self.temperature = cfg.run.temperature
        self.new_id = rt.new_id or default_id_factory()
        self._emit: Callable[[AgentEvent], None] = on_event or (lambda _e: None)
        refused = build.refused_env(cfg)
        allowed = tuple(cfg.tools.allow_env)
        env = os.environ if rt.env is None else rt.env
        self._env = env
        # tracing (issue 16): the runtime's, else as `cfg.tracing` says (no OTel import when off)
        self.tracing = rt.tracing or tracing_for(cfg.tracing, env, note=self.notes.append)
        kind = cfg.tools.sandbox
        sandbox_used = detect_sandbox(None if kind == "auto" else kind)
        self.safe_mode_forced = sandbox_used is None
        self.safe_mode = (
            cfg.tools.safe or self.safe_mode_forced or cfg.tools.approval == "read-only"
        )
        mode = cfg.tools.approval
        self._warned_no_sandbox = False
        if session_dir is None:
            found = getattr(session, "session_dir", None)
            session_dir = found if isinstance(found, Path) else None
        self.tool_context = ToolContext(
            root=self.root,
            env=scrubbed_env(env, refused, allowed),
            session_dir=session_dir,
            policy=build.path_policy(cfg, self.root),
            wrap=rt.wrap,
            questions=question_bridge,
            sandbox=sandbox_used,
            network=cfg.tools.network,
            limits=build.tool_limits(cfg),
            spawn=self.subagents.spawn,
        )
        self._hooks = HookRunner(
            library=hooks,
            settings=cfg.hooks,
            context=lambda: self.tool_context,
            emit=self.emit,
            agent_path=self.agent_path,
            session_id=lambda: self.session.id if self.session else None,
        )
        self._secrets = (
            *secret_values(env, refused, allowed),
            *build.provider_keys(chain, cfg, rt.env),
            *rt.secret_texts,
        )
        self._tool_calls = ToolCalls(
            hygiene=Hygiene(hygiene, root=str(self.root)),
            output_limits=OutputLimits(
                threshold_chars=build.output_threshold_chars(cfg, self.limits)
            ),
            gate=CallGate(
                ApprovalGate(
                    "ask" if mode == "read-only" else mode, approver, agent_path=self.agent_path
                ),
                self._hooks,
                spawn=cfg.agents.spawn,
            ),
            tracing=self.tracing,
        )
        self._used_call_ids: set[str] = {c.id for t in self.history for c in t.tool_calls}
        self._reported_repairs: set[tuple[str, str, str | None]] = set()
        self._retry = build.retry_policy(cfg, rt.env)
        self.chain: tuple[Provider, ...] = ()
        self._views: list[ViewBuilder] = []
        self._set_chain(chain)
        self.mcp = McpServers(cfg, self._emit)

    @classmethod
    def from_settings(
        cls,
        cwd: Path | str = ".",
        *,
        model: ModelLike | None = None,
        base_url: str | None = None,
        overrides: Mapping[str, Any] | None = None,
        system: str | None = None,
        session: TurnSink | None = None,
        session_dir: Path | None = None,
        history: Sequence[Turn] = (),
        on_event: Callable[[AgentEvent], None] | None = None,
        question_bridge: QuestionBridge | None = None,
        approver: Approver | None = None,
        runtime: Runtime | None = None,
        note: Callable[[str], None] | None = None,
    ) -> Agent:
        """The agent `tether run` builds in `cwd`: the user and project settings files
        (`tether.settings`; the project's files only once approved, `tether trust`: else a
        `warning` event `untrusted_project`), the built-in tools plus the tool folders, the credentials of
        the chain's providers (redacted from tool output), automatic compaction.

        Args:
            cwd: the project folder (settings, tool folders; the tools' working folder).
            model: pins the model (as `--model`; strict), else the settings' selection.
            base_url: the endpoint for the model(s) (as `--base-url`).
            overrides: dotted config fields to replace (`{"tools.safe": True}`; as flags do).
            note: receives setup notes as they happen (default: kept in `agent.notes`).
            Others: as `Agent`.

        Raises:
            ConfigError: (AuthError included) a settings file or model that is invalid.
        """
        notes: list[str] = []

        def say(line: str) -> None:
            notes.append(line)
            if note is not None:
                note(line)

        root, cfg, chain, tools, refused = build.from_settings_files(
            cwd, model=model, base_url=base_url, overrides=overrides, note=say
        )
        if refused is not None:  # an unapproved project: its files were not loaded
            say(f"warning: {refused}")
            if on_event is not None:
                on_event(WarningEvent(kind="untrusted_project", message=refused))
        agent = cls(
            chain,
            config=cfg,
            tools=tools,
            system=system,
            root=root,
            session=session,
            session_dir=session_dir,
            history=history,
            on_event=on_event,
            question_bridge=question_bridge,
            approver=approver,
            runtime=runtime,
        )
        for line in agent.notes:
            say(line)
        agent.notes = notes
        agent.mcp.note = say
        return agent

    def attach_session(self, session: TurnSink, session_dir: Path | None = None) -> None:
        """Persist every turn from now on to `session` (earlier turns are not written);
        `session_dir` is its artifact folder for persisted tool outputs (default: the
        session's `session_dir`, when it has one)."""
        if session_dir is None:
            found = getattr(session, "session_dir", None)
            session_dir = found if isinstance(found, Path) else None
        self.session = session
        self.tool_context = replace(self.tool_context, session_dir=session_dir)

    def emit(self, event: AgentEvent) -> None:
        """Send `event` to the host (`on_event`)."""
        self._emit(event)

    def _on_repair(self, repair: Repair) -> None:
        # The incremental view re-checks the open tail on every request; report each repair once.
        key = (repair.kind, repair.turn_id, repair.tool_call_id)
        if key not in self._reported_repairs:
            self._reported_repairs.add(key)
            self._emit(WireRepairEvent(kind=repair.kind, detail=repair.message))

    def current_view(self) -> tuple[Turn, ...]:
        """The wire view of the history as it stands, for the chain's first provider
        (incremental)."""
        return self._views[0].view(self.history)  # not copied: the builder reads only new turns

    def _shape(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """The view as sent: the compaction's wire-only `tail` strategy applied, if any."""
        return view if self.compaction is None else self.compaction.shape(view)

    def redact(self, text: str) -> str:
        """`text` with known secret values and secret-shaped strings masked (tool output)."""
        return redact_secrets(text, self._secrets)

    def _state(self) -> RunState:
        """A fresh run state over this agent's history, session and tools."""
        return RunState(
            history=self.history,
            session=self.session,
            used_call_ids=self._used_call_ids,
            emit=self._emit,
            new_id=self.new_id,
            view=self.current_view,
            registry=self.registry,
            tool_context=self.tool_context,
            redact=self.redact,
            provider=self.provider,
            summary_call=self._summary_call,
            call_started=self.call_started,
            tracing=self.tracing,
            before_compaction=self._hooks.before_compaction,
        )

    def _summary_call(self, summarizer: Provider | None) -> SummaryCall:
        """The request path for a summary: the agent's chain (or `summarizer` alone) under the
        agent's retry policy; no text/thinking deltas, no `error` event (the compaction ladder
        handles a failure)."""
        attempts = (
            self._attempts
            if summarizer is None
            else Attempts(
                (summarizer,),
                policy=self._retry,
                emit=self._emit,
                sleep=self.runtime.sleep,
                rng=self.runtime.rng,
                tracing=self.tracing,
            )
        )
        return summary_call(attempts)

    started_calls: set[str] | frozenset[str] | None = None
    """Ids of calls with a persisted `tool_call_started` record (None: unknown, e.g. a session
    written before such records existed); on resume, `close_interrupted` tells the model which
    pending calls started (they may have had effects) and which never ran.
    `tether.agent.sessions.open_session` sets it from the loaded session's events."""

    def call_started(self, call: ToolCallBlock) -> None:
        """Persist a small `tool_call_started` event before `call` runs (when the session
        takes events), so a resume after a crash can tell "started, may have had effects" from
        "never ran"."""
        if not isinstance(self.started_calls, set):  # one copy, then O(1) per call
            self.started_calls = set(self.started_calls or ())
        self.started_calls.add(call.id)
        append_event = getattr(self.session, "append_event", None)
        if callable(append_event):
            append_event(STARTED_EVENT, {"tool_call_id": call.id, "name": call.name})

    def close_interrupted(self) -> Turn | None:
        """Append `interrupted` is_error results for tool calls that have none (after a crash or
        cancel, before new user text; case T01). Returns the appended turn, if any.

        The store is append-only, so a partial results turn is never rewritten: the missing
        results go into a new user turn right after it (the wire view merges the two).
        """
        before = tuple(self.history)
        reasons: dict[str, str] | None = None
        if self.started_calls is not None:  # the session records starts: say which ran
            reasons = {
                c.id: STARTED_LOST if c.id in self.started_calls else NEVER_RAN
                for c in pending_tool_calls(before)
            }
        repaired = interrupt_results(
            before, turn_id=self.new_id(), reason=INTERRUPTED, reasons=reasons
        )
        if repaired is before:
            return None
        if len(repaired) > len(before):
            added = repaired[-1]
        else:
            had = {r.tool_call_id for r in before[-1].tool_results}
            missing = tuple(r for r in repaired[-1].tool_results if r.tool_call_id not in had)
            added = Turn(id=self.new_id(), role="user", content=missing)
        self._state().append(added)
        return added

    async def run(self, prompt: str | Sequence[ContentBlock] | None = None) -> RunResult:
        """Run the loop until a reply has no tool calls or `max_turns` requests were made.

        Args:
            prompt: the new user message (text or content blocks); None to continue the
                history as it stands (e.g. after a resume).

        Raises:
            RunError: the provider failed (kind from the error taxonomy).
            asyncio.CancelledError: the run was cancelled; the partial turn was persisted.
        """
        # tracing (issue 16): one `invoke_agent` span per run; a run inside another run's tool
        # call (a subagent) nests under that call's span
        session_id = self.session.id if self.session else None
        with self.tracing.run(self.provider, session_id=session_id, env=self._env) as span:
            return await self._run(prompt, span)

    async def _run(self, prompt: str | Sequence[ContentBlock] | None, span: Span) -> RunResult:
        for views in self._views:
            views.reset()
        continuations = Continuations(self.max_continuations)
        self.close_interrupted()
        await self.start()  # the MCP servers, once per event loop (none unless configured)
        state = self._state()
        self.subagents.take_usage()
        if prompt is not None:
            prompt, refusal = await hook_points.user_prompt(self._hooks, prompt)
            if refusal is not None:
                return hook_points.prompt_denied(self._emit, self.session, refusal)
            content: tuple[ContentBlock, ...] = (
                (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
            )
            # A retry after a failed request repeats the message already stored: send it once.
            if not is_retried_message(self.history, content):
                state.append(Turn(id=self.new_id(), role="user", content=content))
        self._emit(
            SessionStartEvent(
                session_id=self.session.id if self.session else None,
                provider=self.provider.name,
                model=self.provider.model,
                cwd=str(self.root),
                resumed=self._resumed,
            )
        )
        if self.safe_mode_forced and not self._warned_no_sandbox:
            self._warned_no_sandbox = True
            self._emit(WarningEvent(kind="no_sandbox", message=NO_SANDBOX_WARNING))
        last: Turn | None = None
        stop_reason: RunStopReason = "max_turns"
        n = 0
        try:
            for n in range(1, self.max_turns + 1):
                if self.compaction is not None and (
                    stop := await self.compaction.before_request(state)
                ):
                    stop_reason = stop
                    break
                self._take_steering(state)  # queued user messages join at the boundary
                self._emit(TurnStartEvent(turn=n))
                # per request: safe mode may switch, a compaction may add `recall` (cached)
                specs = offered_specs(self.registry, self.safe_mode)
                turn = await self._request(specs, state, n)
                if self.compaction is not None:
                    self.compaction.after_request(turn, state)
                last = turn
                state.add_usage(turn.usage)
                self._emit(
                    TurnEndEvent(
                        turn=n, turn_id=turn.id, stop_reason=turn.stop_reason, usage=turn.usage
                    )
                )
                calls = turn.tool_calls
                if continuations.after_turn(turn):
                    state.append(text_turn(self.new_id(), "user", CONTINUE_PROMPT))
                    continue
                if not calls:
                    stop_reason = turn.stop_reason or "end_turn"
                    again = await hook_points.stop(self._hooks, continuations.answer)
                    if again is not None:  # a stop hook sent the model back to work
                        state.append(text_turn(self.new_id(), "user", again))
                        continuations = Continuations(self.max_continuations)
                        stop_reason = "max_turns"
                        continue
                    break
                await self._tool_calls.run(
                    tuple(calls), state, safe_mode=self.safe_mode, timeout_s=self.tool_timeout_s
                )
        except RunError as exc:
            stop_reason = "error"
            if isinstance(exc, LengthResumeExhausted):
                self._emit(ErrorEvent(kind=exc.kind, message=exc.message))
            raise
        except asyncio.CancelledError:
            stop_reason = "cancelled"
            raise
        except Exception:  # a configuration mistake or a bug: `done` must not say "max_turns"
            stop_reason = "error"
            raise
        finally:
            if stop_reason == "cancelled":  # report the partial turn the cancel persisted
                last = next((t for t in reversed(state.new_turns) if t.role == "assistant"), last)
            answer = continuations.answer or (last.text if last else "")
            children = self.subagents.take_usage()  # the `task` calls' runs, added in
            usage = state.usage if children is None else state.usage + children
            # `done` closes every run's event stream, failed and cancelled ones included.
            self._emit(
                DoneEvent(
                    session_id=self.session.id if self.session else None,
                    message=last,
                    text=answer,
                    usage=usage,
                    stop_reason=stop_reason,
                    turns=n,
                    children_usage=children,
                )
            )
            span.run_done(stop_reason, state.usage, n)
        return RunResult(
            message=last,
            usage=usage,
            stop_reason=stop_reason,
            turns=n,
            new_turns=tuple(state.new_turns),
            answer=answer,
            children_usage=children,
        )

    async def _request(
        self, specs: tuple[ToolSpec, ...], state: RunState, n: int = 1, *, retried: bool = False
    ) -> Turn:
        """One request (the n-th of the run) over the provider chain: attempts, retries and
        fallback in `Attempts`; persist the reply. Raises RunError when the chain is spent (a
        context_overflow is answered once by compacting and retrying, when compaction is on)."""
        compaction = self.compaction

        def build(i: int, provider: Provider) -> ModelRequest:
            shaped = self._hooks.transform(self._shape(self._views[i].view(self.history)))
            state.sent_view_len = len(shaped)
            state.sent_generation = compaction.monitor.generation if compaction else 0
            return ModelRequest(
                model=provider.model,
                messages=shaped,
                system=self.system,
                tools=specs,
                max_output_tokens=self.max_output_tokens,
                temperature=self.temperature,
                is_wire_view=True,
                thinking_budget_tokens=thinking_budget_for_turn(self.thinking_decay, n),
            )

        try:
            overflow_handled = compaction is not None and not retried
            _, assembler = await self._attempts.request(
                self.new_id(), build, quiet=("context_overflow",) if overflow_handled else ()
            )
        except RunError as exc:
            if exc.kind != "context_overflow" or compaction is None or retried:
                raise
            if await compaction.on_overflow(exc.message, state):
                return await self._request(specs, state, n, retried=True)
            self._emit(ErrorEvent(kind=exc.kind, message=exc.message))
            raise
        except asyncio.CancelledError:
            current = self._attempts.current
            partial = current.turn(stop_reason="interrupted") if current is not None else None
            if partial is not None and partial.content:
                self._persist_assistant(partial, state)
                self.close_interrupted()
            raise
        return self._persist_assistant(assembler.turn(), state)

    def _persist_assistant(self, turn: Turn, state: RunState) -> Turn:
        turn = remint_tool_call_ids(turn, self._used_call_ids)
        state.append(turn)
        for c in turn.tool_calls:
            self._emit(
                ToolCallEvent(id=c.id, name=c.name, arguments=c.arguments, invalid=c.invalid)
            )
        return turn

    def run_sync(self, prompt: str | Sequence[ContentBlock] | None = None) -> RunResult:
        """`run(prompt)` to completion from synchronous code (not inside a running loop); the
        MCP servers it started are stopped before it returns."""

        async def run_then_close() -> RunResult:
            try:
                return await self.run(prompt)
            finally:
                await self.aclose()

        return asyncio.run(run_then_close())


def run_sync(agent: Agent, prompt: str | Sequence[ContentBlock] | None = None) -> RunResult:
    """Run `agent.run(prompt)` to completion from synchronous code."""
    return agent.run_sync(prompt)
