"""Recorded multi-turn Gemini and OpenAI Responses sessions replayed through the whole loop (the
loop builds the wire view incrementally, `is_wire_view=True`): real SDK clients on a mocked
transport serve the recorded responses, local tools return the recorded results, and what tether
sends on each later request must match what the recording's client sent (ids and signatures
aside)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import yaml
from google import genai
from google.genai import types as gt

from kit.replay import FIXTURES, Server, load_cassette, load_chunks, sse, sse_response
from tether.agent.agent import Agent
from tether.messages import ThinkingBlock
from tether.providers.google import GoogleProvider
from tether.providers.openai_responses import OpenAIResponsesProvider
from tether.tools.base import tool


def _recorded(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    return [i["request"]["parsed_body"] for i in data["interactions"]]


def _norm_gemini(contents: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for c in contents:
        parts: list[Any] = []
        for p in c["parts"]:
            if "functionCall" in p:
                parts.append(("call", p["functionCall"]["name"], p["functionCall"].get("args", {})))
            elif "functionResponse" in p:
                r = p["functionResponse"]
                parts.append(("response", r["name"], list(r["response"].values())))
            elif "text" in p:
                parts.append(("text", p["text"]))
        out.append((c["role"], parts))
    return out


async def test_gemini_parallel_function_calls_through_the_loop(tmp_path: Path) -> None:
    path = FIXTURES / "gemini-stream" / "pai-parallel-function-calls-stream.yaml"
    recorded = _recorded(path)

    @tool
    def get_capital(country: str) -> str:
        """Get the capital of a country."""
        return {"France": "Paris"}[country]

    @tool
    def get_temperature(city: str) -> str:
        """Get the temperature in a city."""
        return {"Paris": "30°C"}[city]

    server = Server(list(load_cassette(path)))
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    client = genai.Client(api_key="k", http_options=gt.HttpOptions(httpx_async_client=http))
    provider = GoogleProvider("gemini-2.0-flash", client=client)
    agent = Agent(
        provider,
        tools=[get_capital, get_temperature],
        root=tmp_path,
        system="You are a helpful chatbot.",
    )
    result = await agent.run(recorded[0]["contents"][0]["parts"][0]["text"])
    assert len(server.requests) == len(recorded) == 3
    for sent, rec in zip(server.requests, recorded, strict=True):
        assert _norm_gemini(sent["contents"]) == _norm_gemini(rec["contents"])
    assert result.text == "The temperature in Paris is 30°C.\n"
    # Gemini sent no call ids: the ids are minted, and each response carries its call's id.
    calls = [
        p["functionCall"]
        for c in server.requests[2]["contents"]
        for p in c["parts"]
        if "functionCall" in p
    ]
    responses = [
        p["functionResponse"]
        for c in server.requests[2]["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]
    assert [c["id"] for c in calls] == [r["id"] for r in responses] and len(
        set(c["id"] for c in calls)
    ) == 2


async def test_responses_function_call_then_text_through_the_loop(tmp_path: Path) -> None:
    path = FIXTURES / "openai-responses-sse" / "pai-function-call-then-text.yaml"
    recorded = _recorded(path)

    @tool
    def get_capital(country: str) -> str:
        """Capital."""
        return "Paris"

    server = Server(list(load_cassette(path)))
    agent = Agent(
        OpenAIResponsesProvider("gpt-4o", client=server.openai()),
        tools=[get_capital],
        root=tmp_path,
    )
    result = await agent.run(recorded[0]["input"][0]["content"])
    assert "Paris" in result.text and len(server.requests) == 2
    sent = server.requests[1]["input"]
    rec = recorded[1]["input"]
    assert [i.get("type", "message") for i in sent] == [i.get("type", "message") for i in rec]
    assert json.loads(sent[1]["arguments"]) == json.loads(rec[1]["arguments"])
    assert sent[2]["output"] == rec[2]["output"] and sent[2]["call_id"] == sent[1]["call_id"]


async def test_responses_encrypted_reasoning_agent_loop(tmp_path: Path) -> None:
    payloads = load_chunks(
        FIXTURES / "openai-responses-sse" / "vai-reasoning-encrypted-content.chunks.jsonl"
    )
    bodies: list[list[str]] = [[]]
    for p in payloads:
        bodies[-1].append(p)
        if json.loads(p)["type"] == "response.completed":
            bodies.append([])
    server = Server([sse_response(sse(b, named=True)) for b in bodies if b])

    @tool
    def calculator(a: float, b: float, op: str) -> str:
        """Calculate."""
        value = a + b if op == "add" else a * b
        return str(int(value))

    agent = Agent(
        OpenAIResponsesProvider("gpt-5.1-codex-max", client=server.openai()),
        tools=[calculator],
        root=tmp_path,
    )
    result = await agent.run("Compute (12 + 7) * 3 * 10.")
    assert result.text == "The final result is **570**."
    assert len(server.requests) == 4
    outputs = [
        i["output"] for i in server.requests[-1]["input"] if i.get("type") == "function_call_output"
    ]
    assert outputs == ["19", "57", "570"]
    # The reasoning item of request 1's answer is replayed (store=false) in every later request.
    first = next(t for t in agent.history if t.role == "assistant")
    item = next(b for b in first.content if isinstance(b, ThinkingBlock))
    for body in server.requests[1:]:
        replayed = [i for i in body["input"] if i.get("type") == "reasoning"]
        assert replayed and replayed[0]["encrypted_content"] == item.encrypted_content
