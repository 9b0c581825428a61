"""A prompt whose run is cancelled before any reply (TUI Esc, SIGINT in `tether run`) reaches the
model again only as the cancelled request it was: the next request carries it, then the
interruption note, then the new prompt (`tether.wire.interrupts`), in the live agent and after a
resume from the stored session alike."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.cli.run import _drive  # pyright: ignore[reportPrivateUsage]
from tether.messages import TextBlock, Turn, text_turn
from tether.providers.base import ModelRequest, StreamEvent
from tether.session import SessionStore
from tether.testing import ScriptedProvider
from tether.tui.bang import bang_context
from tether.wire import check_pairing
from tether.wire.interrupts import INTERRUPTED_REQUEST_TEXT

CANCELLED = "SLEEP5 CALL write oops.txt"
NEXT = "never mind, just say hi"


@dataclass(kw_only=True)
class HangingFirst(ScriptedProvider):
    """Its first request hangs until cancelled (`asked` is set once it arrived)."""

    asked: asyncio.Event | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if not self.requests:
            self.requests.append(request)
            assert self.asked is not None
            self.asked.set()
            await asyncio.sleep(60)
        async for event in super().stream(request):
            yield event


def _user_text(turn: Turn) -> str:
    return "\n\n".join(b.text for b in turn.content if isinstance(b, TextBlock))


def _assert_sent_as_interrupted(provider: ScriptedProvider) -> None:
    messages = provider.requests[-1].messages
    assert check_pairing(messages) == []
    users = [t for t in messages if t.role == "user"]
    assert len(users) == 1 and len(messages) == 1
    assert _user_text(users[0]) == f"{CANCELLED}\n\n{INTERRUPTED_REQUEST_TEXT}\n\n{NEXT}"


async def test_a_prompt_cancelled_before_any_reply_is_sent_as_interrupted(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    asked = asyncio.Event()
    provider = HangingFirst(script=["unused", "hi"], asked=asked)
    agent = Agent(provider, tools=[], root=tmp_path, session=AgentSession(sink=writer))
    run = asyncio.create_task(agent.run(CANCELLED))
    await asyncio.wait_for(asked.wait(), 30)
    run.cancel()  # what the TUI's Esc does
    with pytest.raises(asyncio.CancelledError):
        await run
    result = await agent.run(NEXT)
    assert result.answer == "hi"
    _assert_sent_as_interrupted(provider)
    stored = store.load(writer.id).turns
    assert [t.role for t in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].stop_reason == "interrupted" and not stored[1].content


@pytest.mark.usefixtures("handlers_back")
def test_sigint_then_resume_sends_the_cancelled_prompt_as_interrupted(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))

    async def cancelled() -> int:
        asked = asyncio.Event()
        provider = HangingFirst(script=["unused"], asked=asked)
        agent = Agent(provider, tools=[], root=tmp_path, session=AgentSession(sink=writer))
        task = asyncio.create_task(_drive(agent, CANCELLED))
        await asyncio.wait_for(asked.wait(), 30)
        os.kill(os.getpid(), signal.SIGINT)
        return await task

    assert asyncio.run(cancelled()) == 130
    writer.close()  # the process ends here in `tether run`
    provider = ScriptedProvider(["hi"])
    resumed = Agent(
        provider, tools=[], root=tmp_path, session=AgentSession.resume(store, writer.id)
    )
    assert asyncio.run(resumed.run(NEXT)).answer == "hi"
    _assert_sent_as_interrupted(provider)


def _died_after(store: SessionStore, *turns: Turn) -> str:
    """A session as a process killed before any reply leaves it (kill -9, a closed terminal,
    a failed request): its turns, then nothing; nobody stored `cancelled_reply`."""
    writer = store.create(cwd=str(store.root))
    for turn in turns:
        writer.append(turn)
    writer.close()
    return writer.id


def test_a_prompt_left_unanswered_by_a_crash_is_sent_as_interrupted(tmp_path: Path) -> None:
    """The third trial: after a SIGHUP or kill -9 before any reply, the next prompt was glued
    to the unanswered one and the model acted on it again."""
    store = SessionStore(tmp_path / "store")
    sid = _died_after(store, text_turn("u1", "user", CANCELLED))
    provider = ScriptedProvider(["hi"])
    agent = Agent(provider, tools=[], root=tmp_path, session=AgentSession.resume(store, sid))
    assert asyncio.run(agent.run(NEXT)).answer == "hi"
    _assert_sent_as_interrupted(provider)
    stored = store.load(sid).turns
    assert [t.role for t in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].stop_reason == "interrupted" and not stored[1].content


def test_a_retry_or_a_shell_context_is_no_interruption(tmp_path: Path) -> None:
    """The same prompt again after a failed request is a retry (sent once); a TUI `!cmd`'s
    output is context for the next message, not an unanswered request."""
    store = SessionStore(tmp_path / "store")
    sid = _died_after(store, text_turn("u1", "user", CANCELLED))
    provider = ScriptedProvider(["hi"])
    agent = Agent(provider, tools=[], root=tmp_path, session=AgentSession.resume(store, sid))
    asyncio.run(agent.run(CANCELLED))
    assert [_user_text(t) for t in provider.requests[-1].messages] == [CANCELLED]
    context = bang_context("ls", "a.txt", 1000)
    sid = _died_after(store, text_turn("u1", "user", context))
    provider = ScriptedProvider(["hi"])
    agent = Agent(provider, tools=[], root=tmp_path, session=AgentSession.resume(store, sid))
    asyncio.run(agent.run(NEXT))
    (sent,) = provider.requests[-1].messages
    assert _user_text(sent) == f"{context}\n\n{NEXT}"


@dataclass(kw_only=True)
class CutFirst(ScriptedProvider):
    """Its first reply streams `PARTIAL` and then hangs until cancelled (`asked` is set once the
    text went out)."""

    asked: asyncio.Event | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        from tether.providers.base import TextDelta, TextStart

        if not self.requests:
            self.requests.append(request)
            yield TextStart(index=0)
            yield TextDelta(index=0, text=PARTIAL)
            assert self.asked is not None
            self.asked.set()
            await asyncio.sleep(60)
        async for event in super().stream(request):
            yield event


PARTIAL = "Writing oops.txt now, first I"


async def test_a_reply_cut_by_a_cancel_is_followed_by_the_interruption_note(
    tmp_path: Path,
) -> None:
    # the third trial: Esc after partial streamed text sent the cancelled prompt, the partial
    # text and the new prompt with no note; the model could not tell its reply was cut
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    asked = asyncio.Event()
    provider = CutFirst(script=["unused", "hi"], asked=asked)
    agent = Agent(provider, tools=[], root=tmp_path, session=AgentSession(sink=writer))
    run = asyncio.create_task(agent.run(CANCELLED))
    await asyncio.wait_for(asked.wait(), 30)
    await asyncio.sleep(0.05)  # the text reaches the assembler
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert (await agent.run(NEXT)).answer == "hi"

    def sent(provider: ScriptedProvider) -> list[tuple[str, str]]:
        messages = provider.requests[-1].messages
        assert check_pairing(messages) == []
        return [(t.role, _user_text(t)) for t in messages]

    expected = [
        ("user", CANCELLED),
        ("assistant", PARTIAL),
        ("user", f"{INTERRUPTED_REQUEST_TEXT}\n\n{NEXT}"),
    ]
    assert sent(provider) == expected
    stored = store.load(writer.id).turns
    assert [(t.role, t.stop_reason) for t in stored[:3]] == [
        ("user", None),
        ("assistant", "interrupted"),
        ("assistant", "interrupted"),
    ]
    # the same after a resume from the stored session
    writer.close()
    again = ScriptedProvider(["hi again"])
    resumed = Agent(again, tools=[], root=tmp_path, session=AgentSession.resume(store, writer.id))
    assert (await resumed.run("and now?")).answer == "hi again"
    assert sent(again)[:3] == expected
