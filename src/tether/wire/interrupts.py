"""Cancelled requests: how a run the user cancelled reaches the wire.

Owns: the stored shape of a cancel (`cancelled_reply`: an assistant turn with no content and
`stop_reason="interrupted"`), appended by the loop when a run is cancelled while the history
ends with a user turn nobody answered, or with the partial reply the cancel cut
(`cut_reply`: streamed text stored with `stop_reason="interrupted"`, no tool calls), and when a
new prompt comes after a request that got no reply at all (`unanswered_prompt`, as a crash, a
closed terminal or a failed request leave it); and its rendering on the wire
(`render_interrupt`, applied per turn right after marker elision, before the reasoning pass).
Does not own: deciding when a run was cancelled (`tether.agent.turn.loop`), the partial reply
itself (stored with its content; it reaches the wire as it is).

Rule: such a turn renders as ONE synthetic `user` text turn `INTERRUPTED_REQUEST_TEXT` (id = the
turn's id). The pairing pass then joins it with the user turns around it: after a cancel before
any reply, the model gets the cancelled prompt, the marker, then the new prompt, in one user
message; after a cut reply, it gets its partial reply, then the marker and the new prompt. It
knows the earlier request was stopped (and where), and no two user messages stand next to each
other. Without the stored turn the model would act on the cancelled prompt again, or take its
cut-off reply for one it finished. Source: Claude Code keeps "[Request interrupted by user]"
after a cancelled prompt and after a cut reply alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.messages import TextBlock, Turn
from tether.wire._util import map_turns
from tether.wire.markers import is_marker

INTERRUPTED_REQUEST_TEXT = "[The user interrupted this request here.]"
"""What the model reads where the user cancelled a request: after the prompt (no reply), or
after the part of the reply that streamed before the cancel."""

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


def cut_reply(turns: Sequence[Turn]) -> bool:
    """True when the last turn (system turns aside) is a reply a cancel cut: an assistant turn
    stored with `stop_reason="interrupted"`, some content and no tool calls (a cut call gets an
    `interrupted` result, which says so already). A cancel then stores `cancelled_reply` after
    it, or the model would take the partial reply for a finished one."""
    last = next((t for t in reversed(turns) if t.role != "system"), None)
    return (
        last is not None
        and last.role == "assistant"
        and last.stop_reason == "interrupted"
        and bool(last.content)
        and not last.tool_calls
    )


def cancelled_reply(turn_id: str) -> Turn:
    """The turn to persist when a run is cancelled before any reply to the last user turn, or
    after a partial reply (`cut_reply`)."""
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
