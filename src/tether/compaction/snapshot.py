"""The history a compaction works on, as one value (pure).

Owns: `CompactionSnapshot`, the stored history together with what a caller keeps incrementally about it
(its live turns and the next marker generation), so the compaction passes (`select`,
`compact_conversation`, `compact_with`, `truncation_marker`) need not recompute them.
Does not own: how live turns are derived (`tether.wire.markers`), nor the slicing
(`tether.compaction.rounds`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tether.messages import Turn
from tether.wire.markers import LiveTurns


@dataclass(frozen=True, slots=True)
class CompactionSnapshot:
    """A stored history and two facts about it, computed once.

    Attributes:
        history: the stored turns, oldest first, markers included (never mutated).
        live: `live_turns(history)` (wire order after marker elision, active markers as their
            marker turns) when the history is regular (see `tether.wire.markers.LiveTurns`),
            so the passes may read the live turns in place of the whole history; None for a
            hand-made history that is not regular (the passes then read all of it).
        generation: the generation a new marker gets: 1 + the highest marker generation in
            `history` (elided markers included; 1 when there is none).

    Build with `CompactionSnapshot.of(turns)`, or `CompactionSnapshot.tracked(turns, tracker)` when the caller keeps
    a `LiveTurns` for a growing history (O(new turns) instead of O(history) per snapshot).
    """

    history: tuple[Turn, ...]
    live: tuple[Turn, ...] | None
    generation: int

    @classmethod
    def of(cls, turns: Sequence[Turn]) -> CompactionSnapshot:
        """The snapshot of `turns` (any sequence of stored turns; not mutated), computed in
        one pass over it."""
        return cls.tracked(turns, LiveTurns())

    @classmethod
    def tracked(cls, turns: Sequence[Turn], tracker: LiveTurns) -> CompactionSnapshot:
        """The snapshot of `turns`, updating `tracker` (the caller's `LiveTurns` for this
        growing history) with the turns it has not seen yet."""
        history = turns if isinstance(turns, tuple) else tuple(turns)
        live = tracker.update(history)
        return cls(history, live if tracker.regular else None, tracker.next_generation)
