"""The tool loop: request → stream → assemble → persist → run tools → persist results → repeat.

Owns: `run_turns`, one agent run as a function over the agent's parts
(`tether.agent.assembly.parts.AgentParts`, read afresh from `Controls` at every request
boundary, so a host may switch the model or safe mode during a run) and the run's plain data
(`tether.agent.turn.state.RunState`); `Controls`, what a host changes on a live agent; and
`close_interrupted`. The skeleton: the prompt (the `user_prompt` hooks may rewrite or refuse
it; the policies' `on_prompt`), then per request: the policies' `before_request` (the budget,
compaction or the runaway guard), queued steering joins, the request over the chain
(`parts.attempts`: retries and fallback), the reply persisted with colliding tool-call ids
re-minted BEFORE its tools run, the policies' `after_reply` (continuation of a cut reply, the
`stop` hooks: one more user message), the calls run (`parts.tool_calls`: parallel, timed,
gated) and their results persisted; at the end the policies' `after_run` (checkpoints, plan
mode, subagent usage) and `done`. Each feature is a policy (`tether.agent.turn.policy`), not
lines here. A cancel persists the partial turn and gives pending calls `interrupted` results,
so the session stays well-formed; a cancel before any reply to the last user turn stores
`tether.wire.interrupts.cancelled_reply`, which the wire renders as an interruption note.
Does not own: building the parts (`tether.agent.assembly`), the host-facing object
(`tether.agent.agent.Agent`), transport (providers), the wire passes (`tether.wire`), tool
bodies (`tether.tools`), file formats (`tether.session`).

Errors: provider faults arrive as `StreamError` values; the request runner retries them and
falls back along the chain, then raises `RunError(kind)` after an `error` event. Nothing from
a failed attempt is persisted or executed. Cancellation raises `asyncio.CancelledError` after
the partial turn is persisted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tether.agent.assembly.parts import AgentParts
from tether.agent.events import (
    AgentEvent,
    DoneEvent,
    EnvEvent,
    ErrorEvent,
    ServerToolEvent,
    SessionStartEvent,
    ToolCallEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
)
from tether.agent.sessions import AgentSession, interrupted_turn
from tether.agent.turn.continuation import thinking_budget_for_turn
from tether.agent.turn.hooks import HookRunner
from tether.agent.turn.state import RunResult, RunState, SentView
from tether.agent.turn.web_search import web_search_for
from tether.errors import LengthResumeExhausted, RunError
from tether.messages import (
    ContentBlock,
    RunStopReason,
    TextBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.providers.base import ModelRequest, Provider, ToolSpec
from tether.sandbox.policy import NO_SANDBOX_WARNING
from tether.tools.safe_mode import offered_specs
from tether.tracing import Span
from tether.wire import remint_tool_call_ids
from tether.wire.interrupts import (
    cancelled_reply,
    cut_reply,
    is_cancelled_reply,
    unanswered_prompt,
)
from tether.wire.resume import is_retried_message

__all__ = ["PROMPT_DENIED", "Controls", "close_interrupted", "run_turns"]


@dataclass(slots=True, kw_only=True)
class Controls:
    """What a host changes on a live agent (`tether.agent.agent.Agent`'s methods), read by the
    loop at each request boundary.

    Attributes:
        parts: the agent's parts now (replaced whole by a model switch or a settings change).
        session: the agent's session (history source, sink, started calls).
        safe_mode: offer and run only safe tools.
        steering: user messages queued for the next request, oldest first.
        resumed: the history was not empty when the agent was built.
        warned_no_sandbox: the `no_sandbox` warning (and the main agent's `env` sandbox
            event) was sent (once per agent).
        plan_mode: plan mode: only safe tools, the prompt tells the model to end with a plan,
            and a run that ends with an answer emits it as a `plan` event.
    """

    parts: AgentParts
    session: AgentSession
    safe_mode: bool
    steering: list[str] = field(default_factory=lambda: [])
    resumed: bool = False
    warned_no_sandbox: bool = False
    plan_mode: bool = False


def close_interrupted(parts: AgentParts, state: RunState) -> Turn | None:
    """Append `interrupted` is_error results for tool calls that have none (after a crash or
    cancel, before new user text; `tether.agent.sessions.interrupted_turn`). Returns the
    appended turn, if any."""
    added = interrupted_turn(state.history, state.session.started, parts.new_id)
    if added is not None:
        state.append(added)
    return added


async def run_turns(
    c: Controls,
    state: RunState,
    prompt: str | Sequence[ContentBlock] | None,
    *,
    max_turns: int,
    span: Span,
) -> RunResult:
    """One run: requests until a reply has no tool calls (and no policy sends a message after
    it) or `max_turns` requests were made; the parts' policies act around each turn.

    Raises:
        RunError: the provider chain failed (kind from the error taxonomy), or compaction
            could not make the context fit.
        asyncio.CancelledError: the run was cancelled; the partial turn was persisted.
    """
    parts = c.parts
    for views in parts.views:
        views.reset()
    close_interrupted(parts, state)
    state.plan_mode = c.plan_mode
    content: tuple[ContentBlock, ...] = ()
    if prompt is not None:
        prompt, refusal = await _user_prompt(parts.hooks, prompt)
        if refusal is not None:
            return _prompt_denied(parts.emit, c.session.id, refusal)
        content = (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
    content = parts.policies.on_prompt(content, parts, state)
    # A retry after a failed request repeats the message already stored: send it once.
    if content and not is_retried_message(state.history, content):
        if unanswered_prompt(state.history):  # a crash or a closed terminal left it
            state.append(cancelled_reply(parts.new_id()))
        state.append(Turn(id=parts.new_id(), role="user", content=content))
    _start(c, parts)
    n = 0
    try:
        for n in range(1, max_turns + 1):
            parts = c.parts  # a model switch or a settings change lands here
            state.plan_mode = c.plan_mode
            state.safe_mode = c.safe_mode or c.plan_mode
            if (stop := await parts.policies.before_request(parts, state)) is not None:
                state.stop_reason = stop
                break
            while c.steering:  # queued user messages join at the boundary
                state.append(text_turn(parts.new_id(), "user", c.steering.pop(0)))
            parts.emit(TurnStartEvent(turn=n))
            # per request: safe mode may switch, a compaction may add `recall` (cached)
            specs = offered_specs(parts.registry, state.safe_mode)
            turn = await _request(parts, state, specs, n, safe=state.safe_mode)
            state.reply(turn)
            parts.emit(
                TurnEndEvent(turn=n, turn_id=turn.id, stop_reason=turn.stop_reason, usage=turn.usage)
            )
            if (message := await parts.policies.after_reply(turn, parts, state)) is not None:
                state.append(text_turn(parts.new_id(), "user", message))
                continue
            if not turn.tool_calls:
                state.stop_reason = turn.stop_reason or "end_turn"
                break
            if (stop := await _tools(c, parts, state, turn)) is not None:
                state.stop_reason = stop
                break
    except RunError as exc:
        state.stop_reason = "error"
        if isinstance(exc, LengthResumeExhausted):
            parts.emit(ErrorEvent(kind=exc.kind, message=exc.message))
        raise
    except asyncio.CancelledError:
        state.stop_reason = "cancelled"
        _record_cancel(parts, state)
        raise
    except Exception:  # a configuration mistake or a bug: `done` must not say "max_turns"
        state.stop_reason = "error"
        raise
    finally:
        result = _end(c, parts, state, n)
        span.run_done(state.stop_reason, state.usage, n)
    return result


async def _tools(c: Controls, parts: AgentParts, state: RunState, turn: Turn) -> RunStopReason | None:
    """Run the reply's calls the policies let through (`before_tools`); the ones held back
    get an is_error result each, after the others', and their stop reason ends the run."""
    calls, held = parts.policies.before_tools(tuple(turn.tool_calls), parts, state)
    if calls:
        await parts.tool_calls.run(
            calls,
            parts,
            state,
            safe_mode=state.safe_mode,
            timeout_s=parts.run.tool_timeout_s,
            steered=lambda: bool(c.steering),  # waiting calls give way to the user
        )
    if held is None:
        return None
    rest = turn.tool_calls[len(calls) :]
    results = tuple(tool_result(call.id, held.text, is_error=True) for call in rest)
    state.append(Turn(id=parts.new_id(), role="user", content=results))
    return held.stop_reason


def _record_cancel(parts: AgentParts, state: RunState) -> None:
    """A run cancelled while the history ends with a user message nobody answered (not tool
    results: a cancelled call's result says so already), or with the partial reply the cancel
    cut, stores `cancelled_reply`: the wire view renders it as the interruption note, so the
    model never takes the cancelled prompt as part of the next one, nor its cut reply for a
    finished one (`tether.wire.interrupts`)."""
    if unanswered_prompt(state.history) or cut_reply(state.history):
        state.append(cancelled_reply(parts.new_id()))


def _start(c: Controls, parts: AgentParts) -> None:
    """The `session_start` event, then once per agent the sandbox's `env` event (the main
    agent's) and the `no_sandbox` warning."""
    parts.emit(
        SessionStartEvent(
            session_id=c.session.id,
            provider=parts.provider.name,
            model=parts.provider.model,
            cwd=str(parts.root),
            resumed=c.resumed,
        )
    )
    if not c.warned_no_sandbox:
        c.warned_no_sandbox = True
        if parts.agent_path == ("main",):  # the environment is the main agent's (`env`)
            box = parts.tool_context.sandbox
            name = "none" if box is None else box.kind
            parts.emit(EnvEvent(what="sandbox", name=name, state="ready"))
        if parts.sandbox_missing:
            parts.emit(WarningEvent(kind="no_sandbox", message=NO_SANDBOX_WARNING))


def _end(c: Controls, parts: AgentParts, state: RunState, n: int) -> RunResult:
    """The run's end: the policies' `after_run`, then the `done` event that closes every run's
    event stream (failed and cancelled ones included), and the result."""
    if state.stop_reason == "cancelled":  # report the partial turn the cancel persisted
        replies = [t for t in reversed(state.new_turns) if t.role == "assistant"]
        state.last = next(  # the cut reply, not the interruption note stored after it
            (t for t in replies if not is_cancelled_reply(t)), replies[0] if replies else state.last
        )
    parts.policies.after_run(parts, state)
    children = state.children_usage
    usage = state.usage if children is None else state.usage + children
    answer = state.answer
    parts.emit(
        DoneEvent(
            session_id=c.session.id,
            message=state.last,
            text=answer,
            usage=usage,
            stop_reason=state.stop_reason,
            turns=n,
            children_usage=children,
            structured=state.structured,
        )
    )
    return RunResult(
        message=state.last,
        usage=usage,
        stop_reason=state.stop_reason,
        turns=n,
        new_turns=tuple(state.new_turns),
        answer=answer,
        children_usage=children,
        structured=state.structured,
    )


async def _request(
    parts: AgentParts,
    state: RunState,
    specs: tuple[ToolSpec, ...],
    n: int,
    *,
    safe: bool = False,
    retried: bool = False,
) -> Turn:
    """The n-th request of the run over the chain; the reply persisted. Raises RunError when
    the chain is spent (a context_overflow is answered once by compacting and retrying, when
    compaction is on)."""
    compaction = parts.compaction
    sent: list[SentView] = []  # the view of the last request built: the one that answered

    def request_for(i: int, provider: Provider) -> ModelRequest:
        views = parts.views[i]
        built = views.view(state.history)
        shaped = parts.hooks.transform(parts.shape(built))
        if shaped is not built:  # a hook or the tail strategy changed it: repair it again
            shaped = views.repaired(shaped)
        sent.append(SentView(len(shaped), compaction.monitor.generation if compaction else 0))
        return ModelRequest(
            model=provider.model,
            messages=shaped,
            system=parts.run.system_for(provider),
            tools=specs,
            max_output_tokens=parts.run.max_output_tokens,
            temperature=parts.run.temperature,
            is_wire_view=True,
            thinking_budget_tokens=thinking_budget_for_turn(parts.run.thinking_decay, n),
            web_search=web_search_for(parts.config, provider, safe_mode=safe),
            effort=parts.run.effort,
            stream_idle_timeout_s=parts.run.stream_idle_timeout_s,
        )

    try:
        overflow_handled = compaction is not None and not retried
        _, assembler = await parts.attempts.request(
            parts.new_id(), request_for, quiet=("context_overflow",) if overflow_handled else ()
        )
    except RunError as exc:
        if exc.kind != "context_overflow" or compaction is None or retried:
            raise
        if await compaction.on_overflow(exc.message, parts, state):
            return await _request(parts, state, specs, n, safe=safe, retried=True)
        parts.emit(ErrorEvent(kind=exc.kind, message=exc.message))
        raise
    except asyncio.CancelledError:
        current = parts.attempts.current
        partial = current.turn(stop_reason="interrupted") if current is not None else None
        if partial is not None and partial.content:
            _persist_assistant(parts, state, partial)
            close_interrupted(parts, state)
        raise
    state.sent = sent[-1]
    return _persist_assistant(parts, state, assembler.turn())


def _persist_assistant(parts: AgentParts, state: RunState, turn: Turn) -> Turn:
    turn = remint_tool_call_ids(turn, state.used_call_ids)
    state.append(turn)
    for search in turn.server_tools:
        parts.emit(
            ServerToolEvent(
                id=search.id,
                name=search.name,
                query=search.query,
                results=search.results,
                error=search.error,
            )
        )
    for call in turn.tool_calls:
        parts.emit(
            ToolCallEvent(id=call.id, name=call.name, arguments=call.arguments, invalid=call.invalid)
        )
    return turn


# -- the run-level hook points: `user_prompt` and `stop` ------------------------------------

PROMPT_DENIED = "a user_prompt hook refused the prompt; nothing was sent"


async def _user_prompt(
    hooks: HookRunner, prompt: str | Sequence[ContentBlock]
) -> tuple[str | Sequence[ContentBlock], str | None]:
    """The prompt to store (possibly rewritten) and, when a hook refused it, the reason (the
    caller then sends nothing). A rewrite of a prompt made of blocks replaces its text blocks
    with one text block (images and documents are kept after it)."""
    if not hooks.active("user_prompt"):
        return prompt, None
    text = (
        prompt
        if isinstance(prompt, str)
        else "\n".join(b.text for b in prompt if isinstance(b, TextBlock))
    )
    decision = await hooks.run("user_prompt", prompt=text)
    if not decision.allow:
        reason = decision.reason.strip()
        return prompt, f"{PROMPT_DENIED}: {reason}" if reason else PROMPT_DENIED
    if decision.prompt is None:
        return prompt, None
    if isinstance(prompt, str):
        return decision.prompt, None
    rest = [b for b in prompt if not isinstance(b, TextBlock)]
    return [TextBlock(text=decision.prompt), *rest], None


def _prompt_denied(
    emit: Callable[[AgentEvent], None], session_id: str | None, reason: str
) -> RunResult:
    """The run a refused prompt makes: nothing stored or sent; a `warning` event
    `prompt_denied` with the reason, then `done` (stop reason `prompt_denied`)."""
    emit(WarningEvent(kind="prompt_denied", message=reason))
    emit(
        DoneEvent(
            session_id=session_id,
            message=None,
            text="",
            usage=Usage(),
            stop_reason="prompt_denied",
            turns=0,
        )
    )
    return RunResult(
        message=None, usage=Usage(), stop_reason="prompt_denied", turns=0, new_turns=()
    )
