"""The shared block bookkeeping of every adapter's stream (`BlockCursor`): whatever sequence of
opens, deltas and closes a translator makes, the events are well-formed blocks with unique,
increasing indices, and `finish` ends every block still open exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.providers.base import (
    RedactedThinking,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tether.providers.streaming import TEXT, THINKING, BlockCursor, incomplete

STARTS: dict[type[StreamEvent], str] = {TextStart: "text", ThinkingStart: "thinking", ToolCallStart: "tool"}
DELTAS: dict[type[StreamEvent], str] = {TextDelta: "text", ThinkingDelta: "thinking", ToolCallDelta: "tool"}
ENDS: dict[type[StreamEvent], str] = {TextEnd: "text", ThinkingEnd: "thinking", ToolCallEnd: "tool"}


def check_well_formed(events: list[StreamEvent]) -> tuple[set[int], set[int]]:
    """Assert the block grammar; return (started, ended) indices."""
    kinds: dict[int, str] = {}
    ended: set[int] = set()
    last_start = -1
    for event in events:
        index: int = getattr(event, "index")  # noqa: B009
        if isinstance(event, RedactedThinking):
            assert index not in kinds and index > last_start
            last_start = index
            kinds[index] = "redacted"
            ended.add(index)
        elif type(event) in STARTS:
            if isinstance(event, ToolCallStart) and kinds.get(index) == "tool":
                assert index not in ended  # a later name for an open call (Chat Completions)
                continue
            assert index not in kinds, f"index {index} started twice"
            assert index > last_start, "indices increase in opening order"
            last_start = index
            kinds[index] = STARTS[type(event)]
        elif type(event) in DELTAS:
            assert kinds.get(index) == DELTAS[type(event)] and index not in ended
        else:
            assert kinds.get(index) == ENDS[type(event)], f"end of {index} without its start"
            assert index not in ended, f"index {index} ended twice"
            ended.add(index)
    return set(kinds), ended


KEYS = st.sampled_from([TEXT, THINKING, 0, 1, 2])
TEXTS = st.text("ab{}\"", max_size=3)

ops = st.one_of(
    st.tuples(st.just("open_text"), KEYS),
    st.tuples(st.just("open_thinking"), KEYS),
    st.tuples(st.just("open_call"), KEYS, st.one_of(st.none(), st.just('{"a": 1}'))),
    st.tuples(st.just("text"), KEYS, TEXTS),
    st.tuples(st.just("thinking"), KEYS, TEXTS),
    st.tuples(st.just("arguments"), KEYS, TEXTS),
    st.tuples(st.just("sign"), KEYS, TEXTS, st.booleans()),
    st.tuples(st.just("close"), KEYS, st.one_of(st.none(), TEXTS)),
    st.tuples(st.just("whole_text"), TEXTS),
    st.tuples(st.just("whole_thinking"), TEXTS),
    st.tuples(st.just("whole_call"), TEXTS),
    st.tuples(st.just("redacted"), TEXTS),
)


def apply(cursor: BlockCursor, op: tuple[Any, ...]) -> list[StreamEvent]:
    name, *args = op
    if name in ("open_text", "open_thinking", "open_call"):
        key = args[0]
        if cursor.is_open(key):
            with pytest.raises(ValueError, match="already open"):
                getattr(cursor, name)(key, **({} if name == "open_text" else _open_kw(name, args)))
            return []
        if name == "open_text":
            return [cursor.open_text(key)]
        return [getattr(cursor, name)(key, **_open_kw(name, args))]
    if name == "text":
        return list(cursor.text(args[1], args[0]))
    if name == "thinking":
        return list(cursor.thinking(args[1], args[0], producer="p"))
    if name == "arguments":
        return list(cursor.arguments(args[0], args[1]))
    if name == "sign":
        cursor.sign(args[0], args[1], append=args[2])
        return []
    if name == "close":
        return list(cursor.close(args[0], arguments=args[1]))
    if name == "whole_text":
        return list(cursor.whole_text(args[0]))
    if name == "whole_thinking":
        return list(cursor.whole_thinking(args[0], producer="p", signature="s"))
    if name == "whole_call":
        return list(cursor.whole_call(id=None, name="f", arguments=args[0] or "{}"))
    return [cursor.redacted(args[0])]


def _open_kw(name: str, args: list[Any]) -> dict[str, Any]:
    if name == "open_thinking":
        return {"producer": "p"}
    return {"id": None, "name": "f", "arguments": args[1] if len(args) > 1 else None}


@given(st.lists(ops, max_size=30))
def test_any_sequence_yields_well_formed_blocks_and_finish_closes_each_once(
    sequence: list[tuple[Any, ...]],
) -> None:
    cursor = BlockCursor()
    events: list[StreamEvent] = []
    for op in sequence:
        events += apply(cursor, op)
    before_finish = len(events)
    events += cursor.finish()
    started, ended = check_well_formed(events)
    assert started == ended, "finish ends every block that was opened"
    assert all(type(e) in ENDS or type(e) is ToolCallDelta for e in events[before_finish:])
    assert list(cursor.finish()) == []  # nothing is open any more
    assert started <= set(range(cursor.new_index()))  # every index came from the cursor


@given(st.lists(ops, max_size=30))
def test_indices_are_unique_and_increasing(sequence: list[tuple[Any, ...]]) -> None:
    cursor = BlockCursor()
    starts: list[int] = []
    for op in sequence:
        for event in apply(cursor, op):
            if type(event) in (TextStart, ThinkingStart, RedactedThinking) or (
                isinstance(event, ToolCallStart) and event.index not in starts
            ):
                starts.append(getattr(event, "index"))  # noqa: B009
    assert starts == sorted(set(starts))


def test_a_call_given_whole_up_front_sends_its_arguments_at_close_unless_deltas_came() -> None:
    cursor = BlockCursor()
    assert cursor.open_call(7, id="c", name="f", arguments='{"x": 1}') == ToolCallStart(
        index=0, id="c", name="f"
    )
    assert list(cursor.close(7)) == [
        ToolCallDelta(index=0, arguments_delta='{"x": 1}'),
        ToolCallEnd(index=0),
    ]
    cursor.open_call(8, id="d", name="g", arguments='{"x": 1}')
    assert list(cursor.arguments(8, '{"y"')) == [ToolCallDelta(index=1, arguments_delta='{"y"')]
    assert list(cursor.close(8, arguments="ignored")) == [ToolCallEnd(index=1)]


def test_thinking_ends_with_its_gathered_signature() -> None:
    cursor = BlockCursor()
    start = cursor.open_thinking(producer="anthropic", signature="ab")
    cursor.sign(THINKING, "cd", append=True)
    assert start == ThinkingStart(index=0, producer="anthropic")
    assert list(cursor.close(THINKING, summary=("s",))) == [
        ThinkingEnd(index=0, signature="abcd", summary=("s",))
    ]


def test_finish_ends_blocks_in_opening_order() -> None:
    cursor = BlockCursor()
    events = [cursor.open_call(3, id=None, name="f"), *cursor.text("hi")]
    assert list(cursor.finish()) == [ToolCallEnd(index=0), TextEnd(index=1)]
    assert events[1:] == [TextStart(index=1), TextDelta(index=1, text="hi")]


def test_an_incomplete_stream_is_one_network_error_naming_the_missing_signal() -> None:
    assert incomplete("finish_reason") == StreamError(
        kind="network", message="stream ended before completion (no finish_reason)"
    )
