"""User-terminated tail: the view's last turn (the fifth and last wire pass).

Owns: making a view end the way the target model accepts.
Does not own: knowing which models accept assistant prefill (a per-model capability the caller
passes in as `supports_prefill`).

Rule (source: Anthropic "This model does not support assistant message prefill. The conversation
must end with a user message.", case T12): when the last non-system turn is an assistant turn and
the model does not support prefill, a synthetic user turn `Continue from where you stopped.`
(id `<last id>~continue`) is appended; the partial assistant text stays in history. With
prefill allowed, an assistant-final view is kept; to Anthropic its last text block is then
right-stripped ("final assistant content cannot end with trailing whitespace"). Runs after
pairing repair, so the last assistant turn never holds unanswered calls. A no-op on an empty or already user-terminated view.
"""

from __future__ import annotations

from tether.messages import Target, TextBlock, Turn
from tether.wire._util import with_content
from tether.wire.pairing import CONTINUE_TEXT


def continue_turn(last: Turn) -> Turn:
    """The synthetic user directive appended after an assistant-final view."""
    return Turn(id=f"{last.id}~continue", role="user", content=(TextBlock(text=CONTINUE_TEXT),))


def last_non_system(turns: tuple[Turn, ...] | list[Turn]) -> Turn | None:
    """The last turn whose role is not `system`, or None."""
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].role != "system":
            return turns[i]
    return None


def _prefill_fix(turn: Turn) -> Turn:
    """Right-strip the last text block of an Anthropic prefill (kept when that would blank it)."""
    content = turn.content
    last = content[-1] if content else None
    if type(last) is not TextBlock:
        return turn
    text = last.text.rstrip()
    if text == last.text or not text:
        return turn
    return with_content(turn, (*content[:-1], TextBlock(text=text)))


def tail_turns(
    turns: tuple[Turn, ...] | list[Turn], *, supports_prefill: bool, target: Target | None
) -> tuple[int, tuple[Turn, ...]]:
    """How the tail pass changes `turns`: (number of trailing turns to drop, turns to append)."""
    last = last_non_system(turns)
    if last is None or last.role != "assistant":
        return 0, ()
    if not supports_prefill:
        return 0, (continue_turn(last),)
    if target != "anthropic" or turns[-1] is not last:
        return 0, ()
    fixed = _prefill_fix(last)
    if fixed is last:
        return 0, ()
    return 1, (fixed,)


def ensure_user_tail(
    turns: tuple[Turn, ...], *, supports_prefill: bool = False, target: Target | None = None
) -> tuple[Turn, ...]:
    """End the view with a user turn unless the model accepts assistant prefill.

    Args:
        turns: the repaired view.
        supports_prefill: the model accepts a view ending with an assistant turn.
        target: the request's wire API (Anthropic gets the trailing-whitespace rule).

    Returns:
        The input tuple itself when nothing changes, else a new tuple.
    """
    drop, extra = tail_turns(turns, supports_prefill=supports_prefill, target=target)
    if not drop and not extra:
        return turns
    return (*turns[: len(turns) - drop], *extra)
