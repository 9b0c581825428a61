"""Replay helpers for provider tests: recorded fixtures served through the real SDK clients.

The SDKs (anthropic 2.x, openai 3.x) ride on `httpx2`, a fork of httpx; their `http_client` must be
an `httpx2.AsyncClient`, so the mocked transport is `httpx2.MockTransport`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anthropic
import httpx2
import openai
import yaml

from tether.messages import Provenance, Turn
from tether.providers.assemble import Assembler
from tether.providers.base import ModelRequest, Provider, StreamEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
"""Recorded provider traffic (`tests/fixtures/SOURCES.md` says where each file comes from)."""
ANTHROPIC_DIR = FIXTURES / "anthropic-sse"
OPENAI_DIR = FIXTURES / "openai-chat-sse"


@dataclass
class Recorded:
    """One recorded HTTP response."""

    status: int
    headers: dict[str, str]
    body: bytes


def load_cassette(path: Path) -> list[Recorded]:
    """The responses of a VCR cassette, in order (body from `body.string` or `parsed_body`)."""
    data = yaml.safe_load(path.read_text())
    out: list[Recorded] = []
    for interaction in data["interactions"]:
        resp: dict[str, Any] = interaction["response"]
        raw_headers: dict[str, Any] = resp.get("headers") or {}
        headers: dict[str, str] = {
            k.lower(): cast("list[str]", v)[0] if isinstance(v, list) else v
            for k, v in raw_headers.items()
            if k.lower() in ("content-type", "retry-after")
        }
        body_obj: Any = resp.get("body")
        if isinstance(body_obj, dict) and isinstance(cast("dict[str, Any]", body_obj).get("string"), str):
            body = cast("dict[str, str]", body_obj)["string"].encode()
        else:
            body = json.dumps(resp["parsed_body"]).encode()
        out.append(Recorded(resp["status"]["code"], headers, body))
    return out


def sse(payloads: Iterable[str], *, named: bool) -> bytes:
    """Frame decoded `data:` payloads as SSE (`event: <type>` lines when `named`, as Anthropic
    sends them; its SDK ignores events without a name)."""
    frames: list[str] = []
    for p in payloads:
        if named:
            frames.append(f"event: {json.loads(p)['type']}\ndata: {p}\n\n")
        else:
            frames.append(f"data: {p}\n\n")
    return "".join(frames).encode()


def load_chunks(path: Path) -> list[str]:
    """The payload lines of a `*.chunks.jsonl` file."""
    return [line for line in path.read_text().splitlines() if line.strip()]


def split_messages(payloads: Sequence[str]) -> list[list[str]]:
    """Split Anthropic payloads into one list per message (each ends with `message_stop`)."""
    out: list[list[str]] = [[]]
    for p in payloads:
        out[-1].append(p)
        if json.loads(p)["type"] == "message_stop":
            out.append([])
    return [m for m in out if m]


SSE_HEADERS = {"content-type": "text/event-stream"}

Handler = Callable[[httpx2.Request], httpx2.Response]


@dataclass
class Server:
    """A mocked transport serving queued responses and recording request bodies."""

    responses: list[Recorded] | list[Recorded | Handler]  # a cassette's list is served as it is
    requests: list[dict[str, Any]] = field(default_factory=lambda: [])

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content or b"{}"))
        item = self.responses.pop(0)
        if isinstance(item, Recorded):
            return httpx2.Response(item.status, headers=item.headers, content=item.body)
        return item(request)

    def http_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    def anthropic(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key="test-key", http_client=self.http_client(), max_retries=0
        )

    def openai(self, base_url: str | None = None) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key="test-key", base_url=base_url, http_client=self.http_client(), max_retries=0
        )


def sse_response(body: bytes, status: int = 200) -> Recorded:
    return Recorded(status, dict(SSE_HEADERS), body)


async def collect(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [e async for e in stream]


@dataclass
class Result:
    events: list[StreamEvent]
    turn: Turn
    assembler: Assembler


async def run(provider: Provider, request: ModelRequest, turn_id: str = "t1") -> Result:
    """Stream `request` through `provider`, check the terminal-event contract, assemble."""
    events = await collect(provider.stream(request))
    terminal = [e for e in events if e.type in ("done", "error")]
    assert len(terminal) == 1, events
    assert events[-1] is terminal[0]
    asm = Assembler(turn_id, Provenance(provider=provider.name, api=provider.target, model="m"))
    for e in events:
        asm.feed(e)
    return Result(events, asm.turn(), asm)


def simple_request(model: str = "m", text: str = "hi") -> ModelRequest:
    from tether.messages import text_turn

    return ModelRequest(model=model, messages=(text_turn("u1", "user", text),))
