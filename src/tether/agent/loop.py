"""The tool loop: request → stream → assemble → persist → run tools → persist results → repeat.

Owns: one agent run over a session's history: building each request from the incremental wire
view, assembling the streamed reply, re-minting colliding tool-call ids before anything runs,
persisting each assistant turn BEFORE its tools run, having the calls run
(`tether.agent.tool_calls`: parallel, timed, gated) and persisting the results turn, automatic
compaction before each request (`tether.agent.context`), and cancellation (the partial turn is
persisted, pending calls get `interrupted` results so the session stays well-formed).
Does not own: transport (providers), the wire passes (`tether.wire`), tool bodies
(`tether.tools`), file formats (`tether.session`).

Errors: provider faults arrive as `ErrorEvent` values; `tether.agent.attempts` retries them and
falls back along the provider chain, then raises `RunError(kind)` after an `error` event.
Nothing from a failed attempt is persisted or executed. Run limits (`tether.agent.limits`): a
reply cut by `max_tokens` is resumed with "Please continue." (bounded), and the thinking budget
may decay per turn. Cancellation raises
`asyncio.CancelledError` after the partial turn is persisted.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tether.agent.attempts import Attempts, provider_chain
from tether.agent.context import ContextManager
from tether.agent.events import (
    AgentEvent,
    DoneEvent,
    ErrorOutEvent,
    SessionStartEvent,
    ToolCallEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
    WireRepairEvent,
)
from tether.agent.limits import (
    CONTINUE_PROMPT,
    Continuations,
    ThinkingDecay,
    thinking_budget_for_turn,
)
from tether.agent.tool_calls import (
    INTERRUPTED,
    NEVER_RAN,
    STARTED_EVENT,
    STARTED_LOST,
    ToolCalls,
)
from tether.agent.tool_calls import TOOL_CANCELLED as TOOL_CANCELLED  # re-exported
from tether.errors import ConfigError, LengthResumeExhausted, RunError
from tether.messages import (
    ContentBlock,
    Provenance,
    TextBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
)
from tether.providers.base import ModelRequest, Provider, ToolSpec
from tether.providers.retry import RetryPolicy
from tether.tools.base import Tool, ToolContext, Wrap
from tether.tools.env import DEFAULT_REFUSED, redact_secrets, scrubbed_env, secret_values
from tether.tools.hygiene import Hygiene, HygieneConfig
from tether.tools.limits import ResourceLimits
from tether.tools.paths import DEFAULT_POLICY, PathPolicy
from tether.tools.persist import DEFAULT_THRESHOLD_CHARS, OutputLimits
from tether.tools.policy import (
    NO_SANDBOX_WARNING,
    SandboxSetting,
    offered_specs,
    resolve_sandbox,
)
from tether.tools.question import QuestionBridge
from tether.tools.registry import ToolRegistry
from tether.wire import Repair, ViewBuilder, interrupt_results, remint_tool_call_ids
from tether.wire.resume import is_retried_message, pending_tool_calls


class TurnSink(Protocol):
    """Where turns are persisted (a `tether.session.SessionWriter` satisfies it)."""

    @property
    def id(self) -> str: ...

    def append(self, turn: Turn) -> None: ...


def default_id_factory() -> Callable[[], str]:
    """Turn ids `<8 hex>-<n>`: a random prefix per run, then a counter (unique, sortable)."""
    prefix = secrets.token_hex(4)
    counter = itertools.count(1)
    return lambda: f"{prefix}-{next(counter)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What a run produced.

    Attributes:
        message: the last assistant turn, or None if no request completed.
        usage: cumulative usage of this run (tokens).
        stop_reason: `end_turn`, `max_turns`, `max_tokens`, ...
        turns: requests made in this run.
        new_turns: every turn appended during this run, in order.
        answer: the final answer's text, continuation pieces concatenated (None: the last
            turn's text).
    """

    message: Turn | None
    usage: Usage
    stop_reason: str
    turns: int
    new_turns: tuple[Turn, ...]
    answer: str | None = None

    @property
    def text(self) -> str:
        """The final answer's text (every "Please continue." piece, concatenated)."""
        if self.answer is not None:
            return self.answer
        return self.message.text if self.message else ""


