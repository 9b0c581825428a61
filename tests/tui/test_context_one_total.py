"""`/context` shows one total (trial5: the headline said ~14,775 tokens and the rows, in the
same panel, 18,569 in all): the rows split the headline's figure by their estimates."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.tui.context_view import ContextRow, split_figure


def rows_of(tokens: list[int]) -> list[ContextRow]:
    return [
        ContextRow(kind="user", tokens=n, index=i, turn_id=f"t{i}", label="x")
        for i, n in enumerate(tokens)
    ]


@given(st.lists(st.integers(0, 50_000), min_size=1, max_size=40), st.integers(0, 400_000))
def test_the_rows_sum_to_the_figure_each_near_its_share(tokens: list[int], figure: int) -> None:
    rows = rows_of(tokens)
    split = split_figure(rows, figure)
    total = sum(tokens)
    if total == 0:
        assert split == tuple(rows)
        return
    assert sum(r.tokens for r in split) == figure
    for row, n in zip(split, tokens, strict=True):
        assert abs(row.tokens - n * figure / total) < 1
        assert (row.tokens == 0) or n > 0
        assert row.label == "x"


def test_the_resumed_sessions_case() -> None:
    split = split_figure(rows_of([8_000, 10_569]), 14_775)
    assert [r.tokens for r in split] == [6_365, 8_410]
