"""The native (Hermes-style `<tool_call>`) protocol of the embedded model: its grammar admits
only calls that validate against the tool's schema, past calls render through the model's own
chat template exactly as the model writes them, and replies parse back into calls or answers."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from test_local_grammar import SPECS, TOOLS, admits, gbnf_to_regex

from tether.messages import ToolCallBlock, Turn, text_turn, tool_result
from tether.providers.base import (
    ModelRequest,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tether.providers.local.native import (
    NATIVE_FAMILIES,
    NATIVE_NEXT_STEP,
    choose_protocol,
    cut_call_name,
    declares_hermes_tools,
    format_call,
    native_grammar,
    parse_native_call,
    render_native,
)
from tether.providers.local.native import NativeStreamer as _NativeStreamer
from tether.providers.local.prompt import RETRY
from tether.providers.local.provider import LocalProvider

ALL_HEALTH_CHECKS = cast("list[HealthCheck]", list(HealthCheck))  # Hypothesis types the enum's iteration loosely

# Qwen2.5-Instruct's `tokenizer.chat_template`, as read from the GGUF metadata (llama_cpp
# `Llama(..., vocab_only=True).metadata["tokenizer.chat_template"]`); trimmed of nothing.
QWEN_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# SmolLM2's template: plain ChatML, no tools.
SMOL_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@cache
def _tool_regex(name: str) -> str:
    return gbnf_to_regex(native_grammar((TOOLS[name].spec(),)))


@settings(max_examples=40, deadline=None, suppress_health_check=ALL_HEALTH_CHECKS)
@given(st.sampled_from(sorted(TOOLS)), st.data())
def test_every_native_call_the_grammar_admits_parses_back_into_a_valid_call(
    name: str, data: st.DataObject
) -> None:
    reply = data.draw(st.from_regex(_tool_regex(name), fullmatch=True))
    call = parse_native_call(reply)
    if call is None:  # the other branch: a plain-text answer, never anything call-like
        assert reply[0] not in "<{` \t\n"
        assert cut_call_name(reply) is None
        return
    assert call["tool"] == name
    TOOLS[name].bind(call["arguments"])  # raises pydantic.ValidationError if invalid


def test_the_native_grammar_refuses_what_the_schemas_refuse() -> None:
    g = native_grammar(SPECS)
    ok = [
        format_call("read", {"path": "a.txt"}),
        format_call("read", {"path": "a.txt", "offset": 3}),
        format_call("bash", {"command": "ls", "timeout_s": 600}),
        "The code word is HERON.",
    ]
    bad = [
        format_call("read", {"path": "a.txt", "offset": 0}),  # ge=1
        format_call("bash", {"command": "ls", "timeout_s": 0}),  # gt=0
        format_call("read", {"path": "a", "mode": "x"}),  # undeclared key
        format_call("read", {}),  # missing required
        format_call("fetch", {"url": "x"}),  # not an offered tool
        '{"name": "read", "arguments": {"path": "a"}}',  # a bare call is no answer
        '```json\n{"name": "read", "arguments": {"path": "a"}}\n```',  # nor a fenced one
        "<tool_call>\n" + '{"name": "read"',  # unfinished
    ]
    assert [admits(g, s) for s in ok] == [True] * len(ok)
    assert [admits(g, s) for s in bad] == [False] * len(bad)


def test_the_native_grammar_compiles_in_llama_cpp() -> None:
    from llama_cpp import LlamaGrammar

    LlamaGrammar.from_string(native_grammar(SPECS), verbose=False)
    LlamaGrammar.from_string(native_grammar(()), verbose=False)


ARGS = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.text(), st.integers(), st.booleans(), st.none()),
    max_size=4,
)


@given(st.sampled_from(sorted(TOOLS)), ARGS)
def test_a_call_rendered_by_the_models_template_is_written_like_format_call_and_parses_back(
    name: str, args: dict[str, Any]
) -> None:
    view = (
        text_turn("u", "user", "go"),
        Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name=name, arguments=args),)),
        Turn(id="r", role="user", content=(tool_result("c", "ok"),)),
    )
    prompt = render_native(QWEN_TEMPLATE, ModelRequest(model="m", messages=view, tools=SPECS))
    # What the template writes for a past call is what the grammar asks the model to write
    # (same key order: the template's `tojson` sorts keys, so compare parsed).
    block = prompt.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    assert parse_native_call(block) == {"tool": name, "arguments": args}
    assert parse_native_call(format_call(name, args)) == {"tool": name, "arguments": args}


def test_the_native_prompt_declares_tools_shows_results_and_offers_the_next_step() -> None:
    call = Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name="read", arguments={"path": "a.txt"}),))
    ok = (text_turn("u", "user", "Fix a.txt"), call, Turn(id="r", role="user", content=(tool_result("c", "x = 1"),)))
    bad = (text_turn("u", "user", "Fix a.txt"), call, Turn(id="r", role="user", content=(tool_result("c", "no such file", is_error=True),)))
    p_ok = render_native(QWEN_TEMPLATE, ModelRequest(model="m", messages=ok, tools=SPECS, system="Be terse."))
    p_bad = render_native(QWEN_TEMPLATE, ModelRequest(model="m", messages=bad, tools=SPECS))
    tools = p_ok.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(t)["function"]["name"] for t in tools] == [s.name for s in SPECS]
    assert "Be terse." in p_ok
    assert "<tool_response>\nx = 1\n</tool_response>" in p_ok
    assert p_ok.endswith(f"Task: Fix a.txt\n{NATIVE_NEXT_STEP}<|im_end|>\n<|im_start|>assistant\n")
    assert "ERROR: no such file" in p_bad and RETRY in p_bad
    # Examples cover several tools, as native call blocks, and one recovery from an error.
    examples = p_ok.split("# Tools")[0]
    shown = {json.loads(c)["name"] for c in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", examples)}
    assert shown >= {"read", "edit", "grep", "write", "ls", "bash"}


def test_protocol_choice_follows_the_template_and_the_measured_families() -> None:
    assert declares_hermes_tools(QWEN_TEMPLATE) and not declares_hermes_tools(SMOL_TEMPLATE)
    assert not declares_hermes_tools(None)
    assert choose_protocol(None, SMOL_TEMPLATE, "llama") == "json"
    assert choose_protocol("native", SMOL_TEMPLATE, "llama") == "json"  # impossible: no template
    assert choose_protocol("json", QWEN_TEMPLATE, "qwen2") == "json"
    assert choose_protocol("native", QWEN_TEMPLATE, "qwen2") == "native"
    assert choose_protocol(None, QWEN_TEMPLATE, "somethingelse") == "json"
    measured = "native" if "qwen2" in NATIVE_FAMILIES else "json"
    assert choose_protocol(None, QWEN_TEMPLATE, "qwen2") == measured


def _events(raw: str, finish: str | None) -> list[Any]:
    provider = LocalProvider.__new__(LocalProvider)
    return list(provider._finish(raw, finish, False, "native"))  # pyright: ignore[reportPrivateUsage]


def test_native_replies_become_a_call_an_unended_cut_call_or_an_answer() -> None:
    events = _events(format_call("read", {"path": "a.txt"}), "stop")
    assert isinstance(events[0], ToolCallStart) and events[0].name == "read"
    assert isinstance(events[1], ToolCallDelta) and json.loads(events[1].arguments_delta) == {"path": "a.txt"}
    assert isinstance(events[-1], ToolCallEnd)
    cut = _events('<tool_call>\n{"name": "write", "arguments": {"path": "a", "content": "x', "length")
    assert isinstance(cut[0], ToolCallStart) and cut[0].name == "write"
    assert not any(isinstance(e, ToolCallEnd) for e in cut)  # never executed
    answer = _events("It is 42.", "stop")
    assert [e.text for e in answer if isinstance(e, TextDelta)] == ["It is 42."]


@given(st.text(min_size=1).filter(lambda s: s[0] not in "<{` \t\n\r"), st.integers(1, 7))
@example("\x1f", 1)  # whitespace to `str.isspace`, a valid first character to the grammar
def test_native_streamer_streams_any_answer_and_nothing_of_a_call(text: str, step: int) -> None:
    streamer = _NativeStreamer()
    out = "".join(streamer.new_text(text[:i]) for i in range(step, len(text) + step, step))
    assert out == text
    call = format_call("read", {"path": "a"})
    streamer = _NativeStreamer()
    assert "".join(streamer.new_text(call[:i]) for i in range(1, len(call) + 1)) == ""