class Agent:
    """One agent over one history.

    Args:
        provider: the model endpoint, or a chain of them in fallback order.
        tools: the tools offered (a registry or a sequence of `Tool`).
        root: the working folder; file tools are confined to it.
        system: the system prompt.
        history: earlier turns (a resumed session); appended to in place as the run goes.
        session: where new turns are persisted (each write is flushed), or None.
        max_turns: cap on requests per `run` call.
        tool_timeout_s: default timeout of one tool call, in seconds.
        max_output_tokens: cap on generated tokens per request, or None.
        temperature: sampling temperature, or None for the provider default.
        supports_prefill: whether the model accepts an assistant-final request (else the wire
            view ends with a user turn); None reads the provider's `supports_prefill`
            attribute, False when it has none (Anthropic rejects prefill on newer models:
            "This model does not support assistant message prefill", case T12).
        id_factory: mints turn ids (injected for determinism in tests).
        on_event: called with every `AgentEvent`, synchronously.
        env: the base environment for tool subprocesses (API keys are always scrubbed);
            None for this process's environment.
        session_dir: the session's artifact folder, for tools that store files.
        policy: paths the file tools refuse (default: dotenv files, case T31); None for none.
        tool_output_threshold_chars: a tool result longer than this (characters, after
            normalization) is saved under `session_dir/tool-results/` and replaced by a
            `<persisted-output>` stub (cut to head + tail without a session); T25, T26.
        fallback: providers tried after `provider` when it fails for good (see
            `tether.providers.fallback` for which faults hand over).
        retry: retries per provider (default `RetryPolicy()`: 3 attempts, 2 s base, 30 s max).
        max_continuations: "Please continue." requests per answer after a `max_tokens` stop.
        thinking_decay: per-turn reasoning budget (`StepDecay` / `GeometricDecay`), or None.
        sleep: the async sleep between retries, in seconds (injected in tests).
        rng: the retry jitter source, floats in [0, 1).
        hygiene: dedup / stale-read rules (`tether.tools.hygiene`); None for the defaults.
        question_bridge: how the `question` tool reaches the user; None when headless.
        wrap: rewrites a tool worker's argv before it starts (the OS sandbox hook).
        sandbox: the OS sandbox for tool subprocesses: `"auto"` detects one (bwrap, else
            Landlock; `TETHER_SANDBOX` forces a kind), None means none. Without one, safe mode
            is forced (a `warning` event says so once) and cannot be turned off.
        safe_mode: offer and run only `safe` (read-only) tools; see `set_safe_mode`.
        network: whether sandboxed tool subprocesses may use the network.
        refused_env: variable names (exact or `*` globs) never passed to tool subprocesses
            (default `tether.tools.env.DEFAULT_REFUSED`; a settings list).
        compaction: automatic context management (`tether.agent.context`), or None for none.
        secret_texts: more values redacted from tool output (e.g. API keys tether read from
            the keyring or its credential file, which are not in any environment).
        allow_env: variable names (exact or `*` globs) let through to tool subprocesses even
            when `refused_env` matches them (settings `tools.allow_env`).
        tool_limits: process-count and file-size limits of tool subprocesses
            (`tether.tools.limits.ResourceLimits`); None: the defaults.

    Raises:
        tether.tools.sandbox.SandboxUnavailableError: `TETHER_SANDBOX` forces a sandbox kind
            that does not work on this machine.
    """

    def __init__(
        self,
        provider: Provider | Sequence[Provider],
        *,
        tools: ToolRegistry | Sequence[Tool] = (),
        root: Path | str = ".",
        system: str | None = None,
        history: Sequence[Turn] = (),
        session: TurnSink | None = None,
        max_turns: int = 50,
        tool_timeout_s: float = 120.0,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        supports_prefill: bool | None = None,
        id_factory: Callable[[], str] | None = None,
        on_event: Callable[[AgentEvent], None] | None = None,
        env: dict[str, str] | None = None,
        session_dir: Path | None = None,
        policy: PathPolicy | None = DEFAULT_POLICY,
        tool_output_threshold_chars: int = DEFAULT_THRESHOLD_CHARS,
        fallback: Sequence[Provider] = (),
        retry: RetryPolicy | None = None,
        max_continuations: int = 3,
        thinking_decay: ThinkingDecay | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
        hygiene: HygieneConfig | None = None,
        question_bridge: QuestionBridge | None = None,
        wrap: Wrap | None = None,
        sandbox: SandboxSetting = "auto",
        safe_mode: bool = False,
        network: bool = False,
        refused_env: Iterable[str] = DEFAULT_REFUSED,
        compaction: ContextManager | None = None,
        secret_texts: Iterable[str] = (),
        allow_env: Iterable[str] = (),
        tool_limits: ResourceLimits | None = None,
    ) -> None:
        self.compaction = compaction
        self.max_continuations = max_continuations
        self.thinking_decay = thinking_decay
        if isinstance(tools, ToolRegistry):
            self.registry = tools
        else:
            self.registry = ToolRegistry()
            for t in tools:
                self.registry.add(t)
        self.root = Path(root).resolve()
        self.system = system
        self.history: list[Turn] = list(history)
        self._resumed = bool(self.history)
        self.session = session
        self.max_turns = max_turns
        self.tool_timeout_s = tool_timeout_s
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.new_id = id_factory or default_id_factory()
        self._emit: Callable[[AgentEvent], None] = on_event or (lambda _e: None)
        refused = tuple(refused_env)
        allowed = tuple(allow_env)
        sandbox_used = resolve_sandbox(sandbox)
        self.safe_mode_forced = sandbox_used is None
        self.safe_mode = safe_mode or self.safe_mode_forced
        self._warned_no_sandbox = False
        self.context = ToolContext(
            root=self.root,
            env=scrubbed_env(os.environ if env is None else env, refused, allowed),
            session_dir=session_dir,
            policy=policy,
            wrap=wrap,
            questions=question_bridge,
            sandbox=sandbox_used,
            network=network,
            limits=tool_limits,
        )
        secrets_in_env = (
            *secret_values(os.environ if env is None else env, refused, allowed),
            *secret_texts,
        )
        self._secrets = secrets_in_env
        self._tool_calls = ToolCalls(
            self,
            redact=self.redact,
            hygiene=Hygiene(hygiene, root=str(self.root)),
            output_limits=OutputLimits(threshold_chars=tool_output_threshold_chars),
        )
        self._used_call_ids: set[str] = {c.id for t in self.history for c in t.tool_calls}
        self._reported_repairs: set[tuple[str, str, str | None]] = set()
        self._supports_prefill = supports_prefill
        self._retry = retry or RetryPolicy()
        self._sleep, self._rng = sleep, rng
        self.chain: tuple[Provider, ...] = ()
        self._views: list[ViewBuilder] = []
        self._set_chain(provider_chain(provider, fallback))

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
                supports_prefill=bool(getattr(p, "supports_prefill", False))
                if self._supports_prefill is None
                else self._supports_prefill,
                on_repair=self._on_repair,
                # Within a run only this loop appends to `history`; `run()` resets the builder in
                # case a caller edited it in between, so the O(history) prefix check is not needed.
                check_prefix=False,
            )
            for p in chain
        ]
        self._attempts = Attempts(
            chain, policy=self._retry, emit=self._emit, sleep=self._sleep, rng=self._rng
        )

    def set_safe_mode(self, on: bool) -> None:
        """Offer and run only safe (read-only) tools from the next request on; calls of the
        current reply that are already running are not stopped.

        Raises:
            ConfigError: turning it off while no OS sandbox is available (forced safe mode).
        """
        if not on and self.safe_mode_forced:
            raise ConfigError(NO_SANDBOX_WARNING)
        self.safe_mode = on

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

    def add_turn(self, turn: Turn, new_turns: list[Turn]) -> None:
        """Append and persist a turn made outside the loop (a compaction marker, ...)."""
        self._used_call_ids.update(c.id for c in turn.tool_calls)
        self._append(turn, new_turns)

    def redact(self, text: str) -> str:
        """`text` with known secret values and secret-shaped strings masked (tool output)."""
        return redact_secrets(text, self._secrets)

    def emit(self, event: AgentEvent) -> None:
        """Send an event to the host."""
        self._emit(event)

    def _append(self, turn: Turn, new_turns: list[Turn]) -> None:
        self.history.append(turn)
        new_turns.append(turn)
        if self.session is not None:
            self.session.append(turn)

    started_calls: frozenset[str] | None = None
    """Ids of calls with a persisted `tool_call_started` record (None: unknown, e.g. a session
    written before such records existed); on resume, `close_interrupted` tells the model which
    pending calls started (they may have had effects) and which never ran. `tether run
    --resume` sets it from the loaded session's events (`started_call_ids`)."""

    def call_started(self, call: ToolCallBlock) -> None:
        """Persist a small `tool_call_started` event before `call` runs (when the session
        takes events), so a resume after a crash can tell "started, may have had effects" from
        "never ran"."""
        self.started_calls = (self.started_calls or frozenset()) | {call.id}
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
        self._append(added, [])
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
        new_turns: list[Turn] = []
        for views in self._views:
            views.reset()
        continuations = Continuations(self.max_continuations)
        self.close_interrupted()
        if prompt is not None:
            content: tuple[ContentBlock, ...] = (
                (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
            )
            # A retry after a failed request repeats the message already stored: send it once.
            if not is_retried_message(self.history, content):
                self._append(Turn(id=self.new_id(), role="user", content=content), new_turns)
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
        usage = Usage()
        last: Turn | None = None
        stop_reason = "max_turns"
        n = 0
        try:
            for n in range(1, self.max_turns + 1):
                if self.compaction is not None and (
                    stop := await self.compaction.before_request(self, new_turns)
                ):
                    stop_reason = stop
                    break
                self._emit(TurnStartEvent(turn=n))
                # per request: safe mode may switch, a compaction may add `recall` (cached)
                specs = offered_specs(self.registry, self.safe_mode)
                turn = await self._request(specs, new_turns, n)
                if self.compaction is not None:
                    self.compaction.after_request(turn)
                last = turn
                if turn.usage is not None:
                    usage = usage + turn.usage
                self._emit(
                    TurnEndEvent(
                        turn=n, turn_id=turn.id, stop_reason=turn.stop_reason, usage=turn.usage
                    )
                )
                calls = turn.tool_calls
                if continuations.after_turn(turn):
                    self._append(text_turn(self.new_id(), "user", CONTINUE_PROMPT), new_turns)
                    continue
                if not calls:
                    stop_reason = turn.stop_reason or "end_turn"
                    break
                await self._run_tools(calls, new_turns)
        except RunError as exc:
            stop_reason = "error"
            if isinstance(exc, LengthResumeExhausted):
                self._emit(ErrorOutEvent(kind=exc.kind, message=exc.message))
            raise
        except asyncio.CancelledError:
            stop_reason = "cancelled"
            raise
        except Exception:  # a configuration mistake or a bug: `done` must not say "max_turns"
            stop_reason = "error"
            raise
        finally:
            if stop_reason == "cancelled":  # report the partial turn the cancel persisted
                last = next((t for t in reversed(new_turns) if t.role == "assistant"), last)
            answer = continuations.answer or (last.text if last else "")
            # `done` closes every run's event stream, failed and cancelled ones included.
            self._emit(
                DoneEvent(
                    session_id=self.session.id if self.session else None,
                    message=last,
                    text=answer,
                    usage=usage,
                    stop_reason=stop_reason,
                    turns=n,
                )
            )
        return RunResult(
            message=last,
            usage=usage,
            stop_reason=stop_reason,
            turns=n,
            new_turns=tuple(new_turns),
            answer=answer,
        )

    async def _request(
        self,
        specs: tuple[ToolSpec, ...],
        new_turns: list[Turn],
        n: int = 1,
        *,
        retried: bool = False,
    ) -> Turn:
        """One request (the n-th of the run) over the provider chain: attempts, retries and
        fallback in `Attempts`; persist the reply. Raises RunError when the chain is spent (a
        context_overflow is answered once by compacting and retrying, when compaction is on)."""

        def build(i: int, provider: Provider) -> ModelRequest:
            return ModelRequest(
                model=provider.model,
                messages=self._shape(self._views[i].view(self.history)),
                system=self.system,
                tools=specs,
                max_output_tokens=self.max_output_tokens,
                temperature=self.temperature,
                is_wire_view=True,
                thinking_budget_tokens=thinking_budget_for_turn(self.thinking_decay, n),
            )

        try:
            overflow_handled = self.compaction is not None and not retried
            _, assembler = await self._attempts.request(
                self.new_id(), build, quiet=("context_overflow",) if overflow_handled else ()
            )
        except RunError as exc:
            if exc.kind != "context_overflow" or self.compaction is None or retried:
                raise
            if await self.compaction.on_overflow(self, exc.message, new_turns):
                return await self._request(specs, new_turns, n, retried=True)
            self._emit(ErrorOutEvent(kind=exc.kind, message=exc.message))
            raise
        except asyncio.CancelledError:
            current = self._attempts.current
            partial = current.turn(stop_reason="interrupted") if current is not None else None
            if partial is not None and partial.content:
                self._persist_assistant(partial, new_turns)
                self.close_interrupted()
            raise
        return self._persist_assistant(assembler.turn(), new_turns)

    def _persist_assistant(self, turn: Turn, new_turns: list[Turn]) -> Turn:
        turn = remint_tool_call_ids(turn, self._used_call_ids)
        self._used_call_ids.update(c.id for c in turn.tool_calls)
        self._append(turn, new_turns)
        for c in turn.tool_calls:
            self._emit(
                ToolCallEvent(id=c.id, name=c.name, arguments=c.arguments, invalid=c.invalid)
            )
        return turn

    def cancel_tool(self, call_id: str) -> bool:
        """End one running tool call; its result becomes `TOOL_CANCELLED` (is_error) and the run
        goes on. Returns False when no call with that id is running."""
        return self._tool_calls.cancel(call_id)

    async def _run_tools(self, calls: Iterable[ToolCallBlock], new_turns: list[Turn]) -> None:
        """Run the calls (see `ToolCalls.run`); persist the results turn (also when cancelled)."""

        def persist(content: tuple[ContentBlock, ...]) -> None:
            self._append(Turn(id=self.new_id(), role="user", content=content), new_turns)

        await self._tool_calls.run(tuple(calls), persist)


def run_sync(agent: Agent, prompt: str | None = None) -> RunResult:
    """Run `agent.run(prompt)` to completion from synchronous code."""
    return asyncio.run(agent.run(prompt))
