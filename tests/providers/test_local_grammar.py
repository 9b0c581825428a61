"""The embedded model's grammar admits only tool calls that validate against the tool's schema.

The GBNF text is translated into an equivalent Python regex (the grammars here are not
recursive), Hypothesis generates strings from that regex — i.e. replies the grammar admits — and
each one is parsed and validated by the tool's own pydantic argument model.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from tether.errors import ConfigError
from tether.providers.base import ToolSpec
from tether.providers.local.grammar import (
    action_grammar,
    int_range_rule,
    integer_bounds,
    schema_grammar,
)
from tether.tools.base import Tool
from tether.tools.builtin.toolset import builtin_tools

ALL_HEALTH_CHECKS = cast("list[HealthCheck]", list(HealthCheck))  # Hypothesis types the enum's iteration loosely

TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])|(?P<rep>\{\d*(?:,\d*)?\})'
    r"|(?P<op>[()|?*+])|(?P<name>[a-zA-Z0-9-]+))"
)
_LIT_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def gbnf_to_regex(grammar: str) -> str:
    """An equivalent Python regex for a non-recursive GBNF grammar (rule `root`)."""
    rules: dict[str, str] = {}
    for line in grammar.splitlines():
        name, _, body = line.partition(" ::= ")
        rules[name.strip()] = body

    @cache
    def rule(name: str) -> str:
        body, pos = rules[name], 0
        out: list[str] = []
        while pos < len(body):
            m = TOKEN.match(body, pos)
            if m is None:
                if body[pos:].strip() == "":
                    break
                raise AssertionError(f"cannot tokenize {body[pos:]!r} in rule {name}")
            pos = m.end()
            if m["lit"] is not None:
                text = re.sub(r"\\(.)", lambda e: _LIT_ESCAPES.get(e[1], e[1]), m["lit"][1:-1])
                out.append(re.escape(text))
            elif m["cls"] is not None:
                out.append(m["cls"])
            elif m["rep"] is not None:
                out.append(m["rep"])
            elif m["op"] == "(":
                out.append("(?:")
            elif m["op"] is not None:
                out.append(m["op"])
            else:
                out.append(f"(?:{rule(m['name'])})")
        return "".join(out)

    return rule("root")


def admits(grammar: str, text: str) -> bool:
    return re.fullmatch(gbnf_to_regex(grammar), text, flags=re.DOTALL) is not None


TOOLS: dict[str, Tool] = {t.name: t for t in builtin_tools()}
SPECS = tuple(t.spec() for t in builtin_tools())


@cache
def _tool_regex(name: str) -> str:
    return gbnf_to_regex(action_grammar((TOOLS[name].spec(),)))


@cache
def _tool_replies(name: str) -> st.SearchStrategy[str]:
    return st.from_regex(_tool_regex(name), fullmatch=True)


@settings(max_examples=60, deadline=None, suppress_health_check=ALL_HEALTH_CHECKS)
@given(st.sampled_from(sorted(TOOLS)), st.data())
def test_every_call_the_grammar_admits_validates_against_the_tool_schema(
    name: str, data: st.DataObject
) -> None:
    reply = data.draw(_tool_replies(name))
    action: Any = json.loads(reply)  # strict JSON: no raw control characters in strings
    if "answer" in action:
        assert isinstance(action["answer"], str)
        return
    assert action["tool"] == name
    TOOLS[name].bind(action["arguments"])  # raises pydantic.ValidationError if invalid


@settings(max_examples=40, deadline=None, suppress_health_check=ALL_HEALTH_CHECKS)
@given(st.data())
def test_every_reply_of_the_full_catalog_grammar_is_a_valid_call_or_an_answer(
    data: st.DataObject,
) -> None:
    reply = data.draw(_full_replies())
    action: Any = json.loads(reply)
    if "tool" in action:
        TOOLS[action["tool"]].bind(action["arguments"])
    else:
        assert set(action) == {"answer"}


@cache
def _full_regex() -> str:
    return gbnf_to_regex(action_grammar(SPECS))


@cache
def _full_replies() -> st.SearchStrategy[str]:
    """The strategy for the full catalog's replies, built once (parsing the 35 KB regex into a
    strategy costs ~1.7 s; per example it was most of this test's time)."""
    return st.from_regex(_full_regex(), fullmatch=True)


def test_the_grammar_refuses_the_values_the_schemas_refuse_and_admits_optional_ones() -> None:
    g = action_grammar(SPECS)
    ok = [
        '{"tool": "read", "arguments": {"path": "a.txt"}}',
        '{"tool": "read", "arguments": {"path": "a.txt", "offset": 3, "limit": 20}}',
        '{"tool": "bash", "arguments": {"command": "ls", "timeout_s": 600}}',
        '{"tool": "grep", "arguments": {"pattern": "x", "glob": null}}',
        '{"answer": "line one\\nline two"}',
    ]
    bad = [
        '{"tool": "read", "arguments": {"path": "a.txt", "offset": 0}}',  # ge=1
        '{"tool": "read", "arguments": {"path": "a.txt", "limit": -5}}',
        '{"tool": "bash", "arguments": {"command": "ls", "timeout_s": 0}}',  # gt=0
        '{"tool": "read", "arguments": {"path": "a", "mode": "x"}}',  # undeclared key
        '{"tool": "read", "arguments": {}}',  # missing required
        '{"answer": "raw\nnewline"}',  # not JSON
    ]
    assert [admits(g, s) for s in ok] == [True] * len(ok)
    assert [admits(g, s) for s in bad] == [False] * len(bad)


