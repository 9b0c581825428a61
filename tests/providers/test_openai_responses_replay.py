"""Recorded OpenAI Responses streams replayed through the real `openai` SDK client.

Every file in tests/fixtures/openai-responses-sse/ is covered; expected values were read
from the fixtures (and cross-checked against a naive parse of the raw events).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.replay import (
    FIXTURES,
    Recorded,
    Server,
    load_cassette,
    load_chunks,
    run,
    simple_request,
    sse,
    sse_response,
)
from tether.messages import (
    Provenance,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.providers.base import ModelRequest, StreamError, ToolSpec
from tether.providers.openai_responses import OpenAIResponsesProvider
from tether.providers.openai_responses_request import is_reasoning_model, to_responses_input

DIR = FIXTURES / "openai-responses-sse"


def raw_events(rec: Recorded) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in rec.body.decode().splitlines()
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]


def split_responses(payloads: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for p in payloads:
        out[-1].append(p)
        if json.loads(p)["type"] in ("response.completed", "response.failed"):
            out.append([])
    return [m for m in out if m]


def chunk_responses(path: Path) -> list[Recorded]:
    return [sse_response(sse(m, named=True)) for m in split_responses(load_chunks(path))]


def provider(server: Server, model: str = "gpt-5") -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(model, client=server.openai())


def test_every_fixture_is_covered() -> None:
    assert {p.name for p in DIR.iterdir()} == {
        "pai-function-call-then-text.yaml",
        "pai-reasoning-summary-stream.yaml",
        "pai-gpt5-reasoning-function-call-usage.yaml",
        "vai-reasoning-encrypted-content.chunks.jsonl",
        "vai-error-insufficient-quota.chunks.jsonl",
    }


async def test_function_call_then_text() -> None:
    recs = load_cassette(DIR / "pai-function-call-then-text.yaml")
    server = Server(list(recs))
    p = provider(server, "gpt-4o")
    r1 = await run(p, simple_request("gpt-4o", "What is the capital of France?"))
    (call,) = r1.turn.tool_calls
    assert call.name == "get_capital" and call.arguments == {"country": "France"}
    assert call.id.startswith("call_") or call.id.startswith("fc_")
    assert r1.turn.stop_reason == "tool_use"
    # gpt-4o is not a reasoning model: no include / reasoning in the body.
    assert "include" not in server.requests[0] and server.requests[0]["store"] is False
    history = (
        text_turn("u1", "user", "What is the capital of France?"),
        r1.turn,
        Turn(id="u2", role="user", content=(tool_result(call.id, "Paris"),)),
    )
    r2 = await run(p, ModelRequest(model="gpt-4o", messages=history))
    raw_text = "".join(
        e["delta"] for e in raw_events(recs[1]) if e["type"] == "response.output_text.delta"
    )
    assert r2.turn.text == raw_text and "Paris" in raw_text
    assert r2.turn.stop_reason == "end_turn"
    sent = server.requests[1]["input"]
    assert sent[1]["type"] == "function_call" and sent[1]["call_id"] == call.id
    assert "id" not in sent[1]  # no reasoning item precedes it: fc id dropped (T10)
    assert sent[2] == {"type": "function_call_output", "call_id": call.id, "output": "Paris"}


async def test_reasoning_summary_stream() -> None:
    recs = load_cassette(DIR / "pai-reasoning-summary-stream.yaml")
    r = await run(provider(Server(list(recs)), "o3-mini"), simple_request("o3-mini"))
    raw = raw_events(recs[0])
    thinking, text = r.turn.content
    assert isinstance(thinking, ThinkingBlock) and isinstance(text, TextBlock)
    done = [e for e in raw if e["type"] == "response.reasoning_summary_text.done"]
    assert len(done) == 4
    assert thinking.summary == tuple(e["text"] for e in done)
    assert thinking.text == "\n\n".join(e["text"] for e in done)
    assert thinking.item_id is not None
    assert thinking.producer == "openai-responses" and thinking.item_id.startswith("rs_")
    assert text.text == "".join(
        e["delta"] for e in raw if e["type"] == "response.output_text.delta"
    )
    completed = next(e for e in raw if e["type"] == "response.completed")
    u = completed["response"]["usage"]
    cached = u["input_tokens_details"]["cached_tokens"]
    assert r.turn.usage == Usage(
        input_tokens=u["input_tokens"] - cached,
        output_tokens=u["output_tokens"],
        cache_read_tokens=cached,
    )


async def test_gpt5_reasoning_then_call_usage_normalized() -> None:
    recs = load_cassette(DIR / "pai-gpt5-reasoning-function-call-usage.yaml")
    server = Server(list(recs))
    r = await run(provider(server), simple_request("gpt-5"))
    raw = raw_events(recs[0])
    thinking, call = r.turn.content
    assert isinstance(thinking, ThinkingBlock) and isinstance(call, ToolCallBlock)
    item = next(
        e["item"]
        for e in raw
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning"
    )
    assert thinking.item_id == item["id"]
    assert thinking.encrypted_content == item["encrypted_content"]
    assert thinking.text == ""
    assert call.name == "final_result" and "result" in call.arguments
    u = next(e for e in raw if e["type"] == "response.completed")["response"]["usage"]
    cached = u["input_tokens_details"]["cached_tokens"]
    assert r.turn.usage is not None
    assert r.turn.usage.prompt_tokens == u["input_tokens"]  # cached is inside input (T19)
    assert r.turn.usage.cache_read_tokens == cached
    body = server.requests[0]
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False


async def test_encrypted_reasoning_agent_loop_replays_items() -> None:
    recs = chunk_responses(DIR / "vai-reasoning-encrypted-content.chunks.jsonl")
    assert len(recs) == 4
    server = Server(list(recs))
    model = "gpt-5.1-codex-max"
    p = OpenAIResponsesProvider(model, client=server.openai(), name="openai-responses")
    route = Provenance(provider="openai-responses", api="openai-responses", model=model)
    history: list[Turn] = [text_turn("u0", "user", "compute")]
    results: list[Turn] = []
    for k in range(4):
        r = await run(p, ModelRequest(model=model, messages=tuple(history)), f"a{k}")
        turn = Turn(
            id=r.turn.id,
            role="assistant",
            content=r.turn.content,
            usage=r.turn.usage,
            provenance=route,
            stop_reason=r.turn.stop_reason,
        )
        results.append(turn)
        history.append(turn)
        if turn.tool_calls:
            history.append(
                Turn(
                    id=f"r{k}",
                    role="user",
                    content=tuple(tool_result(c.id, "42") for c in turn.tool_calls),
                )
            )
    first = results[0]
    reasoning = first.content[0]
    assert isinstance(reasoning, ThinkingBlock) and reasoning.encrypted_content
    assert reasoning.summary and reasoning.text
    assert [c.arguments for t in results for c in t.tool_calls] == [
        {"a": 12, "b": 7, "op": "add"},
        {"a": 19, "b": 3, "op": "multiply"},
        {"a": 57, "b": 10, "op": "multiply"},
    ]
    assert results[-1].text == "The final result is **570**."
    # Request 2 replays the reasoning item (store=false) right before its function_call.
    sent = server.requests[1]["input"]
    kinds = [i.get("type", i.get("role")) for i in sent]
    assert kinds == ["user", "reasoning", "function_call", "function_call_output"]
    assert sent[1]["encrypted_content"] == reasoning.encrypted_content
    assert sent[1]["id"] == reasoning.item_id
    assert sent[2]["id"].startswith("fc_")  # kept: its reasoning item precedes it


async def test_error_event_is_classified() -> None:
    (rec,) = chunk_responses(DIR / "vai-error-insufficient-quota.chunks.jsonl")
    r = await run(provider(Server([rec])), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError)
    assert "exceeded your current quota" in err.message
    assert err.kind == "auth"  # quota exhausted: an account problem, not retried
    assert err.code == "insufficient_quota"
    assert r.turn.stop_reason == "error"


async def test_response_failed_event_without_error_event() -> None:
    payloads = [
        p
        for p in load_chunks(DIR / "vai-error-insufficient-quota.chunks.jsonl")
        if json.loads(p)["type"] != "error"
    ]
    r = await run(provider(Server([sse_response(sse(payloads, named=True))])), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError) and "quota" in err.message and err.status_code == 200
    assert err.kind == "auth" and err.code == "insufficient_quota"


async def test_truncated_stream_is_a_network_error() -> None:
    payloads = load_chunks(DIR / "vai-reasoning-encrypted-content.chunks.jsonl")
    first = split_responses(payloads)[0][:-1]  # drop response.completed
    r = await run(provider(Server([sse_response(sse(first, named=True))])), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "network"


def test_request_conversion_tools_and_system() -> None:
    p = OpenAIResponsesProvider("gpt-4o", api_key="k")
    params = p.request_params(
        ModelRequest(
            model="gpt-4o",
            messages=(text_turn("u", "user", "hi"),),
            system="Be brief.",
            tools=(ToolSpec(name="t", description="d", parameters={"type": "object"}),),
            max_output_tokens=100,
        )
    )
    assert params["instructions"] == "Be brief."
    assert params["tools"] == [
        {
            "type": "function",
            "name": "t",
            "description": "d",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]
    assert params["max_output_tokens"] == 100 and params["store"] is False
    assert params["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]


def test_foreign_reasoning_is_not_sent_as_an_item() -> None:
    anthropic_turn = Turn(
        id="a",
        role="assistant",
        content=(
            ThinkingBlock(text="hm", signature="sig", producer="anthropic"),
            TextBlock(text="x"),
        ),
        provenance=Provenance(provider="anthropic", api="anthropic", model="c"),
    )
    items = to_responses_input((text_turn("u", "user", "q"), anthropic_turn))
    assert [i.get("type", i.get("role")) for i in items] == ["user", "assistant"]


def test_reasoning_model_guess() -> None:
    assert is_reasoning_model("o3-mini") and is_reasoning_model("gpt-5.1-codex-max")
    assert not is_reasoning_model("gpt-4o") and not is_reasoning_model("gpt-4.1-mini")
