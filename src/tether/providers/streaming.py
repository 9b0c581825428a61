"""The shared machinery of every adapter's stream: block bookkeeping, and driving the SDK stream.

Owns: `BlockCursor` (block indices, the open text / thinking / tool-call blocks and their
closing events, the one error of an incomplete stream) and `drive_stream`, which turns "a
coroutine opening an SDK stream" plus "a translator" into the event contract of
`tether.providers.base` (exactly one terminal `StreamDone` / `StreamError`, provider faults as
values, the SDK stream closed on every path).
Does not own: any vendor format (the translators in each adapter), nor fault classification
(`tether.providers.errors`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
)
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, cast

from tether.providers.base import (
    RedactedThinking,
    StreamDone,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tether.providers.errors import classify_exception, guard_stream

_T = TypeVar("_T")
_T_contra = TypeVar("_T_contra", contravariant=True)

BlockKind = Literal["text", "thinking", "tool"]

TEXT = "text"
"""The key of the text block when a stream has one at a time (Chat Completions, Gemini, Ollama)."""
THINKING = "thinking"
"""The key of the thinking block when a stream has one at a time."""


async def not_an_event_stream(items: object) -> StreamError | None:
    """A `provider` fault when the stream's response is an HTML page (a proxy's `502 Bad
    Gateway` answered with status 200), naming its first line of text; the SDKs read no event
    in it and the run said `stream ended before completion`, pointing at the network (trial5).
    None for any other response."""
    response = getattr(items, "response", None)  # httpx or httpx2: duck-typed
    headers: object = getattr(response, "headers", None)
    if not isinstance(headers, Mapping):
        return None
    ctype = str(cast(Mapping[str, str], headers).get("content-type", ""))
    if ctype.split(";")[0].strip().lower() != "text/html":
        return None
    first = ""
    aread: object = getattr(response, "aread", None)
    if callable(aread):
        with contextlib.suppress(Exception):
            body: object = await cast(Callable[[], Awaitable[object]], aread)()
            if isinstance(body, bytes):
                page = re.sub(r"<[^>]*>", "\n", body.decode("utf-8", "replace"))
                first = next((ln.strip() for ln in page.splitlines() if ln.strip()), "")
    return StreamError(
        kind="provider",
        message=f"the endpoint answered text/html, not an event stream: {first[:200] or '(empty)'}",
    )


def stalled(idle_s: float) -> StreamError:
    """The terminal error of a stream that sent nothing for `idle_s` seconds: a `network` fault
    (retried, then the next model of the chain), as a dropped connection is."""
    return StreamError(
        kind="network",
        message=f"the model sent nothing for {idle_s:g} s (retry.stream_idle_timeout)",
    )


def incomplete(missing: str) -> StreamError:
    """The terminal error of a stream that ended before its completion signal: a `network`
    fault (the connection dropped; the SDKs raise nothing, see `tether.providers.errors`),
    never a `StreamDone`. `missing` names the signal (`"finish_reason"`, `"message_stop"`)."""
    return StreamError(kind="network", message=f"stream ended before completion (no {missing})")


@dataclass(slots=True)
class OpenBlock:
    """One block the cursor has opened and not closed yet.

    Attributes:
        kind: `text`, `thinking` or `tool`.
        index: its event index (unique within the stream).
        signature: thinking: the signature gathered so far (sent on `ThinkingEnd`).
        arguments: tool: whole arguments known up front (JSON text), sent on close when no
            `ToolCallDelta` came.
        got_arguments: tool: a `ToolCallDelta` was emitted.
    """

    kind: BlockKind
    index: int
    signature: str | None = None
    arguments: str | None = None
    got_arguments: bool = False


@dataclass(slots=True)
class BlockCursor:
    """The block bookkeeping of one stream: allocates indices (0, 1, 2, ... in opening order)
    and keeps the open blocks by a key the translator chooses (its vendor's block or item
    index, or `TEXT` / `THINKING` when the vendor has one of each at a time).

    Every method returns the events to yield. A block is started once and ended once: opening
    a key that is open raises `ValueError`; deltas to a key that is not open (or of another
    kind) are dropped; closing a key that is not open yields nothing. `finish` ends every open
    block. A stream that stops before its completion signal ends with `incomplete(...)`, open
    blocks left unended (the attempt is discarded).
    """

    _next: int = 0
    _open: dict[Hashable, OpenBlock] = field(default_factory=lambda: {})

    def new_index(self) -> int:
        """A fresh event index for a block that is not tracked (a complete block)."""
        i = self._next
        self._next += 1
        return i

    def get(self, key: Hashable) -> OpenBlock | None:
        """The open block under `key`, or None."""
        return self._open.get(key)

    def is_open(self, key: Hashable) -> bool:
        return key in self._open

    def _add(self, key: Hashable, block: OpenBlock) -> OpenBlock:
        if key in self._open:
            raise ValueError(f"block {key!r} is already open")
        self._open[key] = block
        return block

    def open_text(self, key: Hashable = TEXT) -> TextStart:
        """Open a text block under `key`."""
        return TextStart(index=self._add(key, OpenBlock("text", self.new_index())).index)

    def open_thinking(
        self,
        key: Hashable = THINKING,
        *,
        producer: str | None,
        item_id: str | None = None,
        signature: str | None = None,
    ) -> ThinkingStart:
        """Open a thinking block under `key` (`signature`: one already known)."""
        block = self._add(key, OpenBlock("thinking", self.new_index(), signature=signature))
        return ThinkingStart(index=block.index, producer=producer, item_id=item_id)

    def open_call(
        self,
        key: Hashable,
        *,
        id: str | None,
        name: str,
        meta: dict[str, Any] | None = None,
        arguments: str | None = None,
    ) -> ToolCallStart:
        """Open a tool call under `key` (`arguments`: whole arguments known up front)."""
        block = self._add(key, OpenBlock("tool", self.new_index(), arguments=arguments))
        return ToolCallStart(index=block.index, id=id, name=name, provider_meta=meta)

    def text(self, delta: str, key: Hashable = TEXT) -> Iterator[StreamEvent]:
        """A text delta, opening a text block under `key` first when none is open."""
        if key not in self._open:
            yield self.open_text(key)
        block = self._open[key]
        if block.kind == "text" and delta:
            yield TextDelta(index=block.index, text=delta)

    def thinking(
        self, delta: str, key: Hashable = THINKING, *, producer: str | None = None
    ) -> Iterator[StreamEvent]:
        """A thinking delta, opening a thinking block under `key` first when none is open."""
        if key not in self._open:
            yield self.open_thinking(key, producer=producer)
        block = self._open[key]
        if block.kind == "thinking" and delta:
            yield ThinkingDelta(index=block.index, text=delta)

    def arguments(self, key: Hashable, delta: str) -> Iterator[StreamEvent]:
        """A fragment of an open call's JSON arguments."""
        block = self._open.get(key)
        if block is not None and block.kind == "tool" and delta:
            block.got_arguments = True
            yield ToolCallDelta(index=block.index, arguments_delta=delta)

    def sign(self, key: Hashable, signature: str, *, append: bool = False) -> None:
        """Set (or extend, `append`) the signature of an open thinking block."""
        block = self._open.get(key)
        if block is not None and block.kind == "thinking":
            block.signature = (block.signature or "") + signature if append else signature

    def close(
        self,
        key: Hashable,
        *,
        arguments: str | None = None,
        encrypted_content: str | None = None,
        summary: tuple[str, ...] = (),
    ) -> Iterator[StreamEvent]:
        """End the block under `key`, if open: `TextEnd`, `ThinkingEnd` (its signature, and
        `encrypted_content` / `summary` when given) or `ToolCallEnd` (preceded by the whole
        `arguments`, or those given at open, when no delta came)."""
        block = self._open.pop(key, None)
        if block is None:
            return
        if block.kind == "text":
            yield TextEnd(index=block.index)
        elif block.kind == "thinking":
            yield ThinkingEnd(
                index=block.index,
                signature=block.signature,
                encrypted_content=encrypted_content,
                summary=summary,
            )
        else:
            whole = arguments if arguments is not None else block.arguments
            if not block.got_arguments and whole:
                yield ToolCallDelta(index=block.index, arguments_delta=whole)
            yield ToolCallEnd(index=block.index)

    def finish(self) -> Iterator[StreamEvent]:
        """End every open block, in opening order."""
        for key in sorted(self._open, key=lambda k: self._open[k].index):
            yield from self.close(key)

    def whole_text(self, text: str) -> Iterator[StreamEvent]:
        """A complete text block at a fresh index."""
        i = self.new_index()
        yield TextStart(index=i)
        yield TextDelta(index=i, text=text)
        yield TextEnd(index=i)

    def whole_thinking(
        self, text: str, *, producer: str | None, signature: str | None = None
    ) -> Iterator[StreamEvent]:
        """A complete thinking block at a fresh index (no delta when `text` is empty: a
        signature-only block)."""
        i = self.new_index()
        yield ThinkingStart(index=i, producer=producer)
        if text:
            yield ThinkingDelta(index=i, text=text)
        yield ThinkingEnd(index=i, signature=signature)

    def whole_call(
        self, *, id: str | None, name: str, arguments: str, meta: dict[str, Any] | None = None
    ) -> Iterator[StreamEvent]:
        """A complete tool call at a fresh index, its arguments in one delta."""
        i = self.new_index()
        yield ToolCallStart(index=i, id=id, name=name, provider_meta=meta)
        yield ToolCallDelta(index=i, arguments_delta=arguments)
        yield ToolCallEnd(index=i)

    def redacted(self, data: str) -> RedactedThinking:
        """A complete redacted thinking block at a fresh index."""
        return RedactedThinking(index=self.new_index(), data=data)


