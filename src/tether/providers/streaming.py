"""The shared tail of every SDK-backed adapter: open the SDK stream, translate, terminate once.

Owns: `drive_stream`, which turns "a coroutine opening an SDK stream" plus "a translator" into the
event contract of `tether.providers.base` (exactly one terminal `StreamDone` / `StreamError`, provider
faults as values, the SDK stream closed on every path).
Does not own: any vendor format (the translators in each adapter), nor fault classification
(`tether.providers.errors`).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import Protocol, TypeVar

from tether.providers.base import StreamDone, StreamError, StreamEvent
from tether.providers.errors import classify_exception, guard_stream

_T = TypeVar("_T")
_T_contra = TypeVar("_T_contra", contravariant=True)


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


async def drive_stream(
    open_stream: Callable[[], Awaitable[AsyncIterable[_T]]],
    translator: Translator[_T],
) -> AsyncIterator[StreamEvent]:
    """Open an SDK stream, translate its items and end with exactly one terminal event.

    Args:
        open_stream: starts the request (e.g. `lambda: client.messages.create(..., stream=True)`).
            A provider fault it raises becomes the only (terminal) event.
        translator: see `Translator`. A terminal event it yields itself (an in-stream error the
            SDK passed through as an item, e.g. Responses `response.failed`) ends the stream.

    Yields:
        Normalized events; the last one is a `StreamDone` or an `StreamError`. `asyncio.CancelledError`
        propagates (it is not a provider fault); translation bugs raise.
    """
    try:
        items = await open_stream()
    except Exception as exc:  # provider faults are values; CancelledError propagates
        yield classify_exception(exc)
        return
    try:
        async for item in guard_stream(items):
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
