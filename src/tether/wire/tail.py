"""User-terminated tail: the view's last turn (the fifth and last wire pass).

Owns: making a view end the way the target model accepts.
Does not own: knowing which models accept assistant prefill (a per-model capability the caller
passes in as `supports_prefill`).

Rule (source: Anthropic "This model does not support assistant message prefill. The conversation
must end with a user message."): when the last non-system turn is an assistant turn and
the model does not support prefill, a synthetic user turn `Continue from where you stopped.`
(id `<last id>~continue`) is appended; the partial assistant text stays in history. With
prefill allowed, an assistant-final view is kept, unless that turn ends in a thinking or
redacted_thinking block (Anthropic: "The final block in an assistant message cannot be
`thinking`"; a prefill is the answer's start, and one that is only reasoning has none): it then
gets the same `Continue` turn. To Anthropic a kept prefill's last text block is
right-stripped ("final assistant content cannot end with trailing whitespace"), also when
system turns follow it (adapters lift those out of the messages). Runs after pairing repair,
so the last assistant turn never holds unanswered calls and carries only blocks the adapter
sends. A view with no user or assistant turn at all (an empty history, only system turns)
gets a neutral user turn `(no content)` (id `<last id>~user`, or `~user`): every target
rejects a request without messages. A no-op on an already user-terminated view.
"""

from __future__ import annotations

from tether.messages import RedactedThinkingBlock, Target, TextBlock, ThinkingBlock, Turn
from tether.wire._util import with_content
from tether.wire.pairing import CONTINUE_TEXT, PLACEHOLDER_TEXT

_THINKING: frozenset[type] = frozenset({ThinkingBlock, RedactedThinkingBlock})


def continue_turn(last: Turn) -> Turn:
    """The synthetic user directive appended after an assistant-final view."""
    return Turn(id=f"{last.id}~continue", role="user", content=(TextBlock(text=CONTINUE_TEXT),))


def empty_turn(turns: tuple[Turn, ...] | list[Turn]) -> Turn:
    """The neutral user turn that makes a view without any non-system turn a valid request."""
    tid = f"{turns[-1].id}~user" if turns else "~user"
    return Turn(id=tid, role="user", content=(TextBlock(text=PLACEHOLDER_TEXT),))


def _prefill_fix(turn: Turn) -> Turn:
    """Right-strip the last text block of an Anthropic prefill (kept when that would blank it).

    Runs on the blocks the adapter sends: the pairing pass has already removed every block an
    assistant turn cannot carry (images, documents, results), and the reasoning pass every
    thinking block Anthropic would not get."""
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
    n = len(turns)
    i = n - 1
    while i >= 0 and turns[i].role == "system":
        i -= 1
    if i < 0:
        return 0, (empty_turn(turns),)
    last = turns[i]
    if last.role != "assistant":
        return 0, ()
    if not supports_prefill or (last.content and type(last.content[-1]) in _THINKING):
        return 0, (continue_turn(last),)
    if target != "anthropic":
        return 0, ()
    fixed = _prefill_fix(last)
    if fixed is last:
        return 0, ()
    # System turns after it are lifted out of the messages: the assistant turn is still final.
    return n - i, (fixed, *turns[i + 1 :])


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
