"""The cap on tool calls one run executes (`run.max_tool_calls`, `tether run --max-tool-calls N`).

Owns: `ToolCallLimit`, one run's count as a turn policy (`on_prompt`, `before_tools`): the calls of a reply are run while the count stays within the cap; the call that
would pass it, and the reply's calls after it, are not run (each gets an is_error result saying
why, so the session stays well-formed) and the run stops with stop reason `max_tool_calls`.
Does not own: running calls (`tether.agent.turn.tool_calls`), the CLI's exit code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.agent.events import WarningEvent
from tether.agent.turn.policy import HeldBack, TurnPolicy
from tether.messages import ContentBlock, ToolCallBlock

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["LIMIT_REACHED", "ToolCallLimit"]

LIMIT_REACHED = (
    "not run: this run's tool-call limit ({cap}, --max-tool-calls / run.max_tool_calls) was "
    "reached; the run stops here"
)
"""The is_error result of a call the cap kept from running."""


@dataclass(slots=True)
class ToolCallLimit(TurnPolicy):
    """One run's tool-call count against `cap`.

    Attributes:
        cap: tool calls the run may execute.
        used: calls let through so far in this run.
        reached: a call was held back: the run stops after this reply.
    """

    cap: int
    used: int = 0
    reached: bool = False

    @classmethod
    def of(cls, cap: int | None) -> ToolCallLimit | None:
        """The limit for `run.max_tool_calls` (None: no cap, no policy)."""
        return None if cap is None else cls(cap)

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """A run starts: nothing counted."""
        self.used, self.reached = 0, False
        return content

    def before_tools(
        self, calls: tuple[ToolCallBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[tuple[ToolCallBlock, ...], HeldBack | None]:
        """The calls that fit under the cap run (and are counted); the rest are held back:
        each answered `LIMIT_REACHED`, a `warning` event `max_tool_calls`, the run ends with
        stop reason `max_tool_calls`."""
        room = max(self.cap - self.used, 0)
        run = calls[:room]
        self.used += len(run)
        if len(run) == len(calls):
            return calls, None
        self.reached = True
        message = f"stopped before tool call {self.used + 1}: the run's cap is {self.cap}"
        parts.emit(WarningEvent(kind="max_tool_calls", message=message))
        return run, HeldBack(LIMIT_REACHED.format(cap=self.cap), "max_tool_calls")