@given(
    st.one_of(st.none(), st.integers(-3000, 3000)),
    st.one_of(st.none(), st.integers(-3000, 3000)),
    st.integers(-(10**6), 10**6),
)
def test_int_range_rule_admits_exactly_the_integers_in_range(
    lo: int | None, hi: int | None, n: int
) -> None:
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    grammar = f"root ::= {int_range_rule(lo, hi)}"
    inside = (lo is None or n >= lo) and (hi is None or n <= hi)
    assert admits(grammar, str(n)) == inside
    assert not admits(grammar, "0" + str(abs(n)))  # no leading zeros


@given(
    st.sampled_from(["minimum", "exclusiveMinimum"]),
    st.floats(-50, 50, allow_nan=False),
    st.sampled_from(["maximum", "exclusiveMaximum"]),
    st.floats(-50, 50, allow_nan=False),
    st.integers(-60, 60),
)
def test_float_bounds_map_to_whole_numbers_inside_them(
    lo_key: str, lo: float, hi_key: str, hi: float, n: int
) -> None:
    schema = {"type": "number", lo_key: lo, hi_key: hi}
    try:
        a, b = integer_bounds(schema)
    except ConfigError:
        return
    assert a is not None and b is not None
    if a <= n <= b:
        assert n > lo if lo_key == "exclusiveMinimum" else n >= lo
        assert n < hi if hi_key == "exclusiveMaximum" else n <= hi


def test_enum_and_pattern_go_through_the_converter() -> None:
    spec = ToolSpec(
        name="pick",
        description="",
        parameters={
            "type": "object",
            "properties": {
                "color": {"enum": ["red", "green"]},
                "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]$"},
            },
            "required": ["color", "code"],
        },
    )
    g = schema_grammar({"anyOf": [{"const": 1}]})
    assert admits(g, "1")
    g = action_grammar((spec,))
    assert admits(g, '{"tool": "pick", "arguments": {"color": "red", "code": "AB1"}}')
    assert not admits(g, '{"tool": "pick", "arguments": {"color": "blue", "code": "AB1"}}')
    assert not admits(g, '{"tool": "pick", "arguments": {"color": "red", "code": "ab1"}}')


def test_a_bounded_number_at_the_root() -> None:
    g = schema_grammar({"type": "integer", "minimum": 2, "exclusiveMaximum": 5})
    assert [admits(g, str(n)) for n in range(0, 7)] == [
        False,
        False,
        True,
        True,
        True,
        False,
        False,
    ]


def test_a_calls_only_grammar_refuses_an_answer_and_admits_every_tool() -> None:
    """After a failed round the local provider asks for a call: `answer=False` drops the
    answer alternative (the full grammar keeps it)."""
    only_calls = action_grammar(SPECS, answer=False)
    full = action_grammar(SPECS)
    answer = '{"answer": "done"}'
    call = '{"tool": "ls", "arguments": {"path": "."}}'
    assert admits(full, answer) and not admits(only_calls, answer)
    assert admits(only_calls, call) and admits(full, call)
    # With no tool offered there is nothing to call: the answer stays.
    assert admits(action_grammar((), answer=False), answer)


def test_local_refs_are_inlined_and_a_recursive_one_admits_any_value() -> None:
    """A tool schema with `$defs` (pydantic writes them for nested models, like the todo tool's
    items) nested in the reply's schema: its `#/$defs/...` would point at the wrong root."""
    from tether.providers.base import inline_refs

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "definitions": {"type": "string"},
        },
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "next": {"$ref": "#/$defs/Item"}},
            },
        },
    }
    out = inline_refs(schema, depth=2)
    item = out["properties"]["items"]["items"]
    assert "$defs" not in out and "definitions" in out["properties"]
    assert item["properties"]["text"] == {"type": "string"}
    assert item["properties"]["next"]["properties"]["next"] == {}
    assert schema["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}  # input unchanged


def test_a_lone_surrogate_escape_is_refused_and_a_pair_admitted() -> None:
    """Found by the catalog property: `\\uD800` alone parsed as JSON but failed the todo
    tool's validation."""
    regex = re.compile(_full_regex())
    pair = '{"answer": "\\ud83d\\ude00"}'
    assert regex.fullmatch(pair) and json.loads(pair) == {"answer": "\U0001f600"}
    for lone in ('{"answer": "\\ud800"}', '{"answer": "\\udc00 x"}', '{"answer": "\\ud800\\u0041"}'):
        assert not regex.fullmatch(lone), lone
