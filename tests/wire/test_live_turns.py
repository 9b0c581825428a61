"""`live_sequence` and its incremental twin `LiveTurns` (issue 12: flat per-turn cost with
compaction on): the incremental form equals the whole-history pass on every input, and stays
incremental for the markers compaction writes (they list live turns only).

Note: `live(live(A) + B) == live(A + B)` does NOT hold in general, even when B's markers list
only live turns: a marker is placed at the *stored* index of its first replaced turn, and an
active marker's stored index is later than its slot in the live turns (kept user messages
between them would change order). `LiveTurns` therefore keys each live turn by its stored
index; what it relies on is tested here directly: the incremental result equals the whole pass.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction.rounds import next_generation
from tether.messages import CompactSummaryBlock, Role, TextBlock, Turn
from tether.wire.markers import LiveTurns, elide_markers, live_sequence
from tether.wire.view import ViewBuilder, build_view

from .strategies import targets, transcripts

SETTINGS = settings(max_examples=150, deadline=None)


def _marker(tid: str, replaced: list[str], generation: int = 1) -> Turn:
    block = CompactSummaryBlock(
        summary=f"sum {tid}", replaces_turn_ids=tuple(replaced), generation=generation
    )
    return Turn(id=tid, role="user", content=(block,))


@st.composite
def compacted(draw: st.DrawFn, max_turns: int = 40, wild: bool = False) -> tuple[Turn, ...]:
    """A history grown the way compaction grows it: plain turns, and now and then a marker
    listing a subset of the live turns (active markers included). With `wild`, some markers
    also list ids that are already elided, not stored yet, or their own."""
    turns: list[Turn] = []
    for k in range(draw(st.integers(0, max_turns))):
        tid = f"t{k}"
        if turns and draw(st.integers(0, 5)) == 0:
            live = [t.id for t in live_sequence(tuple(turns))]
            replaced = draw(st.lists(st.sampled_from(live), max_size=8, unique=True))
            if wild and draw(st.booleans()):
                pool = [t.id for t in turns] + [f"t{k + 1}", f"t{k + 3}", tid]
                replaced += draw(st.lists(st.sampled_from(pool), max_size=3))
            turns.append(_marker(tid, replaced, draw(st.integers(1, 6))))
        else:
            roles: list[Role] = ["user", "assistant"]
            role = draw(st.sampled_from(roles))
            turns.append(Turn(id=tid, role=role, content=(TextBlock(text=tid),)))
    return tuple(turns)


histories = st.one_of(transcripts(max_turns=24), compacted(), compacted(wild=True))


@SETTINGS
@given(histories)
def test_live_sequence_renders_to_the_wire_turns_and_is_idempotent(
    turns: tuple[Turn, ...],
) -> None:
    live = live_sequence(turns)
    tracker = LiveTurns()
    assert tracker.update(turns) == live
    if tracker.regular:
        assert elide_markers(live) == elide_markers(turns)
        assert live_sequence(live) == live


@settings(max_examples=80, deadline=None)
@given(histories, st.data())
def test_incremental_update_equals_the_whole_pass(
    turns: tuple[Turn, ...], data: st.DataObject
) -> None:
    live = LiveTurns()
    n = 0
    history: list[Turn] = []  # the caller's growing list, as the agent passes it
    while n < len(turns):
        step = data.draw(st.integers(1, 5))
        history.extend(turns[n : n + step])
        n = min(len(turns), n + step)
        if data.draw(st.integers(0, 9)) == 0:  # a rewind: drop some turns
            del history[data.draw(st.integers(0, len(history) - 1)) :]
            n = len(history)
        assert live.update(history) == live_sequence(tuple(history))
        assert live.next_generation == next_generation(tuple(history))  # elided ones too
    assert live.update(history) == live_sequence(tuple(history))


@SETTINGS
@given(compacted(max_turns=60))
def test_compaction_shaped_markers_never_force_a_full_build(turns: tuple[Turn, ...]) -> None:
    live = LiveTurns()
    for n in range(len(turns) + 1):
        assert live.update(turns[:n]) == live_sequence(turns[:n])
    assert live.full_builds == 0


@settings(max_examples=100, deadline=None)
@given(compacted(max_turns=60), targets)
def test_view_builder_over_a_growing_list_equals_build_view(
    turns: tuple[Turn, ...], target: str
) -> None:
    """The agent's case: one list appended to in place, `check_prefix=False`, markers
    arriving now and then; each view equals `build_view` of the whole history."""
    vb = ViewBuilder(target, check_prefix=False)  # type: ignore[arg-type]
    history: list[Turn] = []
    for t in turns:
        history.append(t)
        assert vb.view(history) == build_view(tuple(history), target)  # type: ignore[arg-type]


@SETTINGS
@given(compacted(max_turns=40), st.data())
def test_covered_range_from_the_live_turns_equals_the_whole_pass(
    turns: tuple[Turn, ...], data: st.DataObject
) -> None:
    """The ids a new marker's text names (first and last hidden turn) are the same whether
    found from the live turns (two early-exit scans) or from every marker's list."""
    from tether.compaction.summarize import _covered  # pyright: ignore[reportPrivateUsage]

    tracker = LiveTurns()
    live = tracker.update(turns)
    assert tracker.regular
    ids = [t.id for t in live]
    listed = data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    marker = _marker("new", listed)
    assert _covered(turns, live, marker) == _covered(turns, None, marker)
