"""The assembler: block order, strict argument parsing (T30), minted ids, partial turns."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.providers.assemble import TRUNCATED, Assembler, parse_arguments
from tether.providers.base import (
    StreamDone,
    StreamError,
    TextDelta,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)


def test_blocks_keep_stream_order_and_thinking_signature() -> None:
    a = Assembler("t1")
    for e in [
        ThinkingStart(index=0, producer="anthropic"),
        ThinkingDelta(index=0, text="hmm"),
        ThinkingEnd(index=0, signature="sig"),
        TextStart(index=1),
        TextDelta(index=1, text="he"),
        TextDelta(index=1, text="llo"),
        ToolCallStart(index=2, id="c1", name="read"),
        ToolCallDelta(index=2, arguments_delta='{"pa'),
        ToolCallDelta(index=2, arguments_delta='th": "a"}'),
        ToolCallEnd(index=2),
        StreamDone(stop_reason="tool_use"),
    ]:
        a.feed(e)
    turn = a.turn()
    assert [b.type for b in turn.content] == ["thinking", "text", "tool_call"]
    assert turn.text == "hello"
    assert turn.content[0].signature == "sig"  # type: ignore[union-attr]
    (call,) = turn.tool_calls
    assert call.arguments == {"path": "a"} and call.invalid is None
    assert turn.stop_reason == "tool_use"


def test_missing_ids_are_minted_per_index_and_repeated_ids_stay_separate_calls() -> None:
    a = Assembler("t9")
    for i in (0, 1):
        a.feed(ToolCallStart(index=i, id=None, name="ls"))
        a.feed(ToolCallEnd(index=i))
    a.feed(ToolCallStart(index=2, id="dup", name="ls"))
    a.feed(ToolCallStart(index=3, id="dup", name="ls"))
    a.feed(ToolCallEnd(index=2))
    a.feed(ToolCallEnd(index=3))
    a.feed(StreamDone(stop_reason="tool_use"))
    ids = [c.id for c in a.turn().tool_calls]
    assert ids == ["t9_call1", "t9_call2", "dup", "dup"]  # collisions are re-minted at persist


def _cut_stream(end: bool, stop: str | None) -> Assembler:
    a = Assembler("t")
    a.feed(ToolCallStart(index=0, id="call_1", name="write"))
    a.feed(ToolCallDelta(index=0, arguments_delta='{"path": "notes.md", "content": "line1\\nline2'))
    if end:
        a.feed(ToolCallEnd(index=0))
    if stop is not None:
        a.feed(StreamDone(stop_reason=stop))  # type: ignore[arg-type]
    return a


def test_t30_truncated_arguments_are_never_valid_in_any_termination_variant() -> None:
    # connection closed: no end, no StreamDone
    (c1,) = _cut_stream(False, None).turn().tool_calls
    # finish_reason=length: adapter leaves the call open, stop max_tokens
    (c2,) = _cut_stream(False, "max_tokens").turn().tool_calls
    # finish_reason=tool_calls with JSON cut mid-string
    (c3,) = _cut_stream(True, "tool_use").turn().tool_calls
    for c in (c1, c2, c3):
        assert c.invalid is not None and c.arguments == {}
        assert c.raw_arguments is not None and c.raw_arguments.startswith('{"path"')
    assert c1.invalid == TRUNCATED


def test_last_call_of_a_max_tokens_stop_is_invalid_even_if_it_parses() -> None:
    a = Assembler("t")
    a.feed(ToolCallStart(index=0, id="c", name="bash"))
    a.feed(ToolCallDelta(index=0, arguments_delta='{"command": "rm"}'))
    a.feed(ToolCallEnd(index=0))
    a.feed(StreamDone(stop_reason="max_tokens"))
    assert a.turn().tool_calls[0].invalid == TRUNCATED


def test_events_after_the_terminal_one_are_ignored() -> None:
    a = Assembler("t")
    a.feed(StreamError(kind="overloaded", message="x"))
    a.feed(TextDelta(index=0, text="late"))
    assert a.error is not None and a.turn().content == ()
    assert a.turn().stop_reason == "error"


@given(st.text())
def test_parse_arguments_is_strict(text: str) -> None:
    args, invalid = parse_arguments(text)
    if invalid is None:
        assert isinstance(args, dict)
    else:
        assert args == {}


def test_parse_arguments_rejects_non_objects_and_accepts_empty() -> None:
    assert parse_arguments("")[1] is None
    assert parse_arguments("[1]")[1] is not None
    assert parse_arguments('{"a": 1')[1] is not None
