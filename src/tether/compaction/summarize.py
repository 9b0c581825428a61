"""The summary call (an edge: it calls a provider) and the truncation fallback.

Owns: `compact_conversation` — slice by scope at whole rounds, budget the summary request to the
window, one bounded call per chunk (no tools, no thinking, temperature 0, wall-clock timeout,
the caller's cancel signal), context_overflow halving, the marker turn. Transient errors are
retried by the caller's request path (`call`: in an agent, the same attempts, Retry-After
waits and fallback chain as every turn, `tether.agent.turn.attempts.summary_call`), not here.
Does not own: deciding when to compact (`tether.compaction.monitor`), persisting the marker
(the caller appends it), the loop integration (`tether.agent.turn.compacting`).

Budget (the compaction request must not itself exceed the window): the summary request's
estimated input is kept ≤ window − summary output reserve − prompt overhead. Large tool results
are cut (persisted-output stubs kept), then the slice is summarized in chunks with a rolling
summary (each chunk's call gets the previous chunk's summary); beyond `max_chunks` chunks the
oldest rounds are dropped from the call (still replaced, still recallable, and the prompt says
how many were not shown).
"""

from __future__ import annotations

import asyncio
import inspect
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tether.compaction.pressure import estimate_tokens, text_tokens
from tether.compaction.prompt import (
    DEFAULT_RESULT_CHARS,
    SUMMARY_SYSTEM,
    build_prompt,
    cut_middle,
    make_marker,
    marker_text,
    render_transcript,
    truncation_text,
)
from tether.compaction.rounds import (
    DEFAULT_KEEP_USER_TOKENS,
    RoundSelection,
    Scope,
    chunk,
    drop_for_budget,
    halve_from_head,
    select,
)
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.tail import Compactor
from tether.errors import CompactionCancelledError, CompactionFailedError, RunError
from tether.messages import Turn, Usage, text_turn
from tether.providers.base import ModelRequest, Provider, StreamError, TextDelta, UsageEvent
from tether.tokens import ModelLimits
from tether.wire.markers import elide_markers, elided_ids, is_marker, marker_blocks

SummaryCall = Callable[[ModelRequest], Awaitable[tuple[str, Usage | None]]]
"""The request path of a summary call: a request in, the reply's text and usage out; raises
`RunError` when it failed for good (after whatever retries and fallback it does)."""

