"""`ViewBuilder.view` of a history that grew by a tool turn (an assistant turn with calls, then
its results) runs the pairing pass over the new segment only: the segment before it is closed
(a turn with calls starts the next one), so running it again would give the same output
(issue 38: one segment less per tool turn; the view still equals `build_view`)."""

from __future__ import annotations

from typing import Any

import pytest

from tether.messages import TextBlock, ToolCallBlock, Turn, text_turn, tool_result
from tether.wire import ViewBuilder, build_view
from tether.wire.pairing import Pairing


@pytest.fixture
def segments(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts `Pairing._segment` calls (one entry per call)."""
    seen: list[int] = []
    real = Pairing._segment  # pyright: ignore[reportPrivateUsage]

    def counting(self: Pairing, turns: Any, i: int, j: int) -> None:
        seen.append(i)
        real(self, turns, i, j)

    monkeypatch.setattr(Pairing, "_segment", counting)
    return seen


def _call(k: int) -> Turn:
    call = ToolCallBlock(id=f"c{k}", name="echo", arguments={"k": k})
    return Turn(id=f"a{k}", role="assistant", content=(call,))


def test_a_tool_turn_runs_one_segment(segments: list[int]) -> None:
    history: list[Turn] = [text_turn("u0", "user", "go")]
    builder = ViewBuilder("anthropic", check_prefix=False)
    builder.view(history)
    for k in range(1, 40):
        history += [_call(k), Turn(id=f"r{k}", role="user", content=(tool_result(f"c{k}", "ok"),))]
        before = len(segments)
        got = builder.view(history)
        assert len(segments) - before == 1  # the new segment only (two before this change)
        assert got == build_view(tuple(history), "anthropic")
    assert builder.full_builds == 1


def test_turns_that_join_the_last_segment_run_it_again(segments: list[int]) -> None:
    """A user message after the results (no calls) belongs to the last segment: it runs again
    and the view still equals a full build, also when its results come late or repeated."""
    history: list[Turn] = [text_turn("u0", "user", "go"), _call(1)]
    builder = ViewBuilder("anthropic", check_prefix=False)
    assert builder.view(history) == build_view(tuple(history), "anthropic")
    history.append(Turn(id="r1", role="user", content=(TextBlock(text="hm"),)))
    before = len(segments)
    got = builder.view(history)
    assert len(segments) - before == 1  # the open segment, run again with its new turn
    assert got == build_view(tuple(history), "anthropic")
    history.append(Turn(id="r1b", role="user", content=(tool_result("c1", "late"),)))
    history.append(_call(2))
    assert builder.view(history) == build_view(tuple(history), "anthropic")
    history.append(Turn(id="r2", role="user", content=(tool_result("c2", "ok"),)))
    history.append(_call(3))
    history.append(Turn(id="r3", role="user", content=(tool_result("c2", "again"),)))
    assert builder.view(history) == build_view(tuple(history), "anthropic")
