"""Esc on a prompt before any reply, then a new prompt: the model gets the cancelled prompt,
the interruption note, then the new prompt (`tether.wire.interrupts`); it got both prompts
glued into one message and acted on the cancelled one again. Resumed, the transcript shows
the cancel where it was."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kit.tui import SIZE, idle, notes, scripted_app, send
from tether.messages import TextBlock
from tether.providers.base import ModelRequest, StreamEvent
from tether.session import SessionStore
from tether.wire import check_pairing
from tether.wire.interrupts import INTERRUPTED_REQUEST_TEXT

CANCELLED = 'SLEEP5 CALL write {"path":"oops.txt","content":"x"}'
NEXT = "never mind, just say hi"


async def test_esc_before_any_reply_sends_the_prompt_as_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path / "sessions")
    app, provider = scripted_app(tmp_path, ["hi"], store=store)
    asked = asyncio.Event()
    scripted = provider.stream

    async def stream(request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not asked.is_set():  # the first request hangs until Esc cancels it
            asked.set()
            await asyncio.sleep(60)
        async for event in scripted(request):
            yield event

    monkeypatch.setattr(provider, "stream", stream)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, CANCELLED)
        await asyncio.wait_for(asked.wait(), 10)
        await pilot.press("escape")
        await idle(app, pilot)
        assert "cancelled" in notes(app)
        await send(pilot, NEXT)
        await idle(app, pilot)
        await app.action_quit()
    (request,) = provider.requests
    assert check_pairing(request.messages) == []
    (user,) = request.messages
    texts = [b.text for b in user.content if isinstance(b, TextBlock)]
    assert texts == [CANCELLED, INTERRUPTED_REQUEST_TEXT, NEXT]
    resumed, _ = scripted_app(tmp_path, [], store=store, resume="s1")
    async with resumed.run_test(size=SIZE) as pilot:  # the transcript shows it as Esc did
        await pilot.pause()
        rows = [type(r).__name__ for r in resumed.query("UserRow, NoteRow, AssistantRow")]
        assert rows[:4] == ["UserRow", "NoteRow", "UserRow", "AssistantRow"], rows
        assert "cancelled" in notes(resumed)
        await resumed.action_quit()


async def test_esc_after_partial_text_sends_the_note_after_the_cut_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.providers.base import TextDelta, TextStart

    store = SessionStore(tmp_path / "sessions")
    app, provider = scripted_app(tmp_path, ["hi"], store=store)
    streamed = asyncio.Event()
    scripted = provider.stream

    async def stream(request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not streamed.is_set():  # the first reply streams a little, then hangs until Esc
            yield TextStart(index=0)
            yield TextDelta(index=0, text="thinking......")
            streamed.set()
            await asyncio.sleep(60)
        async for event in scripted(request):
            yield event

    monkeypatch.setattr(provider, "stream", stream)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, CANCELLED)
        await asyncio.wait_for(streamed.wait(), 10)
        await pilot.pause(0.1)
        await pilot.press("escape")
        await idle(app, pilot)
        await send(pilot, NEXT)
        await idle(app, pilot)
        await app.action_quit()
    (request,) = provider.requests
    assert check_pairing(request.messages) == []
    sent = [(t.role, [b.text for b in t.content if isinstance(b, TextBlock)]) for t in request.messages]
    assert sent == [
        ("user", [CANCELLED]),
        ("assistant", ["thinking......"]),
        ("user", [INTERRUPTED_REQUEST_TEXT, NEXT]),
    ]
