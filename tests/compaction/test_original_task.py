"""The original task survives any number of compactions byte-identical; elision is monotone."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.compaction.rounds import CompactInvalidInputError, Scope, original_task
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.summarize import compact_with
from tether.messages import BLOCK_CODEC, TARGETS, Target, Turn, text_turn
from tether.wire import build_view
from tether.wire.markers import SUMMARY_HEADER, elided_ids, is_marker

from .helpers import TASK, round_turns


def _compactor(turns: Sequence[Turn], previous_summary: str | None, focus: str | None) -> str:
    return f"summary after {previous_summary!r}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.sampled_from(["full", "tail1", "tail3", "up_to"])),
        min_size=10,
        max_size=12,
    ),
    st.sampled_from(TARGETS),
)
def test_task_is_byte_identical_after_10_compactions(
    plan: list[tuple[int, str]], target: Target
) -> None:
    task = text_turn("task", "user", TASK)
    turns: list[Turn] = [task]
    prev_elided: frozenset[str] = frozenset()
    prev_visible: set[str] = {"task"}
    compactions = 0
    k = 0
    for grow, how in plan:
        for _ in range(grow):
            new = round_turns(k)
            turns += new
            prev_visible |= {t.id for t in new}
            k += 1
        result = None
        for _attempt in range(5):  # a scope with nothing to summarize yet: grow one more round
            live_ids = [t.id for t in turns if t.id not in prev_elided and not is_marker(t)]
            scope = {
                "full": Scope.full(),
                "tail1": Scope.tail(1),
                "tail3": Scope.tail(3),
                "up_to": Scope.up_to(live_ids[-1]),
            }[how]
            try:
                result = asyncio.run(
                    compact_with(_compactor, CompactionSnapshot.of(turns), scope, marker_id=f"m{compactions}")
                )
                break
            except CompactInvalidInputError:
                new = round_turns(k)
                turns += new
                prev_visible |= {t.id for t in new}
                k += 1
        assert result is not None, f"{how} found nothing to summarize after 5 more rounds"
        compactions += 1
        assert "task" not in result.replaced_ids
        turns.append(result.marker_turn)
        assert result.generation == compactions
        view = build_view(tuple(turns), target)
        # The task leads the first user message byte-identical (the wire's pairing pass merges
        # adjacent user turns, so the summary may follow it inside the same message).
        first = next(t for t in view if t.role == "user")
        assert first.id == "task"
        head = first.content[: len(task.content)]
        assert [BLOCK_CODEC.dump_json(b) for b in head] == [
            BLOCK_CODEC.dump_json(b) for b in task.content
        ]
        assert SUMMARY_HEADER not in "".join(getattr(b, "text", "") for b in head)
        assert original_task(turns) is task
        assert sum(1 for t in view if SUMMARY_HEADER in t.text) == 1  # one active summary
        # elision is monotone: hidden stays hidden; visible stored turns only shrink (+ new)
        elided = elided_ids(tuple(turns))
        assert prev_elided <= elided
        visible = {t.id for t in turns if not is_marker(t) and t.id not in elided}
        assert visible <= prev_visible
        assert visible == prev_visible - set(result.replaced_ids)  # exactly what it replaced
        prev_elided, prev_visible = elided, visible
    assert compactions == len(plan)  # every step compacted: at least 10 compactions
