"""Subagent usage as a turn policy: what the `task` calls' runs spent joins the run's `done`.

Owns: `ChildUsage`.
Does not own: the subagents (`tether.agent.subagents.Subagents`, whose `take_usage` it is
given; the agent adds this policy to its parts when it makes them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tether.agent.turn.policy import TurnPolicy
from tether.messages import ContentBlock, Usage

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["ChildUsage"]


class ChildUsage(TurnPolicy):
    """Collects the usage of the subagents' runs that ended during a run.

    Args:
        take_usage: the usage of the children that ended since the last call (None: none).
    """

    def __init__(self, take_usage: Callable[[], Usage | None]) -> None:
        self.take_usage = take_usage

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """Drop what children spent before this run."""
        self.take_usage()
        return content

    def after_run(self, parts: RunParts, state: RunState) -> None:
        """`state.children_usage`: what the children spent during this run."""
        state.children_usage = self.take_usage()
