"""Plan mode as a turn policy: the prompt asks for a plan, and a run that ends with an answer
emits it as a `plan` event. (Only safe tools are offered and run: the loop reads
`state.safe_mode`, which plan mode sets.)

Owns: `PlanMode` and `PLAN_MODE_REMINDER`.
Does not own: switching plan mode (`tether.agent.agent.Agent.set_plan_mode`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.events import PlanEvent
from tether.agent.turn.policy import TurnPolicy
from tether.messages import ContentBlock, TextBlock

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["PLAN_MODE_REMINDER", "PlanMode"]

PLAN_MODE_REMINDER = (
    "<system-reminder>Plan mode is on: the user wants a plan before any change. Only read-only "
    "tools are available: do not try to change files or run commands. Look at what you need, "
    "then reply with a concise, numbered plan (the files to change, the steps, how to check "
    "the result). The user will approve it or ask for changes.</system-reminder>"
)
"""Added to each prompt sent in plan mode (a text block after the user's)."""


class PlanMode(TurnPolicy):
    """Plan mode's part of a run (module docstring)."""

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """The prompt with `PLAN_MODE_REMINDER` after it, in plan mode."""
        if state.plan_mode and content:
            return (*content, TextBlock(text=PLAN_MODE_REMINDER))
        return content

    def after_run(self, parts: RunParts, state: RunState) -> None:
        """In plan mode, a run that ended with an answer emits it as the `plan` event."""
        answer = state.answer
        if state.plan_mode and state.stop_reason in ("end_turn", "stop_sequence") and answer.strip():
            parts.emit(PlanEvent(text=answer))
