"""The tail strategy (byte-stable), the recall tool (verbatim, paged) and file restoring."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.compaction.recall import recall_text, recall_tool
from tether.compaction.restore import recent_read_paths, restore_pair
from tether.compaction.tail import TailPolicy, shorten_old_results, shorten_text
from tether.errors import ToolError
from tether.messages import ToolCallBlock, Turn, text_turn, tool_result
from tether.tools.context import ToolContext
from tether.tools.exec.run import run_tool_call
from tether.tools.registry import ToolRegistry

from .helpers import history, round_turns

STUB = '<persisted-output path="tool-results/c1.txt" size_bytes="900000">\n' + "p" * 9000


def _result_turn(k: int, text: str) -> Turn:
    return Turn(id=f"u{k}", role="user", content=(tool_result(f"c{k}", text),))


def test_shortens_only_old_large_results_and_keeps_stubs() -> None:
    policy = TailPolicy(max_result_bytes=100, keep_bytes=20, keep_recent_turns=1, step_turns=1)
    big, small = "é" * 200, "tiny"
    view = (
        _result_turn(0, big),
        _result_turn(1, STUB),
        _result_turn(2, small),
        _result_turn(3, big),
    )
    out = shorten_old_results(view, policy)
    assert out[0].tool_results[0].text.startswith("é" * 10)
    assert "recall turn u0" in out[0].tool_results[0].text
    assert len(out[0].tool_results[0].text.encode()) < 200
    assert out[1] is view[1] and out[2] is view[2]  # stub intact, small untouched
    assert out[3] is view[3]  # recent turn kept whole
    assert shorten_text(small, policy, "x") is small


@given(st.lists(st.integers(0, 400), min_size=1, max_size=30), st.integers(0, 5), st.integers(1, 6))
def test_tail_is_byte_stable_across_requests(sizes: list[int], keep: int, step: int) -> None:
    """Appending a turn changes the view inside the previous one's turns only when the boundary
    steps (once per `step` turns), and then only in the turns it passed."""
    policy = TailPolicy(
        max_result_bytes=100, keep_bytes=10, keep_recent_turns=keep, step_turns=step
    )
    turns = tuple(_result_turn(k, "z" * n) for k, n in enumerate(sizes))
    changes = 0
    for n in range(1, len(turns)):
        before = shorten_old_results(turns[:n], policy)
        after = shorten_old_results(turns[: n + 1], policy)
        stable = max((n - keep) // step * step, 0)
        assert before[:stable] == after[:stable]
        assert shorten_old_results(turns[: n + 1], policy) == after  # deterministic
        changes += before != after[:n]
    assert changes <= len(turns) // step + 1


def test_recall_returns_turns_verbatim_by_id_and_range_and_pages() -> None:
    turns = history(3, result_chars=50)
    one = recall_text(turns, "u1")
    assert one.startswith("--- turn u1 (user) ---")
    assert "result 1/c1_0 " + "x" * 50 in one
    span = recall_text(turns, "a0", "u1")
    assert [line for line in span.splitlines() if line.startswith("--- turn")] == [
        "--- turn a0 (assistant) ---",
        "--- turn u0 (user) ---",
        "--- turn a1 (assistant) ---",
        "--- turn u1 (user) ---",
    ]
    page = recall_text(turns, "a0", "u2", limit=40)
    assert page.startswith(span[:40]) and "call recall again with offset=40" in page
    rest = recall_text(turns, "a0", "u2", offset=40, limit=100_000)
    assert page[:40] + rest == recall_text(turns, "a0", "u2", limit=100_000)
    for args in (("nope",), ("u1", "a0"), ("a0", "nope")):
        with pytest.raises(ToolError):
            recall_text(turns, *args)


async def test_recall_tool_reads_the_live_history(tmp_path: object) -> None:
    history_list: list[Turn] = [text_turn("t1", "user", "secret plan: 42")]
    registry = ToolRegistry([recall_tool(lambda: history_list)])
    history_list.append(text_turn("t2", "assistant", "noted"))
    ctx = ToolContext.create(str(tmp_path))
    call = ToolCallBlock(id="r1", name="recall", arguments={"turn_id": "t2"})
    result = await run_tool_call(registry, call, ctx, timeout_s=5)
    assert not result.is_error and "noted" in result.text
    bad = await run_tool_call(
        registry,
        ToolCallBlock(id="r2", name="recall", arguments={"turn_id": "zz"}),
        ctx,
        timeout_s=5,
    )
    assert bad.is_error and "no turn with id 'zz'" in bad.text
    assert json.dumps(registry["recall"].parameters)  # a valid schema


def test_recent_read_paths_newest_first_dedup_skipping_errors_and_the_kept_tail() -> None:
    def read(k: int, path: str, *, error: bool = False) -> list[Turn]:
        c = ToolCallBlock(id=f"c{k}", name="read", arguments={"path": path})
        return [
            Turn(id=f"a{k}", role="assistant", content=(c,)),
            Turn(id=f"u{k}", role="user", content=(tool_result(c.id, "body", is_error=error),)),
        ]

    turns = [*read(0, "a.py"), *read(1, "b.py"), *read(2, "bad.py", error=True), *read(3, "a.py")]
    turns += read(4, "c.py")
    kept = tuple(turns[-2:])
    assert recent_read_paths(turns, kept) == ("a.py", "b.py")
    assert recent_read_paths(turns, (), max_files=1) == ("c.py",)


def test_recent_read_paths_reads_only_back_to_the_last_paths_found() -> None:
    """A compaction runs it every time: it must not walk the whole history (issue 12)."""

    class Counted(Sequence[Turn]):
        def __init__(self, turns: list[Turn]) -> None:
            self.turns, self.reads = turns, 0

        def __len__(self) -> int:
            return len(self.turns)

        def __getitem__(self, i: Any) -> Any:
            self.reads += 1
            return cast(Any, self.turns)[i]

    def read(k: int, path: str) -> list[Turn]:
        c = ToolCallBlock(id=f"c{k}", name="read", arguments={"path": path})
        return [
            Turn(id=f"a{k}", role="assistant", content=(c,)),
            Turn(id=f"u{k}", role="user", content=(tool_result(c.id, "body"),)),
        ]

    old = [text_turn(f"t{k}", "user", "x") for k in range(20_000)]
    newest = [t for k in range(5) for t in read(k, f"f{k}.py")]
    turns = Counted(old + newest)
    assert recent_read_paths(turns, (), max_files=5) == ("f4.py", "f3.py", "f2.py", "f1.py", "f0.py")
    assert turns.reads <= len(newest)


def test_restore_pair_is_both_or_neither() -> None:
    assert restore_pair([], [], assistant_id="x", user_id="y") is None
    c = ToolCallBlock(id="r1", name="read", arguments={"path": "a"})
    pair = restore_pair([c], [tool_result("r1", "body")], assistant_id="x", user_id="y")
    assert pair is not None
    a, u = pair
    assert a.role == "assistant" and a.tool_calls == (c,) and u.tool_results[0].tool_call_id == "r1"
    with pytest.raises(ValueError):
        restore_pair([c], [tool_result("other", "body")], assistant_id="x", user_id="y")
    assert round_turns(0)  # helper sanity