class Translator(Protocol[_T_contra]):
    """Turns one SDK stream item into normalized events; `finish` gives the terminal event once
    the SDK stream is exhausted (a `StreamDone`, or an `StreamError` when the stream was incomplete)."""

    def on_item(self, item: _T_contra, /) -> Iterable[StreamEvent]: ...

    def finish(self) -> StreamEvent: ...


async def _close(items: object) -> None:
    """Close an SDK stream: `close()` (anthropic/openai `AsyncStream`) or `aclose()` (async
    generators, as google-genai and ollama return); sync or async."""
    for name in ("close", "aclose"):
        method = getattr(items, name, None)
        if callable(method):
            result = method()
            if inspect.isawaitable(result):
                await result
            return


def _headers_of(
    holder: object, on_response: Callable[[Mapping[str, str], int], None] | None
) -> None:
    """Hand `holder`'s HTTP response headers (an SDK stream's or status error's `response`) to
    `on_response`; nothing when there is none."""
    if on_response is None:
        return
    response = getattr(holder, "response", None)  # httpx or httpx2 (the SDKs' fork): duck-typed
    headers: object = getattr(response, "headers", None)
    status: object = getattr(response, "status_code", None)
    if isinstance(headers, Mapping) and isinstance(status, int):
        on_response(cast(Mapping[str, str], headers), status)


