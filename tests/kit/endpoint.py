"""A loopback model endpoint that records what reaches it, headers included: `Endpoint`.

OpenAI-compatible (`GET <base>/models`, `POST <base>/chat/completions`, streamed) and
Anthropic-compatible (`GET <base>/v1/models`, `POST <base>/v1/messages`, streamed): every
request's method, path, headers and body are kept in `requests`; a chat request is answered
with the text `answer`. `status` (e.g. 401) answers every request with that error instead.
The fault-injection server (`kit.faultserver`) scripts failures; this one checks what a
client sends (keys, custom headers, auth schemes) and what a connection test reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kit.faultserver import anthropic_events, openai_events, text


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


@dataclass
class Endpoint:
    """The server (a context manager: started on enter, stopped on exit).

    Args:
        models: the model ids a listing returns.
        answer: the text of every chat answer.
        status: answer every request with this HTTP error status instead (None: serve).
    """

    models: Sequence[str] = ("m1", "m2")
    answer: str = "pong"
    status: int | None = None
    requests: list[Seen] = field(default_factory=list[Seen])

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL (an OpenAI-compatible client appends `/models`, `/chat/completions`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def root(self) -> str:
        """The server root (an Anthropic client appends `/v1/messages`)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Endpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(owner: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def _record(self, body: Any) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            owner.requests.append(Seen(self.command, self.path, headers, body))

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._record(None)
            if owner.status is not None:
                self._json(owner.status, {"error": {"message": "refused", "type": "test"}})
            elif self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "type": "model"} for m in owner.models]
                self._json(200, {"object": "list", "data": data, "has_more": False})
            else:
                self._json(404, {"error": {"message": "not found", "type": "test"}})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            self._record(body)
            if owner.status is not None:
                self._json(owner.status, {"error": {"message": "refused", "type": "test"}})
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            if self.path.rstrip("/").endswith("/messages"):
                events = _anthropic(owner.answer)
            else:
                events = _openai(owner.answer)
            for event in events:
                self.wfile.write(event.encode())
                self.wfile.flush()

    return Handler


def _openai(answer: str) -> list[str]:
    """The streamed reply `answer`, as the fault server writes a text step."""
    return [f"data: {d}\n\n" for d in openai_events(text(answer)) if d is not None]


def _anthropic(answer: str) -> list[str]:
    return [
        f"event: {item[0]}\ndata: {json.dumps(item[1])}\n\n"
        for item in anthropic_events(text(answer))
        if item is not None
    ]
