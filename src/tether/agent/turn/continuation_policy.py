"""Continuations as a turn policy: "Please continue." after a reply cut by the output cap.

Owns: `ContinuationPolicy`.
Does not own: the rule (`tether.agent.turn.continuation.Continuations`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.turn.continuation import CONTINUE_PROMPT, Continuations
from tether.agent.turn.policy import TurnPolicy
from tether.messages import ContentBlock, Turn

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["ContinuationPolicy"]


class ContinuationPolicy(TurnPolicy):
    """The continuation rule (module docstring) as a turn policy: after a reply cut by
    `max_tokens`, the next message is `CONTINUE_PROMPT`.

    Args:
        max_continuations: "Please continue." requests allowed per answer (0 disables).
    """

    def __init__(self, max_continuations: int) -> None:
        self.max_continuations = max_continuations
        self._run = Continuations(max_continuations)

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """A run starts with a fresh count."""
        self._run = Continuations(self.max_continuations)
        return content

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """`CONTINUE_PROMPT` after a cut reply (within the allowance), else None.

        Raises:
            LengthResumeExhausted: replies cut with nothing in them, `MAX_EMPTY` in a row.
        """
        if self._run.after_turn(turn):
            return CONTINUE_PROMPT
        if not turn.tool_calls:  # a final answer: the run ends, or a stop hook starts anew
            self._run = Continuations(self.max_continuations)
        return None
