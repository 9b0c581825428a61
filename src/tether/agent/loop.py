"""The tool loop: request → stream → assemble → persist → run tools → persist results → repeat.

Owns: `run_turns`, one agent run as a function over the agent's parts
(`tether.agent.parts.AgentParts`, read afresh from `Controls` at every request boundary, so a
host may switch the model or safe mode during a run) and the run's plain data
(`tether.agent.state.RunState`); `Controls`, what a host changes on a live agent; and
`close_interrupted`. Each turn: compaction before the request (`parts.compaction`), queued
steering joins, the request over the chain (`parts.attempts`: retries and fallback), the reply
persisted with colliding tool-call ids re-minted BEFORE its tools run, continuation of a reply
cut by `max_tokens`, the `user_prompt` and `stop` hooks (a prompt rewritten or refused; a stop
allowed or turned into one more user message), the calls run (`parts.tool_calls`: parallel, timed,
gated) and their results persisted. A cancel persists the partial turn and gives pending
calls `interrupted` results, so the session stays well-formed.
Does not own: building the parts (`tether.agent.parts`), the host-facing object
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

from tether.agent.budget import before_request as budget_check
from tether.agent.budget import usage_minus
from tether.agent.events import (
    AgentEvent,
    DoneEvent,
    ErrorEvent,
    PlanEvent,
    ServerToolEvent,
    SessionStartEvent,
    ToolCallEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
)
from tether.agent.hooks import HookRunner
from tether.agent.limits import CONTINUE_PROMPT, Continuations, thinking_budget_for_turn
from tether.agent.output_schema import OutputSchemaPolicy  # issue 39: run.output_schema
from tether.agent.parts import AgentParts
from tether.agent.sessions import AgentSession, interrupted_turn
from tether.agent.state import RunResult, RunState, SentView
from tether.agent.subagents import Subagents
from tether.agent.tool_limit import ToolCallLimit, split_calls  # issue 39: max_tool_calls
from tether.agent.web_search import web_search_for
from tether.compaction.pressure import estimate_tokens
from tether.errors import LengthResumeExhausted, RunError
from tether.messages import ContentBlock, RunStopReason, TextBlock, Turn, Usage, text_turn
from tether.providers.base import ModelRequest, Provider, ToolSpec
from tether.sandbox.policy import NO_SANDBOX_WARNING
from tether.tools.safe_mode import offered_specs
from tether.tracing import Span
from tether.wire import remint_tool_call_ids
from tether.wire.resume import is_retried_message

__all__ = ["PROMPT_DENIED", "STOP_DENIED", "Controls", "close_interrupted", "run_turns"]


@dataclass(slots=True, kw_only=True)
class Controls:
    """What a host changes on a live agent (`tether.agent.agent.Agent`'s methods), read by the
    loop at each request boundary.

    Attributes:
        parts: the agent's parts now (replaced whole by a model switch or a settings change).
        session: the agent's session (history source, sink, started calls).
        subagents: the agent's children (their usage joins the run's `done`).
        safe_mode: offer and run only safe tools.
        steering: user messages queued for the next request, oldest first.
        resumed: the history was not empty when the agent was built.
        warned_no_sandbox: the `no_sandbox` warning was sent (once per agent).
        plan_mode: plan mode: only safe tools, the prompt tells the model to end with a plan,
            and a run that ends with an answer emits it as a `plan` event.
    """

    parts: AgentParts
    session: AgentSession
    subagents: Subagents
    safe_mode: bool
    steering: list[str] = field(default_factory=lambda: [])
    resumed: bool = False
    warned_no_sandbox: bool = False
    plan_mode: bool = False


PLAN_MODE_REMINDER = (
    "<system-reminder>Plan mode is on: the user wants a plan before any change. Only read-only "
    "tools are available: do not try to change files or run commands. Look at what you need, "
    "then reply with a concise, numbered plan (the files to change, the steps, how to check "
    "the result). The user will approve it or ask for changes.</system-reminder>"
)
"""Added to each prompt sent in plan mode (a text block after the user's)."""


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
    """One run: requests until a reply has no tool calls (and the `stop` hooks accept it) or
    `max_turns` requests were made.

    Raises:
        RunError: the provider chain failed (kind from the error taxonomy), or compaction
            could not make the context fit.
        asyncio.CancelledError: the run was cancelled; the partial turn was persisted.
    """
    parts = c.parts
    for views in parts.views:
        views.reset()
    continuations = Continuations(parts.run.max_continuations)
    schema = OutputSchemaPolicy.for_run(parts)  # issue 39: run.output_schema
    tool_limit = ToolCallLimit.for_run(parts)  # issue 39: run.max_tool_calls
    close_interrupted(parts, state)
    c.subagents.take_usage()
    if prompt is not None:
        prompt, refusal = await _user_prompt(parts.hooks, prompt)
        if refusal is not None:
            return _prompt_denied(parts.emit, c.session.id, refusal)
        content = (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
        if c.plan_mode:
            content = (*content, TextBlock(text=PLAN_MODE_REMINDER))
        # A retry after a failed request repeats the message already stored: send it once.
        if not is_retried_message(state.history, content):
            state.append(Turn(id=parts.new_id(), role="user", content=content))
    parts.emit(
        SessionStartEvent(
            session_id=c.session.id,
            provider=parts.provider.name,
            model=parts.provider.model,
            cwd=str(parts.root),
            resumed=c.resumed,
        )
    )
    if parts.sandbox_missing and not c.warned_no_sandbox:
        c.warned_no_sandbox = True
        parts.emit(WarningEvent(kind="no_sandbox", message=NO_SANDBOX_WARNING))
    last: Turn | None = None
    stop_reason: RunStopReason = "max_turns"
    n = 0
    if parts.budget is not None and parts.agent_path == ("main",):
        parts.budget.reset()  # a subagent's runs share their caller's spending
    try:
        for n in range(1, max_turns + 1):
            parts = c.parts  # a model switch or a settings change lands here
            spent = state.usage  # summaries made before or during this request are added in
            if parts.budget is not None and (stop := _over_budget(parts, state, last)):
                parts.emit(WarningEvent(kind="max_budget", message=stop))
                stop_reason = "max_budget"
                break
            context = parts.compaction or parts.guard  # the guard holds with compaction off
            if context is not None and (stop := await context.before_request(parts, state)):
                stop_reason = stop
                break
            while c.steering:  # queued user messages join at the boundary
                state.append(text_turn(parts.new_id(), "user", c.steering.pop(0)))
            parts.emit(TurnStartEvent(turn=n))
            # per request: safe mode may switch, a compaction may add `recall` (cached)
            safe = c.safe_mode or c.plan_mode
            specs = offered_specs(parts.registry, safe)
            turn = await _request(parts, state, specs, n, safe=safe)
            context = parts.compaction or parts.guard
            if context is not None and state.sent is not None:
                context.after_request(turn, state.sent)
            last = turn
            state.add_usage(turn.usage)
            if parts.budget is not None:  # the reply by its model; summaries by the chain's
                reply = turn.usage or Usage()
                model = turn.provenance.model if turn.provenance else parts.provider.model
                parts.budget.charge(reply, model)
                summaries = usage_minus(usage_minus(state.usage, spent), reply)
                parts.budget.charge(summaries, parts.provider.model)
            parts.emit(
                TurnEndEvent(turn=n, turn_id=turn.id, stop_reason=turn.stop_reason, usage=turn.usage)
            )
            if continuations.after_turn(turn):
                state.append(text_turn(parts.new_id(), "user", CONTINUE_PROMPT))
                continue
            if not turn.tool_calls:
                stop_reason = turn.stop_reason or "end_turn"
                again = await _stop(parts.hooks, continuations.answer)
                if again is not None:  # a stop hook sent the model back to work
                    state.append(text_turn(parts.new_id(), "user", again))
                    continuations = Continuations(parts.run.max_continuations)
                    stop_reason = "max_turns"
                    continue
                if schema is not None and (again := schema.after_reply(continuations.answer)):
                    state.append(text_turn(parts.new_id(), "user", again))  # issue 39: schema
                    continuations = Continuations(parts.run.max_continuations)
                    stop_reason = "max_turns"
                    continue
                stop_reason = schema.after_run(stop_reason) if schema else stop_reason
                break
            calls, held = split_calls(tool_limit, turn.tool_calls)  # issue 39: max_tool_calls
            if tool_limit and held and not calls:  # issue 39: max_tool_calls: none of them run
                stop_reason = tool_limit.stop(held, parts, state)
                break
            await parts.tool_calls.run(
                tuple(calls),  # issue 39: max_tool_calls (was: the reply's calls)
                parts,
                state,
                safe_mode=c.safe_mode or c.plan_mode,
                timeout_s=parts.run.tool_timeout_s,
                steered=lambda: bool(c.steering),  # waiting calls give way to the user
            )
            if tool_limit and held:  # issue 39: max_tool_calls: the rest of this reply does not run
                stop_reason = tool_limit.stop(held, parts, state)
                break
    except RunError as exc:
        stop_reason = "error"
        if isinstance(exc, LengthResumeExhausted):
            parts.emit(ErrorEvent(kind=exc.kind, message=exc.message))
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
        children = c.subagents.take_usage()  # the `task` calls' runs, added in
        usage = state.usage if children is None else state.usage + children
        if parts.checkpoints is not None:  # the tree this run left
            parts.checkpoints.after_run(c.session)
        if c.plan_mode and stop_reason in ("end_turn", "stop_sequence") and answer.strip():
            parts.emit(PlanEvent(text=answer))
        # `done` closes every run's event stream, failed and cancelled ones included.
        parts.emit(
            DoneEvent(
                session_id=c.session.id,
                message=last,
                text=answer,
                usage=usage,
                stop_reason=stop_reason,
                turns=n,
                children_usage=children,
                structured=schema.structured if schema else None,  # issue 39: output schema
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
        structured=schema.structured if schema else None,  # issue 39: output schema
    )


def _over_budget(parts: AgentParts, state: RunState, last: Turn | None) -> str | None:
    """The stop line when the next request's estimated cost would pass the budget."""
    assert parts.budget is not None
    prompt = estimate_tokens(parts.shape(parts.view(state.history)))
    return budget_check(
        parts.budget,
        parts.provider.model,
        prompt,
        None if last is None else last.usage,
        lambda text: parts.emit(WarningEvent(kind="budget_unpriced", message=text)),
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
STOP_DENIED = "A stop hook did not accept this as the final answer: {reason}"


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


async def _stop(hooks: HookRunner, answer: str) -> str | None:
    """None to let the run end on the final `answer` (its text), else the user message to
    send next (a `stop` hook denied, with its reason)."""
    if not hooks.active("stop"):
        return None
    decision = await hooks.run("stop", answer=answer)
    if decision.allow:
        return None
    return STOP_DENIED.format(reason=decision.reason.strip() or "(no reason given)")


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
