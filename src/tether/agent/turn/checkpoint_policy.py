"""Checkpoints as a turn policy: each user turn's snapshot is started as its request goes out,
and when a run ends, the tree it left is recorded.

Owns: `CheckpointPolicy`.
Does not own: the snapshots (`tether.agent.turn.checkpoints.Checkpoints`; the one before a user
message's first change is taken by the tool calls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.turn.checkpoints import Checkpoints
from tether.agent.turn.policy import TurnPolicy
from tether.messages import RunStopReason

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["CheckpointPolicy"]


class CheckpointPolicy(TurnPolicy):
    """Checkpoints' part of a run: before each request, start the user turn's snapshot if it
    has none (`Checkpoints.prepare`: it runs while the model answers); when the run ends
    (cancelled or failed runs included), record the tree it left (`Checkpoints.after_run`).

    Args:
        checkpoints: the agent's checkpoints.
    """

    def __init__(self, checkpoints: Checkpoints) -> None:
        self.checkpoints = checkpoints

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """Start the user turn's snapshot (nothing to wait for here)."""
        self.checkpoints.prepare(state.session, state.history)
        return None

    def after_run(self, parts: RunParts, state: RunState) -> None:
        """The tree this run left."""
        self.checkpoints.after_run(state.session)
