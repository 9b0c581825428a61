"""Recorded multi-turn sessions replayed through the whole loop: real SDK clients on a mocked
transport serve the recorded responses; the agent assembles each reply, runs local tools that
return the recorded results, builds the next wire view, and the adapter encodes it. The messages
tether sends on every later request must match what the recording's client sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import yaml

from kit.replay import ANTHROPIC_DIR, OPENAI_DIR, Server, load_cassette, sse_response
from tether.agent.agent import Agent
from tether.providers.anthropic import AnthropicProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.tools.base import tool


def _recorded_requests(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    out: list[dict[str, Any]] = []
    for interaction in data["interactions"]:
        req = interaction["request"]
        body = req.get("parsed_body")
        if body is None:
            raw = req["body"]
            body = json.loads(raw if isinstance(raw, str) else raw["string"])
        out.append(body)
    return out


def _norm_anthropic(messages: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for m in messages:
        blocks: list[Any] = []
        content = m["content"]
        for b in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if b["type"] == "text":
                blocks.append(("text", b["text"].rstrip()))
            elif b["type"] == "tool_use":
                blocks.append(("tool_use", b["id"], b["name"], b["input"]))
            elif b["type"] == "tool_result":
                c = b["content"]
                text = c if isinstance(c, str) else "".join(p["text"] for p in c)
                blocks.append(("tool_result", b["tool_use_id"], text, bool(b.get("is_error"))))
        out.append((m["role"], blocks))
    return out


def _norm_openai(messages: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for m in messages:
        if m["role"] == "system":
            continue
        tool_calls: list[dict[str, Any]] = m.get("tool_calls") or []
        calls = [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in tool_calls
        ]
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in cast("list[dict[str, str]]", content))
        out.append((m["role"], content or None, calls, m.get("tool_call_id")))
    return out


async def test_anthropic_parallel_tool_use_multiturn(tmp_path: Path) -> None:
    path = ANTHROPIC_DIR / "llm-anthropic-parallel-tool-use-multiturn.yaml"
    recorded = _recorded_requests(path)
    names = iter(["Charles", "Sammy"])

    @tool
    def pelican_name_generator() -> str:
        """Generate a pelican name."""
        return next(names)

    server = Server(list(load_cassette(path)))
    provider = AnthropicProvider(recorded[0]["model"], client=server.anthropic())
    agent = Agent(provider, tools=[pelican_name_generator], root=tmp_path)
    first = recorded[0]["messages"][0]["content"][0]["text"]
    result = await agent.run(first)
    assert len(server.requests) == len(recorded) == 2
    for sent, rec in zip(server.requests, recorded, strict=True):
        assert _norm_anthropic(sent["messages"]) == _norm_anthropic(rec["messages"])
    assert result.stop_reason == "end_turn" and result.text


async def test_openai_parallel_tool_calls_multiturn(tmp_path: Path) -> None:
    path = OPENAI_DIR / "pai-parallel-tool-calls-multiturn.yaml"
    recorded = _recorded_requests(path)
    results: dict[str, str] = {}
    for m in recorded[-1]["messages"]:
        if m["role"] == "tool":
            results[m["tool_call_id"]] = m["content"]
    by_call: dict[tuple[str, str], str] = {}
    for m in recorded[-1]["messages"]:
        recorded_calls: list[dict[str, Any]] = m.get("tool_calls") or []
        for c in recorded_calls:
            by_call[(c["function"]["name"], c["function"]["arguments"])] = results[c["id"]]

    @tool
    def get_country() -> str:
        """Country."""
        return by_call[("get_country", "{}")]

    @tool
    def get_product_name() -> str:
        """Product."""
        return by_call[("get_product_name", "{}")]

    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return next(v for (n, a), v in by_call.items() if n == "get_weather" and city in a)

    # The recording ends on a `final_result` tool call (pydantic-ai's output tool), so the loop
    # makes one more request; it gets a plain answer.
    final = 'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Mexico City it is."},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    server = Server([*load_cassette(path), sse_response(final.encode())])
    provider = OpenAIChatProvider(recorded[0]["model"], client=server.openai())
    agent = Agent(provider, tools=[get_country, get_product_name, get_weather], root=tmp_path)
    result = await agent.run(recorded[0]["messages"][0]["content"])
    assert len(server.requests) == len(recorded) + 1 == 4
    for sent, rec in zip(server.requests[:3], recorded, strict=True):
        assert _norm_openai(sent["messages"]) == _norm_openai(rec["messages"])
    assert result.stop_reason == "end_turn" and "Mexico" in result.text
