"""`ViewBuilder(check_prefix=False)` reads only the new turns of a growing list: it never copies
the caller's history (issue 12: nothing per request may be O(history))."""

from __future__ import annotations

from collections.abc import Iterator

from tether.messages import ToolCallBlock, Turn, text_turn, tool_result
from tether.wire import ViewBuilder, build_view


class CountingList(list[Turn]):
    """A history list that counts full iterations (what `tuple(history)` does)."""

    iterations = 0

    def __iter__(self) -> Iterator[Turn]:
        self.iterations += 1
        return super().__iter__()


def test_growing_list_is_not_copied_and_view_matches_build_view() -> None:
    history = CountingList([text_turn("u0", "user", "go")])
    builder = ViewBuilder("anthropic", check_prefix=False)
    builder.view(history)
    first = history.iterations
    for k in range(1, 60):
        call = ToolCallBlock(id=f"c{k}", name="echo", arguments={"k": k})
        history.append(Turn(id=f"a{k}", role="assistant", content=(call,)))
        assert builder.view(history) == build_view(tuple(history), "anthropic")
        history.append(Turn(id=f"r{k}", role="user", content=(tool_result(f"c{k}", "ok"),)))
        before = history.iterations
        got = builder.view(history)
        assert history.iterations == before  # no pass over the whole history
        assert got == build_view(tuple(history), "anthropic")
    assert builder.full_builds == 1
    assert history.iterations - first == 2 * 59  # only the test's own build_view copies
