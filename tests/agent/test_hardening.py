"""Issue 18 items 10, 17, 20 and 23 at the loop: a retried message reaches the model once,
failed attempts' deltas are discarded, `done` reports the partial turn after a cancel, resume
tells calls that started from calls that never ran, and interrupted calls keep whole arguments."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from kit.agents import make_agent
from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, DiscardEvent, DoneEvent, RetryEvent, TextDeltaEvent
from tether.agent.host import Host
from tether.agent.runtime import Runtime
from tether.agent.sessions import (
    NEVER_RAN,
    STARTED_EVENT,
    STARTED_LOST,
    AgentSession,
    started_call_ids,
)
from tether.messages import TextBlock, ToolCallBlock, Turn, text_turn
from tether.providers.assemble import TRUNCATED, Assembler
from tether.providers.base import (
    StreamDone,
    StreamError,
    TextDelta,
    TextStart,
    ToolCallDelta,
    ToolCallStart,
)
from tether.session import SessionStore
from tether.testing import ScriptedProvider
from tether.tools.builtin.toolset import builtin_tools
from tether.wire.interrupts import is_cancelled_reply
from tether.wire.resume import drop_retried_user_turns


async def _no_sleep(_s: float) -> None:
    return None


def retrying_agent(
    provider: ScriptedProvider, root: Path, events: list[AgentEvent], attempts: int
) -> Agent:
    """An agent whose retries wait no time, its events collected in `events`."""
    return make_agent(
        provider,
        root,
        host=Host(on_event=events.append),
        config=AgentConfig.model_validate({"retry": {"max_attempts": attempts}}),
        runtime=Runtime(sleep=_no_sleep),
    )


def _user_texts(turns: tuple[Turn, ...]) -> list[str]:
    return [
        b.text for t in turns if t.role == "user" for b in t.content if isinstance(b, TextBlock)
    ]


# ---- item 10 -------------------------------------------------------------------------------


async def test_a_message_resent_after_a_failed_request_reaches_the_model_once(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(["done"])
    history = [text_turn("u1", "user", "fix the bug")]  # its request failed: no reply stored
    agent = make_agent(provider, tmp_path, session=AgentSession(history=tuple(history)),)
    await agent.run("fix the bug")
    (request,) = provider.requests
    assert _user_texts(request.messages) == ["fix the bug"]
    assert [t.role for t in agent.history] == ["user", "assistant"]


def test_a_stored_retry_copy_is_dropped_on_replay() -> None:
    turns = (
        text_turn("u1", "user", "fix the bug"),
        text_turn("s", "system", "note"),
        text_turn("u2", "user", "fix the bug"),
        text_turn("a", "assistant", "ok"),
        text_turn("u3", "user", "fix the bug"),  # after a reply: a new message, kept
    )
    assert [t.id for t in drop_retried_user_turns(turns)] == ["u1", "s", "a", "u3"]


# ---- item 17 -------------------------------------------------------------------------------


async def test_a_failed_attempts_deltas_are_followed_by_a_discard(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    provider = ScriptedProvider(
        [
            [
                TextStart(index=0),
                TextDelta(index=0, text="half an ans"),
                StreamError(kind="overloaded", message="busy"),
            ],
            "the answer",
        ]
    )
    agent = retrying_agent(provider, tmp_path, events, 2)
    await agent.run("hi")
    kinds = [e.type for e in events]
    first_delta = kinds.index("text_delta")
    discard = kinds.index("discard")
    assert first_delta < discard < kinds.index("retry")
    d = events[discard]
    assert isinstance(d, DiscardEvent) and d.kind == "overloaded" and d.text_chars == 11
    kept = [e.text for e in events[discard:] if isinstance(e, TextDeltaEvent)]
    assert "".join(kept) == "the answer"
    assert isinstance(events[kinds.index("retry")], RetryEvent)


async def test_done_after_a_cancel_reports_the_persisted_partial_turn(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    gate = asyncio.Event()

    class Slow(ScriptedProvider):
        async def stream(self, request: Any):  # type: ignore[override]
            yield TextStart(index=0)
            yield TextDelta(index=0, text="partial words")
            await gate.wait()
            yield StreamDone(stop_reason="end_turn")

    agent = make_agent(Slow([]), tmp_path, host=Host(on_event=events.append),)
    task = asyncio.ensure_future(agent.run("hi"))
    while not any(isinstance(e, TextDeltaEvent) for e in events):
        await asyncio.sleep(0.01)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.stop_reason == "cancelled"
    assert done.message is not None and done.message.stop_reason == "interrupted"
    assert done.text == "partial words" and done.message is agent.history[-2]
    assert is_cancelled_reply(agent.history[-1])  # the interruption note follows the cut reply


# ---- item 20 -------------------------------------------------------------------------------


async def test_resume_tells_a_started_call_from_one_that_never_ran(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    calls = (
        ToolCallBlock(id="c1", name="bash", arguments={"command": "touch a"}),
        ToolCallBlock(id="c2", name="bash", arguments={"command": "touch b"}),
    )
    writer.append(text_turn("u1", "user", "make files"))
    writer.append(Turn(id="a1", role="assistant", content=calls, stop_reason="tool_use"))
    writer.append_event(STARTED_EVENT, {"tool_call_id": "c1", "name": "bash"})
    writer.close()  # a kill -9 here: c1 ran (its result was lost), c2 never started
    loaded = store.load(writer.id)
    agent = make_agent(
        ScriptedProvider(["ok"]),
        tmp_path,
        session=AgentSession(
            history=loaded.turns,
            sink=store.open_for_append(writer.id),
            started=started_call_ids(loaded.events),
        ),
        tools=builtin_tools(),
    )
    await agent.run(None)
    results = {r.tool_call_id: r.text for r in agent.history[2].tool_results}
    assert results == {"c1": STARTED_LOST, "c2": NEVER_RAN}


async def test_a_start_record_is_persisted_before_the_call_runs(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    seen: list[set[str]] = []

    from tether.tools.base import tool

    @tool
    def probe() -> str:
        """Look at the session file while running."""
        ids = started_call_ids(store.load(writer.id).events)
        seen.append(set(ids or ()))
        return "probed"

    from tether.testing import call

    agent = make_agent(
        ScriptedProvider([call("probe", id="p1"), "done"]), tmp_path, session=AgentSession(sink=writer),tools=[probe]
    )
    await agent.run("go")
    assert seen == [{"p1"}]


# ---- item 23 -------------------------------------------------------------------------------


def test_an_interrupted_call_whose_arguments_arrived_keeps_them() -> None:
    a = Assembler("t1")
    a.feed(ToolCallStart(index=0, id="c1", name="bash"))
    a.feed(ToolCallDelta(index=0, arguments_delta='{"command": '))
    a.feed(ToolCallDelta(index=0, arguments_delta='"ls -la"}'))
    a.feed(ToolCallStart(index=1, id="c2", name="bash"))
    a.feed(ToolCallDelta(index=1, arguments_delta='{"command": "rm'))
    turn = a.turn(stop_reason="interrupted")  # cancelled: no end event, no terminal event
    c1, c2 = turn.tool_calls
    assert c1.arguments == {"command": "ls -la"} and c1.invalid is None
    assert c2.arguments == {} and c2.invalid == TRUNCATED


def test_a_max_tokens_cut_still_invalidates_the_last_call() -> None:
    a = Assembler("t1")
    a.feed(ToolCallStart(index=0, id="c1", name="bash"))
    a.feed(ToolCallDelta(index=0, arguments_delta='{"command": "ls"}'))
    a.feed(StreamDone(stop_reason="max_tokens"))
    (c1,) = a.turn().tool_calls
    assert c1.invalid == TRUNCATED


async def test_a_failed_first_attempt_is_retried_as_attempt_1(tmp_path: Path) -> None:
    """A failed first attempt is retried once, numbered, announced and counted as attempt 1;
    a reply that succeeds at once calls the provider once."""
    ok = ScriptedProvider(["fine"])
    assert (await make_agent(ok, tmp_path).run("hi")).text == "fine"
    assert len(ok.requests) == 1
    events: list[AgentEvent] = []
    flaky = ScriptedProvider([[StreamError(kind="overloaded", message="busy")], "the answer"])
    agent = retrying_agent(flaky, tmp_path, events, 3)
    assert (await agent.run("hi")).text == "the answer"
    retries = [e for e in events if isinstance(e, RetryEvent)]
    assert len(flaky.requests) == 2
    assert [(r.attempt, r.kind) for r in retries] == [(1, "overloaded")]
