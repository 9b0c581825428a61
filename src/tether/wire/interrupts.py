"""Cancelled requests: how a run the user cancelled before any reply reaches the wire.

Owns: the stored shape of a cancel with no reply (`cancelled_reply`: an assistant turn with no
content and `stop_reason="interrupted"`, appended by the loop when a run is cancelled while the
history ends with a user turn, and when a new prompt comes after a request that got no reply
at all: `unanswered_prompt`, as a crash, a closed terminal or a failed request leave it), and
its rendering on the wire (`render_interrupt`, applied per turn right after marker elision,
before the reasoning pass).
Does not own: deciding when a run was cancelled (`tether.agent.turn.loop`), nor a partial reply
cut by a cancel (stored with its content; it reaches the wire as it is).

Rule: such a turn renders as ONE synthetic `user` text turn `INTERRUPTED_REQUEST_TEXT` (id = the
turn's id). The pairing pass then joins it with the user turn before it (the cancelled prompt)
and the one after it (the next prompt), so the model gets the cancelled prompt, the marker,
then the new prompt, in one user message: it knows the earlier request was stopped, and no two
user messages stand next to each other. Without the stored turn the two prompts would be merged
with nothing between them, and the model would act on the cancelled one again. Source: Claude
Code keeps a cancelled prompt followed by "[Request interrupted by user]".
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.messages import TextBlock, Turn
from tether.wire._util import map_turns
from tether.wire.markers import is_marker

INTERRUPTED_REQUEST_TEXT = "[The user interrupted this request before it was answered.]"
"""What the model reads after a prompt whose run the user cancelled before any reply."""

_MARKER: tuple[TextBlock, ...] = (TextBlock(text=INTERRUPTED_REQUEST_TEXT),)


CONTEXT_LEAD = (
    "The user ran this command in the sandbox themselves (they saw its output). It is context "
    "for their next message, not a request: do not act on it unless they ask."
)
"""How a user turn that is context for the next message, not a request, starts (a TUI `!cmd`'s
output, `tether.tui.bang`): nobody answers it, and that is no interruption."""


def unanswered_prompt(turns: Sequence[Turn]) -> bool:
    """True when the last turn (system turns aside) is a user's request that got no reply: a
    user turn that holds no tool results, is no marker and no `CONTEXT_LEAD` context. A new
    prompt after it means that request was cut off (a cancel, a crash, a closed terminal, a
    failed request): `cancelled_reply` goes between them, or the model reads both as one."""
    last = next((t for t in reversed(turns) if t.role != "system"), None)
    if last is None or last.role != "user" or last.tool_results or is_marker(last):
        return False
    first = last.content[0] if last.content else None
    return not (isinstance(first, TextBlock) and first.text.startswith(CONTEXT_LEAD))


def cancelled_reply(turn_id: str) -> Turn:
    """The turn to persist when a run is cancelled before any reply to the last user turn."""
    return Turn(id=turn_id, role="assistant", stop_reason="interrupted")


def is_cancelled_reply(turn: Turn) -> bool:
    """True for a stored `cancelled_reply` (an empty assistant turn stopped by an interrupt)."""
    return turn.role == "assistant" and not turn.content and turn.stop_reason == "interrupted"


def render_interrupt(turn: Turn) -> Turn:
    """`turn` as the wire carries it: a cancelled reply becomes the user text turn
    `INTERRUPTED_REQUEST_TEXT` (same id); any other turn is returned itself."""
    if not is_cancelled_reply(turn):
        return turn
    return Turn(id=turn.id, role="user", content=_MARKER)


def render_interrupts(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """Every turn through `render_interrupt`; `turns` itself when none is a cancelled reply.
    Pure and idempotent (its output holds no cancelled reply)."""
    return map_turns(turns, render_interrupt)
