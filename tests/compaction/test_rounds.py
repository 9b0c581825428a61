"""Rounds, scopes and budgets: pure slicing rules (Hypothesis)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.compaction.rounds import (
    CompactInvalidInputError,
    Scope,
    chunk,
    drop_for_budget,
    halve_from_head,
    is_results_turn,
    live_turns,
    original_task,
    select,
    split_rounds,
)
from tether.compaction.snapshot import CompactionSnapshot
from tether.messages import Turn, text_turn

from .helpers import TASK, histories, history


def _check_rounds(turns: tuple[Turn, ...]) -> None:
    rounds = split_rounds(turns)
    assert tuple(t for r in rounds for t in r) == turns  # covers exactly, in order
    for r in rounds:
        assert all(is_results_turn(t) for t in r[1:])
    for prev, nxt in itertools.pairwise(rounds):
        assert not is_results_turn(nxt[0])  # a results turn never starts a round after a call
        assert prev


@given(histories())
def test_rounds_never_split_a_call_from_its_results(turns: tuple[Turn, ...]) -> None:
    _check_rounds(turns)


@given(histories(), st.sampled_from(["full", "tail", "from", "up_to"]), st.data())
def test_selection_covers_exactly_the_selected_rounds(
    turns: tuple[Turn, ...], kind: str, data: st.DataObject
) -> None:
    live = live_turns(turns)
    after_task = live[live.index(original_task(turns)) + 1 :]  # type: ignore[arg-type]
    ids = [t.id for t in after_task]
    if kind == "full":
        scope = Scope.full()
    elif kind == "tail":
        scope = Scope.tail(data.draw(st.integers(0, 6)))
    elif not ids:
        return
    else:
        anchor = data.draw(st.sampled_from(ids))
        scope = Scope.from_(anchor) if kind == "from" else Scope.up_to(anchor)
    try:
        sel = select(CompactionSnapshot.of(turns), scope)
    except CompactInvalidInputError:
        return
    assert sel.task is not None and sel.task.text == TASK
    assert sel.task not in sel.turns
    # user messages inside the range are kept verbatim, out of the replaced turns
    assert not {t.id for t in sel.kept_user} & {t.id for t in sel.turns}
    pos = {t.id: i for i, t in enumerate(after_task)}
    chosen = tuple(sorted(sel.turns + sel.kept_user, key=lambda t: pos[t.id]))
    flat = chosen + sel.kept
    assert flat == after_task[len(after_task) - len(flat) :]
    if kind != "from":
        assert flat == after_task
    # whole rounds: the selected range and the kept part are each unions of rounds
    def ids_of(rs: tuple[tuple[Turn, ...], ...]) -> set[tuple[str, ...]]:
        return {tuple(t.id for t in r) for r in rs}

    assert ids_of(split_rounds(chosen)) <= ids_of(split_rounds(after_task))
    assert sel.turns == tuple(t for r in sel.rounds for t in r)
    if sel.kept:
        assert not is_results_turn(sel.kept[0])
    if kind == "tail":
        assert len(sel.kept) >= min(scope.keep_turns, len(after_task)) or not sel.kept
    if kind in ("from", "up_to"):
        assert scope.turn_id in {t.id for t in chosen}


def test_tail_keeps_at_least_n_turns_at_round_boundaries() -> None:
    turns = history(5)
    sel = select(CompactionSnapshot.of(turns), Scope.tail(3))
    assert [t.id for t in sel.kept] == ["a3", "u3", "a4", "u4"]
    assert [t.id for t in sel.turns] == ["a0", "u0", "a1", "u1", "a2", "u2"]


def test_anchor_inside_a_round_takes_the_whole_round() -> None:
    snap = CompactionSnapshot.of(history(3))
    assert [t.id for t in select(snap, Scope.up_to("a1")).turns] == ["a0", "u0", "a1", "u1"]
    assert [t.id for t in select(snap, Scope.from_("u1")).turns] == ["a1", "u1", "a2", "u2"]


@pytest.mark.parametrize(
    ("turns", "scope", "says"),
    [
        ((), Scope.full(), "empty"),
        ((text_turn("task", "user", "do it"),), Scope.full(), "nothing to summarize"),
        (history(2), Scope.tail(10), "nothing to summarize"),
        (history(2), Scope.from_("nope"), "unknown anchor"),
        (history(2), Scope.up_to("task"), "unknown anchor"),
        (
            (text_turn("task", "user", "do it"), text_turn("r", "assistant", "  ")),
            Scope.full(),
            "no text",
        ),
    ],
)
def test_invalid_input_is_refused(turns: tuple[Turn, ...], scope: Scope, says: str) -> None:
    with pytest.raises(CompactInvalidInputError, match=says):
        select(CompactionSnapshot.of(turns), scope)


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 200))
def test_chunks_cover_every_index_once_within_budget(sizes: list[int], budget: int) -> None:
    spans = chunk(sizes, budget)
    covered = [i for a, b in spans for i in range(a, b)]
    assert covered == list(range(len(sizes)))
    for a, b in spans:
        assert b - a == 1 or sum(sizes[a:b]) <= budget


@given(st.lists(st.integers(0, 50), min_size=1, max_size=30), st.integers(0, 500))
def test_drop_for_budget_is_minimal_and_keeps_the_last(sizes: list[int], budget: int) -> None:
    k = drop_for_budget(sizes, budget)
    assert k < len(sizes)
    assert sum(sizes[k:]) <= budget or k == len(sizes) - 1
    assert k == 0 or sum(sizes[k - 1 :]) > budget
    h = halve_from_head(sizes)
    assert sum(sizes[h:]) <= sum(sizes) // 2 or h == len(sizes) - 1
