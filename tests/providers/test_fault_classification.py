"""Provider faults → exactly one terminal StreamError with the right kind, through both real SDKs.

Faults are produced by a mocked httpx2 transport: HTTP statuses, an error event inside a 200
stream, a data line that is not JSON, a connection reset / read timeout mid-body, a refused
connection. Cancellation must propagate, never become an StreamError.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from kit.replay import Handler, Server, collect, run, simple_request, sse, sse_response
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import Provider, StreamError
from tether.providers.errors import classify_exception, classify_status, parse_retry_after
from tether.providers.openai_chat import OpenAIChatProvider

ProviderFactory = Callable[[Server], Provider]


def make_anthropic(server: Server) -> Provider:
    return AnthropicProvider("m", client=server.anthropic())


def make_openai(server: Server) -> Provider:
    return OpenAIChatProvider("m", client=server.openai())


BOTH = pytest.mark.parametrize("make", [make_anthropic, make_openai], ids=["anthropic", "openai"])

ANTHROPIC_START = json.dumps(
    {
        "type": "message_start",
        "message": {
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }
)
ANTHROPIC_TEXT = [
    json.dumps(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    ),
    json.dumps(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hel"},
        }
    ),
]
OPENAI_TEXT = [
    json.dumps(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}],
        }
    )
]


def partial_body(make: ProviderFactory) -> bytes:
    if make is make_anthropic:
        return sse([ANTHROPIC_START, *ANTHROPIC_TEXT], named=True)
    return sse(OPENAI_TEXT, named=False)


def json_error(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Handler:
    def handler(_req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, json=body, headers=headers or {})

    return handler


async def error_of(make: ProviderFactory, handler: Handler) -> StreamError:
    result = await run(make(Server([handler])), simple_request())
    err = result.assembler.error
    assert err is not None, result.events
    assert result.assembler.done is None
    return err


@BOTH
async def test_401_is_auth(make: ProviderFactory) -> None:
    err = await error_of(
        make,
        json_error(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": "invalid x-api-key"},
            },
        ),
    )
    assert (err.kind, err.status_code) == ("auth", 401)
    assert err.message == "invalid x-api-key"


@BOTH
async def test_403_is_auth(make: ProviderFactory) -> None:
    err = await error_of(make, json_error(403, {"error": {"message": "forbidden"}}))
    assert err.kind == "auth"


@BOTH
async def test_429_with_retry_after_seconds(make: ProviderFactory) -> None:
    err = await error_of(
        make,
        json_error(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
            {"retry-after": "12"},
        ),
    )
    assert (err.kind, err.status_code, err.retry_after_s) == ("rate_limited", 429, 12.0)


@BOTH
async def test_429_with_retry_after_http_date(make: ProviderFactory) -> None:
    import time

    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    err = await error_of(
        make, json_error(429, {"error": {"message": "rate limited"}}, {"retry-after": when})
    )
    assert err.kind == "rate_limited"
    assert err.retry_after_s is not None and 100 < err.retry_after_s <= 121


@BOTH
async def test_500_is_provider(make: ProviderFactory) -> None:
    err = await error_of(
        make, json_error(500, {"error": {"type": "api_error", "message": "Internal"}})
    )
    assert (err.kind, err.status_code) == ("provider", 500)


@BOTH
async def test_529_is_overloaded(make: ProviderFactory) -> None:
    err = await error_of(
        make,
        json_error(
            529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        ),
    )
    assert (err.kind, err.status_code) == ("overloaded", 529)


@BOTH
@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "This model's maximum context length is 128000 tokens.",
    ],
)
async def test_400_prompt_too_long_is_context_overflow(make: ProviderFactory, message: str) -> None:
    err = await error_of(
        make, json_error(400, {"error": {"type": "invalid_request_error", "message": message}})
    )
    assert (err.kind, err.status_code) == ("context_overflow", 400)


@BOTH
async def test_plain_400_is_provider(make: ProviderFactory) -> None:
    err = await error_of(
        make, json_error(400, {"error": {"type": "invalid_request_error", "message": "bad field"}})
    )
    assert err.kind == "provider"


async def test_anthropic_in_stream_overload_after_200() -> None:
    error = {
        "type": "error",
        "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_1",
    }
    body = sse([ANTHROPIC_START, *ANTHROPIC_TEXT], named=True)
    body += f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    result = await run(make_anthropic(Server([sse_response(body)])), simple_request())
    err = result.assembler.error
    assert err is not None
    assert (err.kind, err.status_code, err.message) == ("overloaded", 200, "Overloaded")
    assert result.turn.text == "Hel"  # the partial turn is kept, marked error
    assert result.turn.stop_reason == "error"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"message": "Overloaded", "type": "overloaded_error"}, "overloaded"),
        ({"message": "The server is overloaded, try later", "type": "server_error"}, "overloaded"),
        (
            {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"},
            "rate_limited",
        ),
        ({"message": "boom", "type": "server_error"}, "provider"),
    ],
)
async def test_openai_in_stream_error_after_200(error: dict[str, Any], kind: str) -> None:
    body = sse([*OPENAI_TEXT, json.dumps({"error": error})], named=False)
    result = await run(make_openai(Server([sse_response(body)])), simple_request())
    err = result.assembler.error
    assert err is not None
    assert (err.kind, err.status_code) == (kind, 200)
    assert result.turn.text == "Hel"


@BOTH
async def test_malformed_data_line(make: ProviderFactory) -> None:
    body = partial_body(make) + b"event: content_block_delta\ndata: {not json\n\n"
    err = await error_of(
        make,
        lambda _r: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=body
        ),
    )
    assert err.kind == "malformed"


def streaming(body: bytes, exc: Exception) -> Handler:
    async def chunks() -> AsyncIterator[bytes]:
        yield body
        raise exc

    def handler(_req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=chunks())

    return handler


@BOTH
@pytest.mark.parametrize(
    "exc",
    [
        httpx2.ReadError("connection reset by peer"),
        httpx2.ReadTimeout("timed out"),
        httpx2.RemoteProtocolError("peer closed connection without sending complete message body"),
    ],
    ids=["reset", "timeout", "protocol"],
)
async def test_transport_fault_mid_body_is_network(make: ProviderFactory, exc: Exception) -> None:
    result = await run(make(Server([streaming(partial_body(make), exc)])), simple_request())
    err = result.assembler.error
    assert err is not None and err.kind == "network"
    assert result.turn.text == "Hel"


@BOTH
async def test_connection_refused_is_network(make: ProviderFactory) -> None:
    def refuse(_req: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused")

    err = await error_of(make, refuse)
    assert err.kind == "network"


@BOTH
async def test_clean_end_without_terminal_event_is_network(make: ProviderFactory) -> None:
    err = await error_of(make, lambda _r: sse_response_handler(partial_body(make)))
    assert err.kind == "network" and "before completion" in err.message


def sse_response_handler(body: bytes) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


@BOTH
async def test_cancellation_propagates(make: ProviderFactory) -> None:
    started = asyncio.Event()

    async def hang() -> AsyncIterator[bytes]:
        yield partial_body(make)
        started.set()
        await asyncio.sleep(3600)
        yield b""

    server = Server(
        [
            lambda _r: httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=hang()
            )
        ]
    )
    task = asyncio.create_task(collect(make(server).stream(simple_request())))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- unit level -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (401, None, "auth"),
        (403, "forbidden", "auth"),
        (429, {"error": {"code": 429, "message": "Provider returned error"}}, "rate_limited"),
        (529, None, "overloaded"),
        (
            200,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "overloaded",
        ),
        (None, {"message": "x", "type": "invalid_request_error", "status_code": 400}, "provider"),
        (None, {"message": "x", "code": "context_length_exceeded"}, "context_overflow"),
        (413, {"error": {"message": "prompt is too long"}}, "context_overflow"),
        (
            413,
            {"error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}},
            "provider",
        ),
        (404, {"error": {"message": "model not found"}}, "provider"),
        (503, {"error": {"message": "unavailable"}}, "provider"),
    ],
)
def test_classify_status(status: int | None, body: object, kind: str) -> None:
    assert classify_status(status, body) == kind


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"Retry-After": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert (
        parse_retry_after(
            {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=lambda: 1445412470.0
        )
        == 10.0
    )
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


def test_classify_bare_exceptions() -> None:
    assert classify_exception(json.JSONDecodeError("Expecting value", "x", 0)).kind == "malformed"
    assert classify_exception(httpx2.ReadError("reset")).kind == "network"
    assert classify_exception(TimeoutError()).kind == "network"
    assert classify_exception(RuntimeError("?")).kind == "provider"
