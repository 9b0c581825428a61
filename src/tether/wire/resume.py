"""Resume helpers: how a stored session ended, and the results an interrupt owes.

Owns: `classify_tail`, `pending_tool_calls`, `interrupt_results` / `interrupted_results_turn`
(an interrupt during tool execution answers every pending call, in the same results
turn, before the next user text), `filter_unresolved_tool_uses`, and the retried-message rule
(`is_retried_message`, `drop_retried_user_turns`): a user message sent again because the request
after it failed (no reply in between) is the same message, and reaches the model once.
Does not own: persisting anything (the caller appends what these return), nor repairing old
broken histories on the wire (`tether.wire.pairing` does that on every request).

A call is *resolved* when a `tool_result` with its id stands in a `user` turn after it and
before the next assistant turn that holds calls (the same window the pairing pass searches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

from tether.messages import (
    CompactSummaryBlock,
    ContentBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire.pairing import has_calls

TailState = Literal["clean", "interrupted", "completed"]

INTERRUPTED_TEXT = (
    "Interrupted: the user stopped this tool call while it was running. It may have partially "
    "run; check its effects before relying on them."
)
"""The is_error result text for a call cut by an interrupt (not "rejected": it may have run)."""

_BROKEN_STOPS = frozenset({"interrupted", "error"})


def _resolved_ids(turns: Sequence[Turn], i: int) -> set[str]:
    """Ids answered by results in the window after the assistant turn at index i."""
    ids: set[str] = set()
    for k in range(i + 1, len(turns)):
        u = turns[k]
        if has_calls(u):
            break
        if u.role == "user":
            ids.update(b.tool_call_id for b in u.content if type(b) is ToolResultBlock)
    return ids


def _last_call_turn(turns: Sequence[Turn]) -> int:
    for i in range(len(turns) - 1, -1, -1):
        if has_calls(turns[i]):
            return i
    return -1


def pending_tool_calls(turns: Sequence[Turn]) -> tuple[ToolCallBlock, ...]:
    """The calls of the last assistant turn with calls that have no result yet, in call order."""
    i = _last_call_turn(turns)
    if i < 0:
        return ()
    done = _resolved_ids(turns, i)
    return tuple(c for c in turns[i].tool_calls if c.id not in done)


def classify_tail(turns: Sequence[Turn]) -> TailState:
    """How a stored session ended, for resume.

    System turns and compaction markers are skipped; "last turn" below means the last other one.

    Returns:
        `interrupted` when the session stopped in the middle of a step: the last assistant turn
            holding calls has a call without result (tools were running, or results were lost),
            or the last turn is an assistant turn whose `stop_reason` is `interrupted` or
            `error` (a partial reply). Resume must first answer the pending calls
            (`interrupt_results`) or let the view repair them.
        `completed` when the last turn is an assistant turn without calls that stopped normally
            (any other stop reason, e.g. `end_turn`, `max_tokens`, `refusal`): the run ended;
            resume waits for a new user message.
        `clean` otherwise: the history is empty, or the last turn is a user turn (a new message,
            or complete tool results): the next request can be sent as is to continue the run.
    """
    if pending_tool_calls(turns):
        return "interrupted"
    for i in range(len(turns) - 1, -1, -1):
        t = turns[i]
        if t.role == "system" or any(type(b) is CompactSummaryBlock for b in t.content):
            continue
        if t.role == "user":
            return "clean"
        return "interrupted" if t.stop_reason in _BROKEN_STOPS else "completed"
    return "clean"


def interrupted_results_turn(
    call_turn: Turn,
    completed: Sequence[ToolResultBlock],
    *,
    turn_id: str,
    reason: str = INTERRUPTED_TEXT,
    reasons: Mapping[str, str] | None = None,
) -> Turn:
    """The one results turn to persist when an interrupt cuts a tool batch.

    Args:
        call_turn: the assistant turn whose calls were running.
        completed: the results that finished before the interrupt (any order; for a call with
            several, the first wins; results for other calls are ignored).
        turn_id: the id of the new user turn.
        reason: the text of the is_error result given to every pending call.
        reasons: per call id, a text that replaces `reason` for that call (e.g. "started,
            may have had effects" versus "never ran").

    Returns:
        `Turn(user, [result for each call in call order])`: the completed result, or an is_error
        result with `reason` for a call still pending.
    """
    by_id: dict[str, ToolResultBlock] = {}
    for r in completed:
        by_id.setdefault(r.tool_call_id, r)
    blocks: list[ContentBlock] = []
    for c in call_turn.tool_calls:
        r = by_id.get(c.id)
        if r is None:
            text = reasons.get(c.id, reason) if reasons else reason
            r = ToolResultBlock(tool_call_id=c.id, content=(TextBlock(text=text),), is_error=True)
        blocks.append(r)
    return Turn(id=turn_id, role="user", content=tuple(blocks))


def interrupt_results(
    turns: tuple[Turn, ...],
    *,
    turn_id: str,
    reason: str = INTERRUPTED_TEXT,
    reasons: Mapping[str, str] | None = None,
) -> tuple[Turn, ...]:
    """Answer every pending call of the last tool batch with an "interrupted" is_error result.

    Args:
        turns: the session (or in-memory) turns.
        turn_id: id for a new results turn, when one must be appended.
        reason: the is_error result text.
        reasons: per call id, a text replacing `reason` for that call.

    Returns:
        The input tuple when no call is pending. Otherwise, when the last turn is a user turn
        holding only results for that batch (the partial results turn), the same sequence with
        that turn replaced by the complete one (same id, results in call order, pending ones
        interrupted); else the sequence with a new results turn appended. Only the last turn
        differs, so the caller persists exactly that turn, before any next user text.
    """
    i = _last_call_turn(turns)
    if i < 0:
        return turns
    pending = pending_tool_calls(turns)
    if not pending:
        return turns
    last = turns[-1]
    partial = (
        len(turns) - 1 > i
        and last.role == "user"
        and bool(last.content)
        and all(type(b) is ToolResultBlock for b in last.content)
        and {b.tool_call_id for b in last.content if type(b) is ToolResultBlock}
        <= {c.id for c in turns[i].tool_calls}
    )
    if partial:
        done = [b for b in last.content if type(b) is ToolResultBlock]
        full = interrupted_results_turn(
            turns[i], done, turn_id=last.id, reason=reason, reasons=reasons
        )
        return (*turns[:-1], replace(last, content=full.content))
    return (
        *turns,
        interrupted_results_turn(turns[i], (), turn_id=turn_id, reason=reason, reasons=reasons),
    )


def _user_text_message(turn: Turn) -> bool:
    return (
        turn.role == "user"
        and bool(turn.content)
        and not any(type(b) in (ToolResultBlock, CompactSummaryBlock) for b in turn.content)
    )


def is_retried_message(turns: Sequence[Turn], content: Sequence[ContentBlock]) -> bool:
    """True when a new user message with `content` repeats the last turn of `turns`: a user
    message (no tool_result, no marker) with equal content, with nothing after it (the request
    it started failed before a reply was stored). System turns after it are skipped."""
    for t in reversed(turns):
        if t.role == "system":
            continue
        return _user_text_message(t) and t.content == tuple(content)
    return False


def drop_retried_user_turns(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """Drop each user message that repeats the user message right before it (system turns
    between them are skipped; any other turn breaks the run): the copies a retry after a failed
    request appended. The first copy is kept.

    Returns:
        The input tuple when nothing is dropped, else a new tuple.
    """
    drop: set[int] = set()
    prev: Turn | None = None
    for i, t in enumerate(turns):
        if t.role == "system":
            continue
        if (
            prev is not None
            and _user_text_message(t)
            and _user_text_message(prev)
            and t.content == prev.content
        ):
            drop.add(i)
            continue
        prev = t
    if not drop:
        return turns
    return tuple(t for i, t in enumerate(turns) if i not in drop)


def filter_unresolved_tool_uses(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """Drop assistant turns whose every call is unresolved (none has a result).

    A turn with some calls answered is kept: the pairing pass gives its other calls an error
    result. Turns without calls are kept.

    Returns:
        The input tuple when nothing is dropped, else a new tuple.
    """
    calls_at = [i for i, t in enumerate(turns) if has_calls(t)]
    if not calls_at:
        return turns
    drop: set[int] = set()
    for i in calls_at:
        done = _resolved_ids(turns, i)
        if not any(c.id in done for c in turns[i].tool_calls):
            drop.add(i)
    if not drop:
        return turns
    return tuple(t for i, t in enumerate(turns) if i not in drop)