async def drive_stream(
    open_stream: Callable[[], Awaitable[AsyncIterable[_T]]],
    translator: Translator[_T],
    on_response: Callable[[Mapping[str, str], int], None] | None = None,
    idle_s: float | None = None,
) -> AsyncIterator[StreamEvent]:
    """Open an SDK stream, translate its items and end with exactly one terminal event.

    Args:
        open_stream: starts the request (e.g. `lambda: client.messages.create(..., stream=True)`).
            A provider fault it raises becomes the only (terminal) event.
        translator: see `Translator`. A terminal event it yields itself (an in-stream error the
            SDK passed through as an item, e.g. Responses `response.failed`) ends the stream.
        on_response: given the HTTP response's headers and status once they arrived, a
            refused request's included (the SDKs' streams and status errors carry their
            `httpx.Response`); where rate-limit headers are read (`tether.providers.plan_usage`).
        idle_s: the longest wait for the stream's next item once it is open (the request's
            `stream_idle_timeout_s`); past it the stream is closed and ends with `stalled`
            (a proxy or an overloaded server that stops sending would otherwise hold the run
            for the SDK's read timeout, 10 minutes, per attempt). None or 0: no limit.

    Yields:
        Normalized events; the last one is a `StreamDone` or an `StreamError`. `asyncio.CancelledError`
        propagates (it is not a provider fault); translation bugs raise.
    """
    try:
        items = await open_stream()
    except Exception as exc:  # provider faults are values; CancelledError propagates
        _headers_of(exc, on_response)
        yield classify_exception(exc)
        return
    _headers_of(items, on_response)
    try:
        refused = await not_an_event_stream(items)
        if refused is not None:
            yield refused
            return
        guarded = guard_stream(items)
        while True:
            try:
                if idle_s:  # the wait alone is timed, never the consumer's work between items
                    async with asyncio.timeout(idle_s):
                        item = await anext(guarded)
                else:
                    item = await anext(guarded)
            except StopAsyncIteration:
                break
            except TimeoutError:
                yield stalled(idle_s or 0.0)
                return
            if isinstance(item, StreamError):
                yield item
                return
            for event in translator.on_item(item):
                yield event
                if isinstance(event, StreamDone | StreamError):
                    return
        yield translator.finish()
    finally:
        await _close(items)
