"""The cap on tool calls one run executes (`run.max_tool_calls`, `tether run --max-tool-calls N`).

Owns: `ToolCallLimit`, one run's count shaped as a turn policy (`on_prompt`, `before_tools`,
`after_run`): the calls of a reply are run while the count stays within the cap; the call that
would pass it, and the reply's calls after it, are not run (each gets an is_error result saying
why, so the session stays well-formed) and the run stops with stop reason `max_tool_calls`.
Does not own: running calls (`tether.agent.tool_calls`), the CLI's exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.agent.events import WarningEvent
from tether.messages import RunStopReason, ToolCallBlock, Turn, tool_result

if TYPE_CHECKING:
    from tether.agent.parts import AgentParts
    from tether.agent.state import RunState

__all__ = ["LIMIT_REACHED", "ToolCallLimit", "split_calls"]

LIMIT_REACHED = (
    "not run: this run's tool-call limit ({cap}, --max-tool-calls / run.max_tool_calls) was "
    "reached; the run stops here"
)
"""The is_error result of a call the cap kept from running."""


@dataclass(slots=True)
class ToolCallLimit:
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
    def for_run(cls, parts: AgentParts) -> ToolCallLimit | None:
        """The limit of a run of the main agent (`run.max_tool_calls`); a subagent's calls are
        neither capped nor counted (its `task` call is one call of its caller's)."""
        if parts.agent_path != ("main",):
            return None
        return cls.of(parts.config.run.max_tool_calls)

    @classmethod
    def of(cls, cap: int | None) -> ToolCallLimit | None:
        """The limit for `run.max_tool_calls` (None: no cap, no policy)."""
        return None if cap is None else cls(cap)

    def on_prompt(self) -> None:
        """A run starts: nothing counted."""
        self.used, self.reached = 0, False

    def before_tools(
        self, calls: Sequence[ToolCallBlock]
    ) -> tuple[tuple[ToolCallBlock, ...], tuple[ToolCallBlock, ...]]:
        """The reply's `calls` split into (those to run, those held back by the cap), in the
        model's order; the ones to run are counted."""
        room = max(self.cap - self.used, 0)
        run, held = tuple(calls[:room]), tuple(calls[room:])
        self.used += len(run)
        self.reached = bool(held)
        return run, held

    def stop(
        self, held: Sequence[ToolCallBlock], parts: AgentParts, state: RunState
    ) -> RunStopReason:
        """The run stops on the calls `held` back: each gets an is_error result
        (`LIMIT_REACHED`, one user turn: the session stays well-formed) and a `warning` event
        `max_tool_calls` says why; returns the stop reason."""
        text = LIMIT_REACHED.format(cap=self.cap)
        results = tuple(tool_result(c.id, text, is_error=True) for c in held)
        state.append(Turn(id=parts.new_id(), role="user", content=results))
        message = f"stopped before tool call {self.used + 1}: the run's cap is {self.cap}"
        parts.emit(WarningEvent(kind="max_tool_calls", message=message))
        return self.after_run("max_turns")

    def after_run(self, stop_reason: RunStopReason) -> RunStopReason:
        """The run's stop reason: `max_tool_calls` when a call was held back."""
        return "max_tool_calls" if self.reached else stop_reason


def split_calls(
    limit: ToolCallLimit | None, calls: Sequence[ToolCallBlock]
) -> tuple[tuple[ToolCallBlock, ...], tuple[ToolCallBlock, ...]]:
    """A reply's `calls` split into (those to run, those held back): all of them run without
    a cap (`ToolCallLimit.before_tools`)."""
    return (tuple(calls), ()) if limit is None else limit.before_tools(calls)
