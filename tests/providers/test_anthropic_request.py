"""Anthropic request building: prompt-caching breakpoints, thinking budgets, redacted thinking
round trip (request bodies captured from the real SDK client; no network)."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_request_conversion import ANTHROPIC_OK

from kit.replay import ANTHROPIC_DIR, Server, load_cassette, run, sse_response
from tether.errors import ConfigError
from tether.messages import (
    Provenance,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    text_turn,
    tool_result,
)
from tether.providers.anthropic import AnthropicProvider
from tether.providers.anthropic_request import (
    MAX_CACHE_BREAKPOINTS,
    MessagesParams,
    build_params,
    cache_messages,
)
from tether.providers.base import ModelRequest, ToolSpec

MODEL = "claude-test"
ROUTE = Provenance(provider="anthropic", api="anthropic", model=MODEL)
TOOLS = tuple(
    ToolSpec(name=f"t{i}", description="d", parameters={"type": "object"}) for i in range(3)
)


def breakpoints(body: Any) -> list[str]:
    """JSON paths of every cache_control in a body."""
    out: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if "cache_control" in node:
                out.append(path)
            for k, v in cast("dict[str, Any]", node).items():
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(cast("list[Any]", node)):
                walk(v, f"{path}[{i}]")

    walk(body, "$")
    return out


def tool_loop_history() -> tuple[Turn, ...]:
    call = ToolCallBlock(id="c1", name="t0", arguments={"x": 1})
    return (
        text_turn("u1", "user", "first"),
        Turn(
            id="a1",
            role="assistant",
            content=(
                ThinkingBlock(text="hm", signature="sig", producer="anthropic", model=MODEL),
                call,
            ),
            provenance=ROUTE,
        ),
        Turn(id="u2", role="user", content=(tool_result("c1", "ok"),)),
    )


async def test_four_breakpoints_in_the_right_places() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    history = (
        *tool_loop_history(),
        Turn(id="a2", role="assistant", content=(TextBlock(text="done"),), provenance=ROUTE),
        text_turn("u3", "user", "next"),
    )
    req = ModelRequest(model=MODEL, messages=history, system="sys", tools=TOOLS)
    await run(AnthropicProvider(MODEL, client=server.anthropic()), req)
    (body,) = server.requests
    assert sorted(breakpoints(body)) == [
        "$.messages[2].content[0]",  # the user message before the last one (tool results)
        "$.messages[4].content[0]",  # the last message
        "$.system[0]",
        "$.tools[2]",
    ]
    assert body["tools"][2]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in body["tools"][0]


async def test_breakpoint_skips_thinking_blocks() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    history = (
        text_turn("u1", "user", "q"),
        Turn(
            id="a1",
            role="assistant",
            content=(TextBlock(text="partial"), RedactedThinkingBlock(data="opaque")),
            provenance=ROUTE,
        ),
    )
    provider = AnthropicProvider(MODEL, client=server.anthropic(), supports_prefill=True)
    await run(provider, ModelRequest(model=MODEL, messages=history))
    (body,) = server.requests
    # a prefill ending in thinking is not sent as one (issue 39): the Continue turn follows
    reply, last = body["messages"][-2:]
    assert last["role"] == "user" and "cache_control" in last["content"][-1]
    assert reply["role"] == "assistant" and reply["content"][1]["type"] == "redacted_thinking"
    assert all("cache_control" not in b for b in reply["content"])


async def test_caching_off_sends_no_breakpoint() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    req = ModelRequest(model=MODEL, messages=tool_loop_history(), system="s", tools=TOOLS)
    await run(AnthropicProvider(MODEL, client=server.anthropic(), prompt_caching=False), req)
    assert breakpoints(server.requests[0]) == []


async def test_the_system_prompt_is_a_string_unless_it_carries_a_breakpoint() -> None:
    """Issue 39: a block list only when a block needs `cache_control` (llama-cpp-python's
    server behind the LiteLLM proxy rejects a list as the system prompt)."""
    req = ModelRequest(model=MODEL, messages=tool_loop_history(), system="s", tools=TOOLS)
    server = Server([sse_response(ANTHROPIC_OK)])
    await run(AnthropicProvider(MODEL, client=server.anthropic(), prompt_caching=False), req)
    assert server.requests[0]["system"] == "s"
    server = Server([sse_response(ANTHROPIC_OK)])
    await run(AnthropicProvider(MODEL, client=server.anthropic()), req)
    assert server.requests[0]["system"] == [
        {"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}
    ]
    # a compatible server (the LiteLLM proxy's `anthropic/` route): a string, caching on
    compatible = AnthropicProvider(MODEL, api_key="k", base_url="http://127.0.0.1:9")
    assert not compatible.info.vendor_endpoint
    params = compatible.request_params(req)
    assert params.system == "s" and breakpoints({"messages": params.messages}) != []
    p = build_params(
        ModelRequest(model=MODEL, messages=tool_loop_history()),
        tool_loop_history(),
        default_max_tokens=1000,
        default_thinking_budget=None,
    )
    assert p.system is None


_blocks = st.lists(
    st.sampled_from(["text", "empty", "thinking", "redacted", "result", "call"]),
    min_size=1,
    max_size=4,
)


def _make(kind: str, k: int) -> Any:
    shapes: dict[str, dict[str, Any]] = {
        "text": {"type": "text", "text": "t"},
        "empty": {"type": "text", "text": ""},
        "thinking": {"type": "thinking", "thinking": "x", "signature": "s"},
        "redacted": {"type": "redacted_thinking", "data": "d"},
        "result": {"type": "tool_result", "tool_use_id": f"c{k}", "content": []},
        "call": {"type": "tool_use", "id": f"c{k}", "name": "t", "input": {}},
    }
    return shapes[kind]


@settings(max_examples=200)
@given(st.lists(_blocks, max_size=8), st.integers(min_value=0, max_value=4))
def test_cache_messages_properties(shapes: list[list[str]], budget: int) -> None:
    messages: Any = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [_make(k, i) for k in s]}
        for i, s in enumerate(shapes)
    ]
    before = json.dumps(messages)
    out, placed = cache_messages(messages, budget)
    assert json.dumps(messages) == before  # input not mutated
    marks = breakpoints(out)
    assert len(marks) == placed <= min(budget, 2)
    for m in cast("list[Any]", out):
        for b in m["content"]:
            if "cache_control" in b:
                assert b["type"] not in ("thinking", "redacted_thinking")
                assert b.get("text", "x") != ""
    stripped = [
        {
            "role": m["role"],
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in cast("list[Any]", out)
    ]
    assert json.dumps(stripped) == before  # only breakpoints were added


@given(st.integers(min_value=0, max_value=6), st.booleans(), st.integers(min_value=0, max_value=6))
def test_never_more_than_four_breakpoints(n_tools: int, system: bool, n_turns: int) -> None:
    turns = tuple(
        text_turn(f"t{i}", "user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(n_turns)
    )
    if not turns or turns[-1].role != "user":
        turns = (*turns, text_turn("last", "user", "q"))
    req = ModelRequest(
        model=MODEL, messages=turns, system="s" if system else None, tools=TOOLS[:n_tools] * 2
    )
    p = build_params(req, turns, default_max_tokens=1000, default_thinking_budget=None)
    body = {"system": p.system, "tools": p.tools, "messages": p.messages}
    assert len(breakpoints(body)) <= MAX_CACHE_BREAKPOINTS


async def test_request_thinking_budget_wins_and_drops_temperature() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    provider = AnthropicProvider(MODEL, client=server.anthropic(), thinking_budget=2048)
    req = ModelRequest(
        model=MODEL,
        messages=(text_turn("u", "user", "q"),),
        thinking_budget_tokens=4096,
        max_output_tokens=8000,
        temperature=0.7,
    )
    await run(provider, req)
    (body,) = server.requests
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "temperature" not in body and body["max_tokens"] == 8000


async def test_temperature_sent_without_thinking() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    await run(
        AnthropicProvider(MODEL, client=server.anthropic()),
        ModelRequest(model=MODEL, messages=(text_turn("u", "user", "q"),), temperature=0.3),
    )
    assert server.requests[0]["temperature"] == 0.3 and "thinking" not in server.requests[0]


def test_bad_budgets_are_config_errors() -> None:
    def params(budget: int | None, max_tokens: int, default: int | None) -> MessagesParams:
        req = ModelRequest(
            model=MODEL,
            messages=(text_turn("u", "user", "q"),),
            thinking_budget_tokens=budget,
            max_output_tokens=max_tokens,
        )
        return build_params(
            req, req.messages, default_max_tokens=8192, default_thinking_budget=default
        )

    with pytest.raises(ConfigError):  # the budget must stay below max_tokens
        params(8000, 8000, None)
    with pytest.raises(ConfigError):  # the provider's own budget below Anthropic's minimum
        params(None, 8000, 512)
    # a per-request (decayed) budget below the minimum is raised to it, not a mid-run failure
    assert params(512, 8000, None).thinking == {"type": "enabled", "budget_tokens": 1024}


def test_thinking_disabled_when_tool_loop_turn_lost_its_thinking() -> None:
    """T08: after a switch from another model, the in-progress tool loop's assistant turn has
    no thinking block; Anthropic would reject thinking=enabled, so it is sent off."""
    other = Provenance(provider="openai", api="openai-chat", model="gpt-4o")
    call = ToolCallBlock(id="c1", name="t0")
    history = (
        text_turn("u1", "user", "q"),
        Turn(id="a1", role="assistant", content=(call,), provenance=other),
        Turn(id="u2", role="user", content=(tool_result("c1", "ok"),)),
    )
    req = ModelRequest(model=MODEL, messages=history, thinking_budget_tokens=2048)
    p = build_params(req, history, default_max_tokens=8192, default_thinking_budget=None)
    assert p.thinking is None
    p2 = build_params(
        req, tool_loop_history(), default_max_tokens=8192, default_thinking_budget=None
    )
    assert p2.thinking == {"type": "enabled", "budget_tokens": 2048}


async def test_redacted_thinking_round_trips_byte_exact() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "pai-redacted-thinking-stream.yaml")
    server = Server([*recs, sse_response(ANTHROPIC_OK)])
    model = MODEL
    provider = AnthropicProvider(model, client=server.anthropic())
    r = await run(provider, ModelRequest(model=model, messages=(text_turn("u", "user", "q"),)))
    redacted = [b for b in r.turn.content if isinstance(b, RedactedThinkingBlock)]
    assert len(redacted) == 2
    turn = Turn(
        id="a",
        role="assistant",
        content=r.turn.content,
        provenance=Provenance(provider="anthropic", api="anthropic", model=model),
    )
    history = (text_turn("u", "user", "q"), turn, text_turn("u2", "user", "more"))
    await run(provider, ModelRequest(model=model, messages=history))
    sent = server.requests[1]["messages"][1]["content"]
    assert [b["type"] for b in sent[:2]] == ["redacted_thinking", "redacted_thinking"]
    assert [b["data"] for b in sent[:2]] == [b.data for b in redacted]
    assert all(set(b) == {"type", "data"} for b in sent[:2])


def test_thinking_off_with_an_assistant_prefill() -> None:
    view = (text_turn("u", "user", "q"), text_turn("a", "assistant", "Sure, "))
    req = ModelRequest(model=MODEL, messages=view, thinking_budget_tokens=2048)
    p = build_params(req, view, default_max_tokens=8192, default_thinking_budget=None)
    assert p.thinking is None
