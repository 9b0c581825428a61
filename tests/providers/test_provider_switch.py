"""A session that switches provider mid-way, every response replayed from recorded fixtures
through the real adapters and SDK clients: anthropic → openai-chat → ollama → openai-responses
→ google → anthropic again.

Each request body is checked by an independent validator for what its target rejects (unsigned
or foreign thinking to Anthropic, reasoning of another route, unknown tool-call ids, ids too
long for the target, calls without results, results without calls, a non-user tail, ...).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import httpx2
import ollama
from google import genai
from google.genai import types as gt

from kit.replay import (
    ANTHROPIC_DIR,
    FIXTURES,
    OPENAI_DIR,
    Recorded,
    Server,
    load_cassette,
    load_chunks,
    sse,
    sse_response,
)
from tether.messages import (
    Provenance,
    RedactedThinkingBlock,
    ThinkingBlock,
    Turn,
    text_turn,
    tool_result,
)
from tether.providers.anthropic import AnthropicProvider
from tether.providers.assemble import Assembler
from tether.providers.base import ModelRequest, Provider, ToolSpec
from tether.providers.google import GoogleProvider
from tether.providers.ollama import OllamaProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_responses import OpenAIResponsesProvider

TOOLS = (
    ToolSpec(name="get_weather", description="Weather.", parameters={"type": "object"}),
    ToolSpec(name="calculator", description="Math.", parameters={"type": "object"}),
)
ANTHROPIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# ---------------------------------------------------------------------------------------------
# Validators: what each target rejects (from the vendors' API references / error messages).


def check_anthropic(body: dict[str, Any], model: str) -> list[str]:
    problems: list[str] = []
    msgs = body["messages"]
    if msgs[-1]["role"] != "user":
        problems.append("last message is not user")
    pending: set[str] = set()
    for i, m in enumerate(msgs):
        blocks: list[dict[str, Any]] = m["content"] if isinstance(m["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"}
        if results != pending:
            problems.append(f"message {i}: results {results} do not answer calls {pending}")
        pending = set()
        for b in blocks:
            if b["type"] == "thinking" and not b.get("signature"):
                problems.append(f"message {i}: unsigned thinking")
            if b["type"] == "tool_use":
                if not ANTHROPIC_ID.match(b["id"]):
                    problems.append(f"bad tool_use id {b['id']}")
                pending.add(b["id"])
            if b["type"] == "text" and not b["text"]:
                problems.append("empty text block")
            if b["type"] not in (
                "text",
                "image",
                "document",
                "thinking",
                "redacted_thinking",
                "tool_use",
                "tool_result",
            ):
                problems.append(f"unknown block {b['type']}")
    return problems


def check_openai_chat(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    pending: list[str] = []
    for i, m in enumerate(body["messages"]):
        if m["role"] == "tool":
            if m["tool_call_id"] not in pending:
                problems.append(f"message {i}: tool result for unknown call {m['tool_call_id']}")
            else:
                pending.remove(m["tool_call_id"])
            continue
        if pending:
            problems.append(f"message {i}: calls {pending} left without results")
            pending = []
        if set(m) - {"role", "content", "tool_calls", "name"}:
            problems.append(f"message {i}: unknown keys {set(m)}")
        for c in m.get("tool_calls") or ():
            if len(c["id"]) > 40:
                problems.append(f"id too long: {c['id']}")
            json.loads(c["function"]["arguments"])
            pending.append(c["id"])
    if body["messages"][-1]["role"] not in ("user", "tool"):
        problems.append("tail is not user/tool")
    return problems


def check_ollama(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for i, m in enumerate(body["messages"]):
        if m["role"] not in ("system", "user", "assistant", "tool"):
            problems.append(f"message {i}: role {m['role']}")
        if set(m) - {"role", "content", "thinking", "images", "tool_calls", "tool_name"}:
            problems.append(f"message {i}: unknown keys {set(m)}")
        for c in m.get("tool_calls") or ():
            if not isinstance(c["function"]["arguments"], dict):
                problems.append("arguments must be an object")
    if "num_ctx" not in body["options"]:
        problems.append("num_ctx not sent")
    return problems


def check_responses(body: dict[str, Any], issued_items: set[str]) -> list[str]:
    problems: list[str] = []
    calls: set[str] = set()
    for i, item in enumerate(body["input"]):
        kind = item.get("type", "message")
        if kind == "reasoning":
            if item["id"] not in issued_items or not item.get("encrypted_content"):
                problems.append(f"item {i}: reasoning item not issued on this route")
            nxt: dict[str, Any] = body["input"][i + 1] if i + 1 < len(body["input"]) else {}
            if nxt.get("type") not in ("function_call",) and nxt.get("role") != "assistant":
                problems.append(f"item {i}: reasoning item without its following item")
        elif kind == "function_call":
            if len(item["call_id"]) > 64:
                problems.append("call_id too long")
            if "id" in item and body["input"][i - 1].get("type") not in (
                "reasoning",
                "function_call",
            ):
                problems.append(f"item {i}: fc id without its reasoning item")
            calls.add(item["call_id"])
        elif kind == "function_call_output" and item["call_id"] not in calls:
            problems.append(f"item {i}: output for unknown call")
    if body.get("store") is not False:
        problems.append("store must be false")
    return problems


def check_google(body: dict[str, Any], native_signatures: set[str]) -> list[str]:
    problems: list[str] = []
    contents = body["contents"]
    for i, c in enumerate(contents):
        calls = [p["functionCall"] for p in c["parts"] if "functionCall" in p]
        if calls:
            nxt: list[dict[str, Any]] = contents[i + 1]["parts"] if i + 1 < len(contents) else []
            responses = [p["functionResponse"] for p in nxt if "functionResponse" in p]
            if [r["name"] for r in responses] != [f["name"] for f in calls]:
                problems.append(f"content {i}: function responses do not match calls")
            if "thoughtSignature" not in next(p for p in c["parts"] if "functionCall" in p):
                problems.append(f"content {i}: first call without signature (Gemini 3 rejects)")
        for p in c["parts"]:
            if p.get("thought") and p.get("thoughtSignature") not in native_signatures:
                problems.append(f"content {i}: foreign thought part")
    if contents[-1]["role"] != "user":
        problems.append("tail is not user")
    return problems


# ---------------------------------------------------------------------------------------------


async def step(provider: Provider, history: list[Turn], turn_id: str) -> Turn:
    """One request through `provider` (the raw history: the adapter builds the view)."""
    req = ModelRequest(
        model=provider.model, messages=tuple(history), tools=TOOLS, system="Be brief."
    )
    asm = Assembler(
        turn_id, Provenance(provider=provider.name, api=provider.target, model=provider.model)
    )
    async for event in provider.stream(req):
        asm.feed(event)
    assert asm.done is not None, asm.error
    turn = asm.turn()
    history.append(turn)
    if turn.tool_calls:
        history.append(
            Turn(
                id=f"{turn_id}_r",
                role="user",
                content=tuple(tool_result(c.id, "42") for c in turn.tool_calls),
            )
        )
    else:
        history.append(text_turn(f"{turn_id}_u", "user", "Go on."))
    return turn


def anthropic_messages(path: str) -> list[Recorded]:
    return load_cassette(ANTHROPIC_DIR / path)


async def test_provider_switch_sends_nothing_a_target_rejects() -> None:
    history: list[Turn] = [
        text_turn("u0", "user", "How do I cross the street? Then check the weather.")
    ]

    # 1. Anthropic: signed thinking + text, then (another request) text + two parallel tool_use.
    a_server = Server(
        [
            *anthropic_messages("pai-thinking-signature-stream.yaml"),
            *anthropic_messages("pai-redacted-thinking-stream.yaml"),
            anthropic_messages("llm-anthropic-parallel-tool-use-multiturn.yaml")[0],
        ]
    )
    claude = AnthropicProvider("claude-sonnet-4-20250514", client=a_server.anthropic())
    t1 = await step(claude, history, "a1")
    t2 = await step(claude, history, "a2")
    t3 = await step(claude, history, "a3")
    assert isinstance(t1.content[0], ThinkingBlock) and t1.content[0].signature
    assert any(isinstance(b, RedactedThinkingBlock) for b in t2.content)
    assert len(t3.tool_calls) == 2
    for body in a_server.requests:
        assert check_anthropic(body, claude.model) == []

    # 2. OpenAI Chat Completions: two parallel tool calls.
    o_server = Server([load_cassette(OPENAI_DIR / "pai-parallel-tool-calls-multiturn.yaml")[0]])
    gpt = OpenAIChatProvider("gpt-4o", client=o_server.openai())
    t4 = await step(gpt, history, "o1")
    assert len(t4.tool_calls) == 2
    (body,) = o_server.requests
    assert check_openai_chat(body) == []
    assert "thinking" not in json.dumps(body) and "redacted" not in json.dumps(body)

    # 3. Ollama: streamed text.
    def ollama_handler(request: httpx.Request) -> httpx.Response:
        ollama_requests.append(json.loads(request.content))
        (rec,) = load_cassette(FIXTURES / "ollama-ndjson" / "oll-chat-stream-llama3.yaml")
        return httpx.Response(
            200, headers={"content-type": "application/x-ndjson"}, content=rec.body
        )

    ollama_requests: list[dict[str, Any]] = []
    llama = OllamaProvider(
        "llama3",
        client=ollama.AsyncClient(
            host="http://ollama.test", transport=httpx.MockTransport(ollama_handler)
        ),
    )
    t5 = await step(llama, history, "l1")
    assert t5.text.startswith("Why")
    (body,) = ollama_requests
    assert check_ollama(body) == []
    sent_thinking = [m.get("thinking") for m in body["messages"] if m.get("thinking")]
    assert sent_thinking == []  # Anthropic-signed thinking and redacted thinking never leave

    # 4. OpenAI Responses (a reasoning model): reasoning item + call, then 3 more responses.
    payloads = load_chunks(
        FIXTURES / "openai-responses-sse" / "vai-reasoning-encrypted-content.chunks.jsonl"
    )
    responses: list[list[str]] = [[]]
    for p in payloads:
        responses[-1].append(p)
        if json.loads(p)["type"] == "response.completed":
            responses.append([])
    r_server = Server([sse_response(sse(r, named=True)) for r in responses if r][:2])
    codex = OpenAIResponsesProvider("gpt-5.1-codex-max", client=r_server.openai())
    t6 = await step(codex, history, "r1")
    t7 = await step(codex, history, "r2")
    issued = {
        b.item_id for t in (t6, t7) for b in t.content if isinstance(b, ThinkingBlock) and b.item_id
    }
    assert issued
    for body in r_server.requests:
        assert check_responses(body, issued) == []
    # The second request replays the first's reasoning item (same route) before its call.
    assert any(i.get("type") == "reasoning" for i in r_server.requests[1]["input"])
    assert not any(i.get("type") == "reasoning" for i in r_server.requests[0]["input"])

    # 5. Gemini 3: a function call with a signature.
    rec = "".join(
        f"data: {line}\r\n\r\n"
        for line in load_chunks(FIXTURES / "gemini-stream" / "vai-gemini3-tool-call.chunks.jsonl")
    ).encode()
    g_server = Server([Recorded(200, {"content-type": "text/event-stream"}, rec)])
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(g_server))
    gemini = GoogleProvider(
        "gemini-3-pro-preview",
        client=genai.Client(api_key="k", http_options=gt.HttpOptions(httpx_async_client=http)),
    )
    t8 = await step(gemini, history, "g1")
    assert t8.tool_calls and t8.tool_calls[0].provider_meta
    (body,) = g_server.requests
    assert check_google(body, set()) == []

    # 6. Back to Anthropic: only its own signed thinking (same model) survives.
    back = Server([anthropic_messages("llm-anthropic-parallel-tool-use-multiturn.yaml")[1]])
    claude2 = AnthropicProvider("claude-sonnet-4-20250514", client=back.anthropic())
    await step(claude2, history, "a4")
    (body,) = back.requests
    assert check_anthropic(body, claude2.model) == []
    kept = [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert kept  # Claude's own reasoning comes back to Claude ...
    sigs = {b.signature for t in (t1,) for b in t.content if isinstance(b, ThinkingBlock)}
    assert {
        b.get("signature") for b in kept if b["type"] == "thinking"
    } <= sigs  # ... nobody else's
    assert "encrypted_content" not in json.dumps(body) and "thoughtSignature" not in json.dumps(
        body
    )


def test_validators_catch_what_targets_reject() -> None:
    bad_anthropic: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "x", "signature": ""},
                    {"type": "tool_use", "id": "a.b", "name": "t", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "no result"}]},
        ]
    }
    assert len(check_anthropic(bad_anthropic, "m")) == 3
    bad_chat = {
        "messages": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "x" * 41,
                        "type": "function",
                        "function": {"name": "t", "arguments": "{}"},
                    }
                ],
            },
            {"role": "user", "content": "q", "reasoning_content": "r"},
        ]
    }
    assert len(check_openai_chat(bad_chat)) == 3
    bad_responses = {
        "store": True,
        "input": [
            {"type": "reasoning", "id": "rs_x", "encrypted_content": "e"},
            {"type": "function_call_output", "call_id": "c", "output": ""},
        ],
    }
    assert len(check_responses(bad_responses, set())) == 4
    bad_google: dict[str, Any] = {
        "contents": [
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "t", "args": {}}},
                    {"text": "t", "thought": True, "thoughtSignature": "x"},
                ],
            }
        ]
    }
    assert len(check_google(bad_google, set())) == 4
    assert (
        check_ollama(
            {"messages": [{"role": "tool", "content": "", "tool_call_id": "c"}], "options": {}}
        )
        != []
    )
