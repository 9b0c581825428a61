"""Recorded Gemini `streamGenerateContent?alt=sse` streams replayed through the real google-genai
client (its `httpx_async_client` option takes an `httpx2.AsyncClient` with a mocked transport).

Every file in tests/fixtures/gemini-stream/ is covered; expected values were read from the
fixtures and cross-checked against a naive parse of the raw chunks.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import types as gt
from hypothesis import given
from hypothesis import strategies as st

from kit.replay import (
    FIXTURES,
    Recorded,
    Server,
    load_cassette,
    load_chunks,
    run,
    simple_request,
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
from tether.providers.google import GoogleProvider, set_json_path
from tether.providers.google_request import SKIP_SIGNATURE, decode_signature, encode_signature

DIR = FIXTURES / "gemini-stream"
ROUTE = Provenance(provider="google", api="google", model="gemini-3-pro-preview")


def client(server: Server) -> genai.Client:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    return genai.Client(api_key="test-key", http_options=gt.HttpOptions(httpx_async_client=http))


def provider(server: Server, model: str = "gemini-3-pro-preview") -> GoogleProvider:
    return GoogleProvider(model, client=client(server))


def chunks_response(path: Path) -> Recorded:
    body = "".join(f"data: {line}\r\n\r\n" for line in load_chunks(path))
    return Recorded(200, {"content-type": "text/event-stream"}, body.encode())


def raw_chunks(rec: Recorded) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:]) for line in rec.body.decode().splitlines() if line.startswith("data:")
    ]


def raw_parts(rec: Recorded) -> list[dict[str, Any]]:
    return [p for c in raw_chunks(rec) for p in c["candidates"][0]["content"].get("parts", [])]


def native(turn: Turn, model: str = "gemini-3-pro-preview") -> Turn:
    return Turn(
        id=turn.id,
        role="assistant",
        content=turn.content,
        provenance=Provenance(provider="google", api="google", model=model),
        stop_reason=turn.stop_reason,
    )


def test_every_fixture_is_covered() -> None:
    assert {p.name for p in DIR.iterdir()} == {
        "pai-function-call-thought-signature.yaml",
        "pai-thought-parts-stream.yaml",
        "pai-parallel-function-calls-stream.yaml",
        "vai-gemini3-tool-call.chunks.jsonl",
        "vai-gemini3-reasoning.chunks.jsonl",
        "vai-vertex-partial-args-stream.chunks.jsonl",
    }


async def test_function_call_signature_is_replayed_on_the_same_part() -> None:
    recs = load_cassette(DIR / "pai-function-call-thought-signature.yaml")
    server = Server(list(recs))
    p = provider(server)
    tools = (ToolSpec(name="get_country", description="", parameters={"type": "object"}),)
    first = ModelRequest(
        model="gemini-3-pro-preview",
        messages=(text_turn("u1", "user", "What is the capital of the user country?"),),
        tools=tools,
    )
    r1 = await run(p, first)
    (call,) = r1.turn.tool_calls
    raw_sig = raw_parts(recs[0])[0]["thoughtSignature"]
    assert call.name == "get_country" and call.arguments == {}
    assert call.provider_meta == {"thought_signature": raw_sig}
    assert call.id == "t1_call1"  # Gemini sent no id: minted by the assembler
    assert r1.turn.stop_reason == "tool_use"
    assert r1.turn.usage is not None and r1.turn.usage.output_tokens > 0
    history = (
        *first.messages,
        native(r1.turn),
        Turn(id="u2", role="user", content=(tool_result(call.id, "Mexico"),)),
    )
    r2 = await run(p, ModelRequest(model="gemini-3-pro-preview", messages=history, tools=tools))
    assert r2.turn.text == "The capital of Mexico is Mexico City."
    sent = server.requests[1]["contents"]
    model_part = sent[1]["parts"][0]
    assert model_part["functionCall"] == {"id": call.id, "name": "get_country", "args": {}}
    assert decode_signature(model_part["thoughtSignature"]) == decode_signature(raw_sig)
    # The recorded request (pydantic-ai) sent the same signature bytes, URL-safe encoded.
    recorded = load_recorded_request(DIR / "pai-function-call-thought-signature.yaml", 1)
    assert decode_signature(recorded["contents"][1]["parts"][0]["thoughtSignature"]) == (
        decode_signature(raw_sig)
    )
    assert sent[2]["parts"][0]["functionResponse"] == {
        "id": call.id,
        "name": "get_country",
        "response": {"output": "Mexico"},
    }


def load_recorded_request(path: Path, i: int) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(path.read_text())
    return data["interactions"][i]["request"]["parsed_body"]


async def test_thought_parts_and_text_signature() -> None:
    recs = load_cassette(DIR / "pai-thought-parts-stream.yaml")
    server = Server(list(recs) * 2)
    p = provider(server, "gemini-2.5-pro")
    r = await run(p, simple_request("gemini-2.5-pro"))
    parts = raw_parts(recs[0])
    thinking, signature, text = r.turn.content
    assert isinstance(thinking, ThinkingBlock) and thinking.producer == "google"
    assert thinking.text == "".join(x["text"] for x in parts if x.get("thought"))
    assert thinking.signature is None
    assert isinstance(signature, ThinkingBlock) and signature.text == ""
    assert signature.signature == next(
        x["thoughtSignature"] for x in parts if "thoughtSignature" in x
    )
    assert isinstance(text, TextBlock)
    assert text.text == "".join(x["text"] for x in parts if not x.get("thought"))
    last = raw_chunks(recs[0])[-1]["usageMetadata"]
    assert r.turn.usage == Usage(
        input_tokens=last["promptTokenCount"],
        output_tokens=last["candidatesTokenCount"] + last["thoughtsTokenCount"],
    )
    # (google-genai 3.6 sends this sub-object snake_case; the API takes both spellings)
    assert list(server.requests[0]["generationConfig"]["thinkingConfig"].values()) == [True]
    # Replay: the signature goes back on the answer's (first) text part; the unsigned
    # thought summary is not sent.
    history = (
        text_turn("u", "user", "hi"),
        native(r.turn, "gemini-2.5-pro"),
        text_turn("u2", "user", "ok"),
    )
    p2 = provider(server, "gemini-2.5-pro")
    await run(p2, ModelRequest(model="gemini-2.5-pro", messages=history))
    model_parts = server.requests[1]["contents"][1]["parts"]
    assert len(model_parts) == 1
    assert model_parts[0]["text"] == text.text
    assert decode_signature(model_parts[0]["thoughtSignature"]) == decode_signature(
        signature.signature or ""
    )


async def test_parallel_function_calls_three_turns() -> None:
    recs = load_cassette(DIR / "pai-parallel-function-calls-stream.yaml")
    server = Server(list(recs))
    p = provider(server, "gemini-2.0-flash")
    history: list[Turn] = [
        text_turn("u", "user", "What is the temperature of the capital of France?")
    ]
    got: list[Turn] = []
    for k, result in enumerate(["Paris", "30°C"]):
        r = await run(p, ModelRequest(model="gemini-2.0-flash", messages=tuple(history)), f"a{k}")
        got.append(r.turn)
        history.append(native(r.turn, "gemini-2.0-flash"))
        (call,) = r.turn.tool_calls
        history.append(Turn(id=f"r{k}", role="user", content=(tool_result(call.id, result),)))
    r3 = await run(p, ModelRequest(model="gemini-2.0-flash", messages=tuple(history)), "a2")
    assert [(c.name, c.arguments) for t in got for c in t.tool_calls] == [
        ("get_capital", {"country": "France"}),
        ("get_temperature", {"city": "Paris"}),
    ]
    assert r3.turn.text == "The temperature in Paris is 30°C.\n"
    assert "thinkingConfig" not in server.requests[0].get("generationConfig", {})
    # An unsigned call from a non-thinking model is replayed with the placeholder signature
    # (harmless for 2.x, required by Gemini 3).
    part = server.requests[1]["contents"][1]["parts"][0]
    assert decode_signature(part["thoughtSignature"]) == decode_signature(SKIP_SIGNATURE)
    assert r3.turn.usage == Usage(input_tokens=79, output_tokens=12)


async def test_gemini3_tool_call_large_signature() -> None:
    rec = chunks_response(DIR / "vai-gemini3-tool-call.chunks.jsonl")
    r = await run(provider(Server([rec])), simple_request())
    (call,) = r.turn.tool_calls
    raw = next(x for x in raw_parts(rec) if "functionCall" in x)
    assert call.name == raw["functionCall"]["name"]
    assert call.arguments == raw["functionCall"].get("args", {})
    assert call.provider_meta == {"thought_signature": raw["thoughtSignature"]}
    assert len(raw["thoughtSignature"]) > 4000
    assert r.turn.stop_reason == "tool_use"


async def test_gemini3_reasoning_trailing_signature() -> None:
    rec = chunks_response(DIR / "vai-gemini3-reasoning.chunks.jsonl")
    server = Server([rec, rec])
    r = await run(provider(server), simple_request())
    text, sig = r.turn.content
    parts = raw_parts(rec)
    assert isinstance(text, TextBlock) and text.text == "".join(x["text"] for x in parts)
    assert (
        isinstance(sig, ThinkingBlock)
        and sig.text == ""
        and sig.signature == parts[-1]["thoughtSignature"]
    )
    assert r.turn.usage is not None and r.turn.usage.output_tokens == 23 + 302
    history = (text_turn("u", "user", "hi"), native(r.turn), text_turn("u2", "user", "more"))
    await run(provider(server), ModelRequest(model="gemini-3-pro-preview", messages=history))
    (part,) = server.requests[1]["contents"][1]["parts"]
    assert part["text"] == text.text and "thoughtSignature" in part  # trailing: on the text before


async def test_vertex_partial_args_build_whole_calls() -> None:
    rec = chunks_response(DIR / "vai-vertex-partial-args-stream.chunks.jsonl")
    r = await run(provider(Server([rec]), "gemini-3.1-pro-preview"), simple_request())
    calls = r.turn.tool_calls
    assert [(c.name, c.arguments, c.invalid) for c in calls] == [
        ("getWeather", {"location": "Boston"}, None),
        ("getWeather", {"location": "San Francisco"}, None),
    ]
    first_sig = raw_parts(rec)[0]["thoughtSignature"]
    assert calls[0].provider_meta == {"thought_signature": first_sig}
    assert calls[1].provider_meta is None
    assert r.turn.stop_reason == "tool_use"
    assert r.turn.usage == Usage(input_tokens=26, output_tokens=23 + 132)


async def test_cut_stream_is_network_error_and_call_not_finalized() -> None:
    lines = load_chunks(DIR / "vai-vertex-partial-args-stream.chunks.jsonl")[:2]
    body = "".join(f"data: {line}\r\n\r\n" for line in lines).encode()
    r = await run(
        provider(Server([Recorded(200, {"content-type": "text/event-stream"}, body)])),
        simple_request(),
    )
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "network"
    assert all(c.invalid for c in r.turn.tool_calls)


async def test_http_error_is_classified() -> None:
    body = json.dumps(
        {
            "error": {
                "code": 429,
                "message": "Resource has been exhausted",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}
                ],
            }
        }
    ).encode()
    r = await run(
        provider(Server([Recorded(429, {"content-type": "application/json"}, body)])),
        simple_request(),
    )
    err = r.events[-1]
    assert isinstance(err, StreamError)
    assert err.kind == "rate_limited" and err.retry_after_s == 17.0


def test_missing_key_is_auth_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.errors import AuthError

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(AuthError):
        GoogleProvider("gemini-2.5-flash")


def test_foreign_call_signature_is_not_replayed() -> None:
    from tether.providers.google_request import to_gemini_contents
    from tether.wire import build_view

    other = Provenance(provider="google", api="google", model="gemini-2.5-flash")
    turn = Turn(
        id="a",
        role="assistant",
        content=(ToolCallBlock(id="c", name="t", provider_meta={"thought_signature": "QUJD"}),),
        provenance=other,
    )
    view = build_view((text_turn("u", "user", "q"), turn), "google", route=ROUTE)
    contents, _ = to_gemini_contents(view)
    parts = contents[1].parts
    assert parts is not None
    part = parts[0]
    assert part.thought_signature == decode_signature(SKIP_SIGNATURE)


@given(st.binary(min_size=1, max_size=64))
def test_signature_codec_round_trips(raw: bytes) -> None:
    text = encode_signature(raw)
    assert decode_signature(text) == raw
    assert decode_signature(base64.urlsafe_b64encode(raw).decode().rstrip("=")) == raw


@given(st.text(max_size=12))
def test_signature_decoding_never_raises(text: str) -> None:
    """Issue 18: a stored signature that is not base64 (or empty) decodes to None, never an
    exception that would keep the request from being sent."""
    raw = decode_signature(text)
    assert raw is None or (isinstance(raw, bytes) and raw)
    assert decode_signature("") is None


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,5}", fullmatch=True),
        st.lists(st.text(max_size=5), min_size=1, max_size=4),
        max_size=4,
    )
)
def test_set_json_path_concatenates_string_fragments(values: dict[str, list[str]]) -> None:
    target: dict[str, Any] = {}
    for key, fragments in values.items():
        for frag in fragments:
            set_json_path(target, f"$.{key}", frag, append=True)
    assert target == {k: "".join(v) for k, v in values.items()}


def test_set_json_path_nested_and_indexed() -> None:
    target: dict[str, Any] = {}
    set_json_path(target, "$.a.b[1].c", 3, append=True)
    set_json_path(target, "$['x y']", True, append=False)
    assert target == {"a": {"b": [None, {"c": 3}]}, "x y": True}
    with pytest.raises(ValueError):
        set_json_path(target, "a.b", 1, append=False)


def test_thinking_config_only_for_thinking_models() -> None:
    req = ModelRequest(
        model="gemini-2.0-flash",
        messages=(text_turn("u", "user", "q"),),
        thinking_budget_tokens=512,
    )
    _, cfg = GoogleProvider("gemini-2.0-flash", api_key="k").request_config(req)
    assert cfg.thinking_config is None
    req2 = ModelRequest(model="gemini-2.5-flash", messages=req.messages, thinking_budget_tokens=512)
    _, cfg2 = GoogleProvider("gemini-2.5-flash", api_key="k").request_config(req2)
    assert cfg2.thinking_config == gt.ThinkingConfig(include_thoughts=True, thinking_budget=512)
    _, cfg3 = GoogleProvider("gemini-2.5-flash", api_key="k", thinking_budget=64).request_config(
        ModelRequest(model="gemini-2.5-flash", messages=req.messages)
    )
    assert cfg3.thinking_config is not None and cfg3.thinking_config.thinking_budget == 64
