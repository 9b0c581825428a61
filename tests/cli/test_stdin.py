"""The headless stdin grammar."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tether.cli.stdin import MalformedInputError, parse_stdin
from tether.messages import TextBlock, ToolCallBlock


def ids() -> Callable[[], str]:
    c = itertools.count(1)
    return lambda: f"m{next(c)}"


def test_whole_json_context_with_system_and_blocks() -> None:
    text = (
        '{"system": "be brief", "messages": [{"role": "user", "content": "hi"},'
        ' {"role": "assistant", "content": [{"type": "tool_call", "id": "c", "name": "ls"}]}]}'
    )
    parsed = parse_stdin(text, ids())
    assert parsed.system == "be brief"
    assert [t.role for t in parsed.messages] == ["user", "assistant"]
    assert isinstance(parsed.messages[1].content[0], ToolCallBlock)


def test_bare_list_and_prompt_forms() -> None:
    assert parse_stdin('[{"role": "user", "content": "x"}]', ids()).messages[0].text == "x"
    assert parse_stdin('{"prompt": "do it"}', ids()).messages[0].text == "do it"


def test_one_message_alone_is_one_message_as_on_a_line() -> None:
    alone = parse_stdin('{"role": "user", "content": "hi"}\n', ids())
    assert alone.system is None and [(t.role, t.text) for t in alone.messages] == [("user", "hi")]
    with pytest.raises(MalformedInputError):
        parse_stdin('{"role": "robot", "content": "hi"}', ids())


def test_lines_text_lines_join_and_json_lines_are_messages() -> None:
    text = 'first line\nsecond line\n{"role": "user", "content": "json one"}\nlast\n'
    parsed = parse_stdin(text, ids())
    assert [t.text for t in parsed.messages] == ["first line\nsecond line", "json one", "last"]


def test_a_later_line_that_looks_like_json_but_is_not_is_text() -> None:
    parsed = parse_stdin("do this\n{not json\nmore", ids())
    assert parsed.messages[0].content == (TextBlock(text="do this\n{not json\nmore"),)


@pytest.mark.parametrize(
    "text",
    [
        '{"messages": "nope"}',
        '{"messages": [{"role": "robot", "content": "x"}]}',
        '{"messages": [{"role": "user", "content": [{"type": "bogus"}]}]}',
        '{"messages": [{"role": "user"}]}',
        "[1, 2]",
        '{"prompt": 3}',
    ],
)
def test_malformed_contexts_raise(text: str) -> None:
    with pytest.raises(MalformedInputError):
        parse_stdin(text, ids())


def test_empty_stdin_is_no_messages() -> None:
    assert parse_stdin("  \n", ids()).messages == ()


def test_a_broken_json_context_is_malformed_not_a_prompt() -> None:
    with pytest.raises(MalformedInputError):
        parse_stdin('{"messages": [\n  {"role": "user", "content": "x"},\n', ids())
    assert parse_stdin("[urgent] fix the bug", ids()).messages[0].text == "[urgent] fix the bug"


@pytest.mark.parametrize(
    "text",
    [
        '[{"role":"user","content":"hi"}',  # a cut array (issue 18 item 15)
        '[{"role":"user","content":"hi"},',
        '  [ "a", ',
        '{"prompt": "do it"',
        "[",
        '"hello"',
        "null",
        "42",
        "true",
        '{"role": "user", "content": "a"}\n{"role": "user", "content": "b"',  # a cut line
    ],
)
def test_stdin_that_starts_as_json_and_does_not_parse_is_malformed(text: str) -> None:
    with pytest.raises(MalformedInputError):
        parse_stdin(text, ids())


@pytest.mark.parametrize(
    "text",
    ["[WIP] fix it", "{name} is a placeholder", "[1] see the note", '"Fix it", he said'],
)
def test_text_that_merely_opens_with_a_bracket_stays_a_prompt(text: str) -> None:
    assert parse_stdin(text, ids()).messages[0].text == text
