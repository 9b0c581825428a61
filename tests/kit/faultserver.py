"""A loopback HTTP server that speaks enough OpenAI Chat Completions SSE and Anthropic Messages
SSE to drive the real adapters, and injects one scripted fault per request.

    with FaultServer([status(429, retry_after="3"), text("hi")]) as server:
        OpenAIChatProvider("m", base_url=server.openai_url, api_key="k")
        AnthropicProvider("m", base_url=server.anthropic_url, api_key="k")
        ...
        server.requests        # every request received: {"path", "body"}, in order

`POST /v1/chat/completions` answers in the OpenAI format, `POST /v1/messages` in Anthropic's;
`GET /v1/models` lists `FaultServer(..., models=[...])` (404 without). The
script is consumed in order, one `Step` per request, whatever the path; a request past the end
gets a 500 `no scripted response` (so a test counting requests sees the extra one). The server
is threaded and started on a free port; tests start and stop it.

Steps (constructors below):
    text(t, headers?)               a complete text reply (with extra response headers)
    tool(name, **args)              a complete reply with one tool call
    max_tokens(t)                   text, then the length stop (OpenAI `length`, Anthropic `max_tokens`)
    status(code, body?, retry_after?, headers?)   an HTTP error with a JSON error body
    error_after_200(error_type, t)  HTTP 200, some text, then an in-stream error event
    reset(t)                        HTTP 200, some text, then a TCP reset (RST)
    malformed(t)                    HTTP 200, some text, then a data line that is not JSON
    truncated_tool(name, args, termination)   a tool call whose argument JSON is cut;
                                    termination "closed" (no stop, no [DONE]), "length" or
                                    "tool_calls" (Anthropic: closed / max_tokens / tool_use)
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

Mode = Literal[
    "text",
    "tool",
    "max_tokens",
    "status",
    "error_after_200",
    "reset",
    "malformed",
    "truncated_tool",
    "stall",
]


@dataclass(frozen=True)
class Step:
    """One scripted response."""

    mode: Mode
    text: str = ""
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=lambda: {})
    error_type: str = "overloaded_error"
    tool_name: str = ""
    tool_args: str = ""
    termination: str = "closed"
    stall_s: float = 0.0


def text(t: str = "done", *, headers: dict[str, str] | None = None) -> Step:
    return Step("text", text=t, headers=dict(headers or {}))


def tool(name: str, **args: Any) -> Step:
    return Step("tool", tool_name=name, tool_args=json.dumps(args))


def max_tokens(t: str) -> Step:
    return Step("max_tokens", text=t)


def status(
    code: int,
    body: dict[str, Any] | None = None,
    *,
    retry_after: str | None = None,
    headers: dict[str, str] | None = None,
) -> Step:
    h = dict(headers or {})
    if retry_after is not None:
        h["retry-after"] = retry_after
    return Step("status", status=code, body=body, headers=h)


def error_after_200(
    error_type: str = "overloaded_error", t: str = "The failing test is caused by"
) -> Step:
    return Step("error_after_200", text=t, error_type=error_type)


def reset(t: str = "half an ans") -> Step:
    return Step("reset", text=t)


def malformed(t: str = "half") -> Step:
    return Step("malformed", text=t)


def stall(t: str = "half", seconds: float = 30.0) -> Step:
    """The first chunk, then nothing for `seconds` with the connection open (a stuck proxy)."""
    return Step("stall", text=t, stall_s=seconds)


def truncated_tool(name: str, args: str, termination: str = "closed") -> Step:
    return Step("truncated_tool", tool_name=name, tool_args=args, termination=termination)


# ---------------------------------------------------------------------------------------------
# Wire formats


def _openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


_OPENAI_USAGE: dict[str, Any] = {
    "id": "chatcmpl-fault",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "choices": [],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}


def openai_events(step: Step) -> Iterator[str | None]:
    """SSE data payloads (None = the fault point: the handler injects it)."""
    if step.mode in ("tool", "truncated_tool"):
        yield json.dumps(
            _openai_chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": step.tool_name, "arguments": ""},
                        }
                    ],
                }
            )
        )
        yield json.dumps(
            _openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": step.tool_args}}]})
        )
        if step.mode == "truncated_tool" and step.termination == "closed":
            return
        finish = step.termination if step.mode == "truncated_tool" else "tool_calls"
    else:
        yield json.dumps(_openai_chunk({"role": "assistant", "content": step.text}))
        if step.mode in ("error_after_200", "reset", "malformed", "stall"):
            yield None
            return
        finish = "length" if step.mode == "max_tokens" else "stop"
    yield json.dumps(_openai_chunk({}, finish))
    yield json.dumps(_OPENAI_USAGE)
    yield "[DONE]"


def anthropic_events(step: Step) -> Iterator[tuple[str, dict[str, Any]] | None]:
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_fault",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    )
    if step.mode in ("tool", "truncated_tool"):
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": step.tool_name,
                    "input": {},
                },
            },
        )
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": step.tool_args},
            },
        )
        if step.mode == "truncated_tool" and step.termination == "closed":
            return
        stop = {"length": "max_tokens", "tool_calls": "tool_use"}.get(step.termination, "tool_use")
        if step.mode == "tool":
            stop = "tool_use"
    else:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": step.text},
            },
        )
        if step.mode in ("error_after_200", "reset", "malformed", "stall"):
            yield None
            return
        stop = "max_tokens" if step.mode == "max_tokens" else "end_turn"
    yield ("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield ("message_stop", {"type": "message_stop"})


def _error_body(step: Step, anthropic: bool) -> dict[str, Any]:
    if step.body is not None:
        return step.body
    etype = {
        401: "authentication_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(step.status, "api_error")
    if anthropic:
        return {"type": "error", "error": {"type": etype, "message": f"injected {step.status}"}}
    return {"error": {"message": f"injected {step.status}", "type": etype, "code": None}}


# ---------------------------------------------------------------------------------------------
# Server


class _Handler(BaseHTTPRequestHandler):
    server: _Server  # pyright: ignore[reportIncompatibleVariableOverride]  # served by _Server only

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        """`GET …/models`: the server's `models` as an OpenAI (and Anthropic) model list; it
        is recorded in `gets`, not in `requests`, and takes no step of the script."""
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        with owner._lock:  # pyright: ignore[reportPrivateUsage]
            owner.gets.append({"path": self.path, "headers": headers})
        if not self.path.split("?")[0].rstrip("/").endswith("/models") or owner.models is None:
            self.send_error(404)
            return
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "test", "type": "model",
             "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
            for m in owner.models
        ]  # fmt: skip
        payload = json.dumps({"object": "list", "data": data, "has_more": False}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        step = self.server.owner.record(self.path, body, headers)
        anthropic = self.path.rstrip("/").endswith("/messages")
        if step is None:
            step = Step(
                "status",
                status=500,
                body={"error": {"message": "no scripted response", "type": "test_error"}},
            )
        if step.mode == "status":
            payload = json.dumps(_error_body(step, anthropic)).encode()
            self.send_response(step.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for k, v in step.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        for k, v in step.headers.items():
            self.send_header(k, v)
        self.end_headers()
        if anthropic:
            self._anthropic(step)
        else:
            self._openai(step)

    def _write(self, data: str) -> None:
        self.wfile.write(data.encode())
        self.wfile.flush()

    def _fault(self, step: Step, anthropic: bool) -> None:
        if step.mode == "stall":
            time.sleep(step.stall_s)
            return
        if step.mode == "reset":
            # SO_LINGER 0: close() sends RST instead of FIN (a reset connection mid-stream).
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if step.mode == "malformed":
            self._write(
                "event: content_block_delta\ndata: {not json\n\n"
                if anthropic
                else "data: {not json\n\n"
            )
            return
        error = {
            "type": step.error_type,
            "message": "Overloaded" if "overload" in step.error_type else "injected",
        }
        if anthropic:
            self._write(
                "event: error\ndata: " + json.dumps({"type": "error", "error": error}) + "\n\n"
            )
        else:
            self._write("data: " + json.dumps({"error": {**error, "code": None}}) + "\n\n")

    def _openai(self, step: Step) -> None:
        for data in openai_events(step):
            if data is None:
                self._fault(step, anthropic=False)
                return
            self._write(f"data: {data}\n\n")

    def _anthropic(self, step: Step) -> None:
        for item in anthropic_events(step):
            if item is None:
                self._fault(step, anthropic=True)
                return
            name, data = item
            self._write(f"event: {name}\ndata: {json.dumps(data)}\n\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FaultServer


class FaultServer:
    """The fault-injection server (see the module docstring).

    Args:
        script: the steps, one per request in order, or a function (request number from 1,
            path, body) → step.
        models: what `GET …/models` lists (None: 404); those requests land in `gets`.
    """

    def __init__(
        self,
        script: Sequence[Step] | Callable[[int, str, Any], Step],
        *,
        models: Sequence[str] | None = None,
    ) -> None:
        self.script = script
        self.models = None if models is None else list(models)
        self.gets: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Step | None:
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers or {}})
            n = len(self.requests)
        if callable(self.script):
            return self.script(n, path, body)
        return self.script[n - 1] if n <= len(self.script) else None

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
