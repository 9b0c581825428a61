"""Recorded Ollama `/api/chat` NDJSON traffic replayed through the real `ollama` client (an
`httpx.MockTransport`: the ollama client rides on plain httpx).

Covered: `oll-chat-stream-llama3.yaml` (streamed text + the done frame) and
`oll-chat-tool-result-roundtrip.yaml` (the request shape of a tool round trip; its one-object
response is replayed as a one-line stream). `oll-generate-stream-llama3.yaml` is an
`/api/generate` stream, an endpoint the adapter does not use (it has no messages or tools).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import ollama
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.replay import FIXTURES, load_cassette, run, simple_request
from tether.messages import ThinkingBlock, ToolCallBlock, Turn, Usage, text_turn, tool_result
from tether.providers.base import ModelRequest, StreamError, ToolSpec
from tether.providers.ollama import DEFAULT_NUM_CTX, OllamaProvider, OllamaStreamTranslator
from tether.providers.ollama_request import estimate_prompt_tokens, to_ollama_messages

DIR = FIXTURES / "ollama-ndjson"
NDJSON = {"content-type": "application/x-ndjson"}


@dataclass
class OllamaServer:
    bodies: list[bytes]
    status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=lambda: [])

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/chat"
        self.requests.append(json.loads(request.content))
        return httpx.Response(self.status, headers=NDJSON, content=self.bodies.pop(0))

    def provider(self, **kw: Any) -> OllamaProvider:
        client = ollama.AsyncClient(host="http://ollama.test", transport=httpx.MockTransport(self))
        return OllamaProvider("llama3", client=client, **kw)


def frames(*objs: dict[str, Any]) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def done_frame(prompt: int, out: int = 3, reason: str = "stop") -> dict[str, Any]:
    return {
        "model": "m",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": reason,
        "prompt_eval_count": prompt,
        "eval_count": out,
    }


def test_every_fixture_is_accounted_for() -> None:
    assert {p.name for p in DIR.iterdir()} == {
        "oll-chat-stream-llama3.yaml",
        "oll-chat-tool-result-roundtrip.yaml",
        "oll-generate-stream-llama3.yaml",  # /api/generate: not used by the adapter
    }


async def test_chat_stream_text_and_usage() -> None:
    (rec,) = load_cassette(DIR / "oll-chat-stream-llama3.yaml")
    server = OllamaServer([rec.body])
    r = await run(server.provider(), simple_request("llama3", "Tell me a joke about OpenTelemetry"))
    lines = [json.loads(x) for x in rec.body.decode().splitlines() if x.strip()]
    assert r.turn.text == "".join(x["message"]["content"] for x in lines)
    last = lines[-1]
    assert last["done"] is True
    assert r.turn.usage == Usage(
        input_tokens=last["prompt_eval_count"], output_tokens=last["eval_count"]
    )
    assert r.turn.stop_reason == "end_turn"
    assert not r.assembler.warnings
    body = server.requests[0]
    assert body["stream"] is True and body["options"] == {"num_ctx": DEFAULT_NUM_CTX}
    assert body["messages"] == [{"role": "user", "content": "Tell me a joke about OpenTelemetry"}]


async def test_tool_round_trip_request_shape_matches_recording() -> None:
    import yaml

    (rec,) = load_cassette(DIR / "oll-chat-tool-result-roundtrip.yaml")
    recorded = json.loads(
        yaml.safe_load((DIR / "oll-chat-tool-result-roundtrip.yaml").read_text())["interactions"][
            0
        ]["request"]["body"]
    )
    server = OllamaServer([rec.body.strip() + b"\n"])
    call = ToolCallBlock(
        id="c1", name="get_current_weather", arguments={"location": "San Francisco"}
    )
    history = (
        text_turn("u0", "user", "Weather?"),
        Turn(id="a", role="assistant", content=(call,)),
        Turn(
            id="u1",
            role="user",
            content=(tool_result("c1", "The weather in San Francisco is 70 degrees and sunny."),),
        ),
    )
    r = await run(server.provider(), ModelRequest(model="llama3.1", messages=history))
    sent = server.requests[0]["messages"][1:]
    want = recorded["messages"]
    assert sent[0]["tool_calls"] == want[0]["tool_calls"]  # arguments as an object
    assert sent[1]["role"] == want[1]["role"] == "tool" and sent[1]["content"] == want[1]["content"]
    assert sent[1]["tool_name"] == "get_current_weather"
    assert r.turn.text.startswith("This is a simple example")
    assert r.turn.usage == Usage(input_tokens=44, output_tokens=113)


async def test_tool_calls_get_minted_ids_and_thinking() -> None:
    body = frames(
        {
            "model": "m",
            "message": {"role": "assistant", "content": "", "thinking": "Need the tool."},
            "done": False,
        },
        {
            "model": "m",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "read", "arguments": {"path": "a.txt"}}},
                    {"function": {"name": "read", "arguments": {"path": "b.txt"}}},
                ],
            },
            "done": False,
        },
        done_frame(40),
    )
    server = OllamaServer([body])
    r = await run(server.provider(), simple_request("qwen3"), "turn9")
    thinking, c1, c2 = r.turn.content
    assert isinstance(thinking, ThinkingBlock) and thinking.producer == "ollama"
    assert isinstance(c1, ToolCallBlock) and isinstance(c2, ToolCallBlock)
    assert (c1.id, c2.id) == ("turn9_call1", "turn9_call2")
    assert c1.arguments == {"path": "a.txt"} and c2.arguments == {"path": "b.txt"}
    assert r.turn.stop_reason == "tool_use"


async def test_a_request_that_cannot_fit_num_ctx_is_an_overflow_not_sent() -> None:
    big = "word " * 8000  # ~10,000 estimated tokens, num_ctx 2048: Ollama would cut it
    server = OllamaServer([frames(done_frame(2048))])
    r = await run(server.provider(num_ctx=2048), simple_request("m", big))
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "context_overflow"
    assert "2048" in err.message and server.requests == []


async def test_a_prompt_cut_to_num_ctx_is_an_overflow_and_its_reply_dropped() -> None:
    # the estimate fits, but Ollama's own count filled the window: the prompt was cut (or
    # left no room for the reply)
    text = "word " * 1500  # ~1,875 estimated tokens
    server = OllamaServer(
        [
            frames(
                {"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": False},
                done_frame(2040),
            )
        ]
    )
    r = await run(server.provider(num_ctx=2048), simple_request("m", text))
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "context_overflow"
    assert r.assembler.usage is None  # the cut prompt's count is not trusted
    assert server.requests[0]["options"]["num_ctx"] == 2048


@pytest.mark.parametrize(
    ("estimate_tokens", "reported", "num_ctx"),
    [(160_689, 16_387, 200_000), (40_000, 30_000, 65_536)],
)
async def test_a_prompt_cut_below_num_ctx_is_an_overflow_and_its_count_dropped(
    estimate_tokens: int, reported: int, num_ctx: int
) -> None:
    """Ollama's real window was smaller than `num_ctx` (the model's own limit): it evaluated
    far fewer tokens than were sent. Not a normal turn, and the count is not kept (it would
    make the context look small)."""
    text = "word " * (estimate_tokens * 4 // 5)  # 4 characters a token: about the estimate
    server = OllamaServer(
        [
            frames(
                {"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": False},
                done_frame(reported),
            )
        ]
    )
    r = await run(server.provider(num_ctx=num_ctx), simple_request("m", text))
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "context_overflow"
    assert f"evaluated only {reported}" in err.message
    assert r.assembler.usage is None
    assert not any(e.type == "usage" for e in r.events)


async def test_a_count_close_to_the_estimate_is_a_normal_turn() -> None:
    text = "word " * 1500  # ~1,875 estimated tokens; the chat template adds its own
    server = OllamaServer(
        [
            frames(
                {"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": False},
                done_frame(1_700),
            )
        ]
    )
    r = await run(server.provider(num_ctx=8192), simple_request("m", text))
    assert r.events[-1].type == "done" and r.assembler.usage is not None


@given(
    st.integers(min_value=1, max_value=100_000),
    st.integers(min_value=0, max_value=100_000),
    st.integers(min_value=512, max_value=65536),
)
def test_overflow_rule(estimate: int, reported: int, num_ctx: int) -> None:
    t = OllamaStreamTranslator(estimated_prompt_tokens=estimate, num_ctx=num_ctx)
    cut = t.overflow(reported) is not None
    filled = reported >= num_ctx * 0.98
    short = reported < estimate * 0.8 and estimate - reported >= 1024
    assert cut == (filled or short)


def test_num_ctx_follows_the_configured_window() -> None:
    from tether.agent.assembly.build import model_limits

    server = OllamaServer([])
    provider = server.provider()
    assert provider.num_ctx == DEFAULT_NUM_CTX
    assert model_limits(provider, None, lambda _m: None).context_window == DEFAULT_NUM_CTX
    limits = model_limits(provider, 32768, lambda _m: None)
    assert limits.context_window == 32768 and provider.num_ctx == 32768
    params = provider.request_params(simple_request())
    assert params["options"]["num_ctx"] == 32768


async def test_http_error_and_in_stream_error_are_classified() -> None:
    server = OllamaServer(
        [b'{"error":"model \\"nope\\" not found, try pulling it first"}'], status=404
    )
    r = await run(server.provider(), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "provider" and err.status_code == 404
    assert "not found" in err.message
    server = OllamaServer(
        [
            frames(
                {"model": "m", "message": {"role": "assistant", "content": "a"}, "done": False},
                {"error": "an error was encountered while running the model"},
            )
        ]
    )
    r = await run(server.provider(), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError) and "running the model" in err.message


async def test_connection_refused_is_network() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = ollama.AsyncClient(host="http://ollama.test", transport=httpx.MockTransport(refuse))
    r = await run(OllamaProvider("m", client=client), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "network"


async def test_stream_without_done_frame_is_network_error() -> None:
    server = OllamaServer(
        [frames({"model": "m", "message": {"role": "assistant", "content": "a"}, "done": False})]
    )
    r = await run(server.provider(), simple_request())
    err = r.events[-1]
    assert isinstance(err, StreamError) and err.kind == "network"


def test_host_from_env(monkeypatch: Any) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://10.0.0.5:11434")
    assert OllamaProvider("m").host == "http://10.0.0.5:11434"
    assert OllamaProvider("m", base_url="http://x:1").host == "http://x:1"


def test_tools_are_sent_and_counted() -> None:
    spec = ToolSpec(name="t", description="d" * 400, parameters={"type": "object"})
    p = OllamaProvider("m", base_url="http://x:1")
    params = p.request_params(
        ModelRequest(model="m", messages=(text_turn("u", "user", "hi"),), tools=(spec,))
    )
    assert params["tools"][0]["function"]["name"] == "t"
    assert estimate_prompt_tokens(params["messages"], params["tools"]) > 100


@given(st.lists(st.text(max_size=50), max_size=5))
def test_estimate_is_ceil_chars_over_4(texts: list[str]) -> None:
    msgs = to_ollama_messages(tuple(text_turn(f"u{i}", "user", t) for i, t in enumerate(texts)))
    chars = sum(len(m["content"]) for m in msgs)
    assert estimate_prompt_tokens(msgs, []) == -(-chars // 4)