MAX_OVERFLOW_RETRIES = 3
"""context_overflow retries per chunk; each halves the chunk from its head (whole rounds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRequest:
    """What `compact_conversation` summarizes, and its bounds.

    Attributes:
        snapshot: the stored history (markers included, oldest first; not mutated), with its
            live turns and next generation (`CompactionSnapshot.of(turns)` computes them).
        scope: which rounds to replace (default `Scope.full()`).
        instructions: the user's focus (`/compact <focus>`), added as a Focus section.
        previous_summary: an earlier summary to fold in (default: that of the newest active
            marker inside the scope).
        timeout_s: wall-clock limit of one summary call (its retries included), in seconds.
        window_tokens: the summarizing model's context window, in tokens.
        summary_max_tokens: the summary's output cap, in tokens (reserved from the window).
        max_result_chars: tool results longer than this are cut for the call (characters).
        max_chunks: rolling-summary chunks at most; older rounds beyond them are dropped.
        marker_id: the marker turn's id (default `compact-<8 hex>`).
        keep_user_tokens: the user's later messages kept verbatim, newest first, within this
            many estimated tokens (`tether.compaction.rounds`); the rest are summarized.
    """

    snapshot: CompactionSnapshot
    scope: Scope = field(default_factory=Scope.full)
    instructions: str | None = None
    previous_summary: str | None = None
    timeout_s: float = 120.0
    window_tokens: int = 200_000
    summary_max_tokens: int = 4_096
    max_result_chars: int = DEFAULT_RESULT_CHARS
    max_chunks: int = 4
    marker_id: str | None = None
    keep_user_tokens: int = DEFAULT_KEEP_USER_TOKENS


def summary_cap(limits: ModelLimits) -> int:
    """The summary's default output cap for a model, in tokens: min(4096, a quarter of the
    window, the model's output cap), at least 64 (`SummaryRequest.summary_max_tokens`)."""
    return max(64, min(4096, limits.context_window // 4, limits.max_output_tokens))


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    """What a compaction produced (append `marker_turn` to the history to apply it).

    Attributes:
        marker_turn: the `compact_summary` marker turn (role user).
        replaced_ids: the ids it elides (never the original task's).
        tokens_before: estimated tokens of the live wire view before (ceil(chars/4)).
        tokens_after: estimated tokens of the live wire view with the marker applied.
        generation: the marker's generation.
        summary: the marker's summary text.
        calls: summary requests made (the request path's own retries not counted).
        dropped_turns: selected turns not shown to the summarizer (budget or overflow).
        truncated: True for a truncation marker (no summary).
        usage: the summary calls' token usage, summed (None when none reported any).
    """

    marker_turn: Turn
    replaced_ids: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    generation: int
    summary: str
    calls: int = 0
    dropped_turns: int = 0
    truncated: bool = False
    usage: Usage | None = None


class _CallError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def direct_call(provider: Provider) -> SummaryCall:
    """One attempt on `provider`, no retries (for callers without a request path of their own;
    an agent passes its own, see the module docstring)."""

    async def call(request: ModelRequest) -> tuple[str, Usage | None]:
        parts: list[str] = []
        usage: Usage | None = None
        async for ev in provider.stream(request):
            if isinstance(ev, TextDelta):
                parts.append(ev.text)
            elif isinstance(ev, UsageEvent):
                usage = ev.usage
            elif isinstance(ev, StreamError):
                raise RunError(ev.kind, ev.message)
        return "".join(parts), usage

    return call


async def _bounded(
    call: SummaryCall, request: ModelRequest, timeout_s: float, cancel: asyncio.Event | None
) -> tuple[str, Usage | None]:
    """One call under a wall-clock timeout and the cancel signal."""
    task = asyncio.ensure_future(call(request))
    waiters: set[asyncio.Future[object]] = {task}  # type: ignore[arg-type]
    stopper = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    if stopper is not None:
        waiters.add(stopper)  # type: ignore[arg-type]
    try:
        done, _ = await asyncio.wait(
            waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for w in waiters:
            if not w.done():
                w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
    if task in done and not task.cancelled():
        try:
            return task.result()
        except RunError as exc:
            raise _CallError(exc.kind, exc.message) from exc
    if stopper is not None and stopper in done:
        raise CompactionCancelledError("compaction cancelled")
    raise _CallError("network", f"the summary call timed out after {timeout_s:g} s")


def _covered(
    history: tuple[Turn, ...], live: tuple[Turn, ...] | None, marker: Turn
) -> tuple[str, str]:
    """The first and last stored turns (not markers, when there are any) hidden once `marker`
    is appended: what `recall` can read. With `live` (the regular history's live turns, see
    `LiveTurns.regular`) a stored turn is hidden exactly when it is not live or `marker` lists
    it, so both ends are found by a scan from each end that stops at the first hit (O(turns up
    to it), not O(history)); without, every marker's list is read."""
    if live is None:
        every = elided_ids((*history, marker))

        def gone(t: Turn) -> bool:
            return t.id in every
    else:
        live_ids = {t.id for t in live}
        listed = {x for b in marker_blocks(marker) for x in b.replaces_turn_ids}

        def gone(t: Turn) -> bool:
            return t.id not in live_ids or t.id in listed

    first = next((t.id for t in history if gone(t) and not is_marker(t)), None)
    if first is not None:
        last = next(t.id for t in reversed(history) if gone(t) and not is_marker(t))
        return first, last
    ids = [t.id for t in history if gone(t)] or [marker.id]
    return ids[0], ids[-1]


def _tokens(turns: tuple[Turn, ...]) -> int:
    return estimate_tokens(elide_markers(turns))


def _finish(
    snapshot: CompactionSnapshot,
    sel: RoundSelection,
    marker_id: str | None,
    text_for: Callable[[str, str], str],
    *,
    calls: int = 0,
    dropped_turns: int = 0,
    truncated: bool = False,
    usage: Usage | None = None,
) -> CompactionResult:
    """The marker replacing `sel.turns` and its result; `text_for(first_id, last_id)` writes
    the marker's text from the ids it covers (named so the model can `recall` them)."""
    history, live = snapshot.history, snapshot.live
    replaced = tuple(t.id for t in sel.turns)
    mid = marker_id or f"compact-{secrets.token_hex(4)}"
    first, last = _covered(history, live, make_marker(mid, "", replaced, sel.generation))
    text = text_for(first, last)
    marker = make_marker(mid, text, replaced, sel.generation)
    return CompactionResult(
        marker_turn=marker,
        replaced_ids=replaced,
        tokens_before=_tokens(history if live is None else live),
        tokens_after=_tokens((*(history if live is None else live), marker)),
        generation=sel.generation,
        summary=text,
        calls=calls,
        dropped_turns=dropped_turns,
        truncated=truncated,
        usage=usage,
    )


def truncation_marker(
    snapshot: CompactionSnapshot,
    scope: Scope,
    reason: str,
    *,
    marker_id: str | None = None,
    keep_user_tokens: int = DEFAULT_KEEP_USER_TOKENS,
) -> CompactionResult:
    """A marker that removes the scope's turns of `snapshot.history` WITHOUT a summary (the
    ladder's second rung): the model is told how many turns were removed and that `recall` can
    read them.

    Raises:
        CompactInvalidInputError: as `compact_conversation`.
    """
    sel = select(snapshot, scope, keep_user_tokens=keep_user_tokens)
    n = sum(1 for t in sel.turns if not is_marker(t))
    return _finish(
        snapshot,
        sel,
        marker_id,
        lambda first, last: truncation_text(n, first, last, reason, sel.folded_total),
        truncated=True,
    )


async def compact_conversation(
    provider: Provider,
    request: SummaryRequest,
    *,
    call: SummaryCall | None = None,
    cancel: asyncio.Event | None = None,
) -> CompactionResult:
    """Summarize part of a history into one marker turn.

    Args:
        provider: the model that writes the summary (its default model is used).
        request: the history, the scope and the call's bounds (see `SummaryRequest`).
        call: the request path (retries, Retry-After, fallback; an agent passes its own);
            None: `direct_call(provider)`, one attempt, no retries.
        cancel: the caller's cancel signal; when set, the call stops.

    Returns:
        The `CompactionResult`; the caller appends `marker_turn` to the history.

    Raises:
        CompactInvalidInputError: before any call: empty input, nothing to summarize, unknown
            anchor id, or a slice without text.
        CompactionFailedError: the call failed for good (or overflowed 3 times).
        CompactionCancelledError: `cancel` was set.
    """
    sel = select(request.snapshot, request.scope, keep_user_tokens=request.keep_user_tokens)
    instructions = request.instructions
    summary_max_tokens = request.summary_max_tokens
    previous_summary = request.previous_summary
    prev = previous_summary if previous_summary is not None else sel.previous_summary
    task_text = sel.task.text if sel.task is not None else None
    rounds = [r for r in sel.rounds if not (len(r) == 1 and is_marker(r[0]))]
    rendered = [render_transcript(r, max_result_chars=request.max_result_chars) for r in rounds]
    overhead = text_tokens(
        build_prompt("", previous_summary=prev, focus=instructions, task=task_text)
    )
    overhead += text_tokens(SUMMARY_SYSTEM) + 64 + summary_max_tokens  # + the rolling summary
    budget = max(request.window_tokens - summary_max_tokens - overhead, 128)
    # A single round larger than the budget is cut (head and tail kept) to fit on its own.
    rendered = [cut_middle(x, budget * 4 - 16) for x in rendered]
    sizes = [text_tokens(x) + 1 for x in rendered]
    dropped = drop_for_budget(sizes, budget * request.max_chunks)
    dropped_turns = sum(len(r) for r in rounds[:dropped])
    calls = 0
    usage: Usage | None = None
    summary = prev
    send = call or direct_call(provider)
    for a, b in chunk(sizes[dropped:], budget):
        lo, hi = a + dropped, b + dropped
        for attempt in range(MAX_OVERFLOW_RETRIES + 1):
            prompt = build_prompt(
                "\n\n".join(rendered[lo:hi]),
                previous_summary=summary,
                focus=instructions,
                task=task_text,
                dropped_turns=dropped_turns,
                folded_user=sel.folded_user,
            )
            model_request = ModelRequest(
                model=provider.model,
                messages=(text_turn("compaction-request", "user", prompt),),
                system=SUMMARY_SYSTEM,
                tools=(),
                max_output_tokens=summary_max_tokens,
                temperature=0.0,
            )
            try:
                calls += 1
                text, used = await _bounded(send, model_request, request.timeout_s, cancel)
                if used is not None:
                    usage = used if usage is None else usage + used
            except _CallError as exc:
                if (
                    exc.kind == "context_overflow"
                    and attempt < MAX_OVERFLOW_RETRIES
                    and hi - lo > 1
                ):
                    k = max(halve_from_head(sizes[lo:hi]), 1)
                    dropped_turns += sum(len(r) for r in rounds[lo : lo + k])
                    lo += k
                    continue
                raise CompactionFailedError(exc.kind, exc.message) from exc
            if not text.strip():
                raise CompactionFailedError("malformed", "the summary call returned no text")
            summary = text
            break
    assert summary is not None  # at least one chunk ran (the selection holds text)
    return _finish(
        request.snapshot,
        sel,
        request.marker_id,
        lambda first, last: marker_text(summary, first, last, sel.folded_total),
        calls=calls,
        dropped_turns=dropped_turns,
        usage=usage,
    )


async def compact_with(
    compactor: Compactor,
    snapshot: CompactionSnapshot,
    scope: Scope | None = None,
    instructions: str | None = None,
    *,
    marker_id: str | None = None,
    keep_user_tokens: int = DEFAULT_KEEP_USER_TOKENS,
) -> CompactionResult:
    """Like `compact_conversation`, but a user-supplied `Compactor` writes the summary of the
    scope's turns of `snapshot.history` (default scope `Scope.full()`).

    Raises:
        CompactInvalidInputError: as `compact_conversation`.
        CompactionFailedError: the compactor raised or returned no text.
    """
    sel = select(snapshot, scope or Scope.full(), keep_user_tokens=keep_user_tokens)
    try:
        out = compactor(sel.turns, sel.previous_summary, instructions)
        text = await out if inspect.isawaitable(out) else out
    except Exception as exc:  # a user function: any failure is a compaction failure
        raise CompactionFailedError("provider", f"the compactor raised {exc!r}") from exc
    if not text.strip():
        raise CompactionFailedError("malformed", "the compactor returned no text")
    return _finish(
        snapshot,
        sel,
        marker_id,
        lambda first, last: marker_text(text, first, last, sel.folded_total),
    )
