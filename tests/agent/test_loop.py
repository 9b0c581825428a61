"""The tool loop with the scripted provider: ordering, persistence, invalid calls, faults,
cancellation, id collisions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, ToolResultEvent
from tether.agent.host import Host
from tether.agent.sessions import CANCELLED_RUNNING, AgentSession
from tether.errors import RunError
from tether.messages import Target, TextBlock, ToolCallBlock, Turn, tool_result, turn_from_dict
from tether.providers.base import (
    StreamError,
    StreamEvent,
    TextDelta,
    TextStart,
    ToolCallDelta,
    ToolCallStart,
)
from tether.session import SessionStore
from tether.testing import ScriptedProvider, UnexpectedRequestError, call
from tether.tools.base import tool
from tether.tools.builtin.toolset import builtin_tools

ONE_ATTEMPT = AgentConfig.model_validate({"retry": {"max_attempts": 1}})


def _stored_turns(path: Path) -> list[Turn]:
    rows = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    return [turn_from_dict(r["turn"]) for r in rows if r["type"] == "turn"]


async def test_read_then_answer_persists_each_turn_before_tools_run(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello there\n")
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    seen_on_disk: list[int] = []

    def probe() -> str:
        """Count stored turns at the moment the tool runs."""
        seen_on_disk.append(len(_stored_turns(writer.path)))
        return "probed"

    provider = ScriptedProvider(
        [call("probe"), call("read", path="notes.txt"), "It says hello there."]
    )
    events: list[AgentEvent] = []
    agent = Agent(
        provider,
        tools=[*builtin_tools(), tool(probe)],
        root=tmp_path,
        host=Host(on_event=events.append),
        session=AgentSession(sink=writer),
    )
    result = await agent.run("What does notes.txt say?")
    assert result.text == "It says hello there." and result.turns == 3
    # user, assistant(call) are on disk when the tool runs
    assert seen_on_disk == [2]
    stored = _stored_turns(writer.path)
    assert [t.role for t in stored] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    read_result = stored[4].tool_results[0]
    assert "hello there" in read_result.text and not read_result.is_error
    # the last request carried the whole history as the wire view, ending with a user turn
    assert provider.requests[-1].messages[-1].role == "user"
    assert next(e.type for e in events) == "session_start"
    assert [e.type for e in events][-1] == "done"


async def test_invalid_arguments_are_never_executed(tmp_path: Path) -> None:
    ran: list[str] = []

    def write_note(path: str, content: str) -> str:
        """Write."""
        ran.append(path)
        return "ok"

    cut = ToolCallBlock(
        id="c1", name="write_note", raw_arguments='{"path": "n.md", "content": "line1\\nli'
    )
    provider = ScriptedProvider([cut, "gave up"])
    agent = Agent(provider, tools=[tool(write_note)], root=tmp_path)
    await agent.run("write it")
    assert ran == []
    result = agent.history[2].tool_results[0]
    assert result.is_error and result.tool_call_id == "c1"
    stored_call = agent.history[1].tool_calls[0]
    assert stored_call.invalid is not None


async def test_provider_error_stops_the_run_and_persists_nothing_partial(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    partial: list[StreamEvent] = [
        TextStart(index=0),
        TextDelta(index=0, text="half an ans"),
        ToolCallStart(index=1, id="x", name="bash"),
        ToolCallDelta(index=1, arguments_delta='{"command": "rm -rf'),
        StreamError(kind="overloaded", message="Overloaded", status_code=200),
    ]
    agent = Agent(
        ScriptedProvider([partial]),
        tools=builtin_tools(),
        root=tmp_path,
        session=AgentSession(sink=writer),
        config=ONE_ATTEMPT,
    )
    with pytest.raises(RunError) as info:
        await agent.run("go")
    assert info.value.kind == "overloaded"
    assert [t.role for t in _stored_turns(writer.path)] == ["user"]


async def test_colliding_call_ids_are_reminted_before_running(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("ls", id="same"), call("ls", id="same"), "done"])
    agent = Agent(provider, tools=builtin_tools(), root=tmp_path)
    await agent.run("list twice")
    ids = [c.id for t in agent.history for c in t.tool_calls]
    assert len(set(ids)) == 2 and ids[0] == "same"
    result_ids = [r.tool_call_id for t in agent.history for r in t.tool_results]
    assert result_ids == ids


async def test_max_turns_stops_the_loop(tmp_path: Path) -> None:
    provider = ScriptedProvider(lambda _r: call("ls"))
    agent = Agent(
        provider, tools=builtin_tools(), root=tmp_path, config=AgentConfig.model_validate({"run": {"max_turns": 3}})
    )
    result = await agent.run("loop")
    assert result.stop_reason == "max_turns" and len(provider.requests) == 3


async def test_cancel_during_tools_appends_interrupted_results(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    started = asyncio.Event()

    async def slow() -> str:
        """Sleep."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    def quick() -> str:
        """Quick."""
        return "quick done"

    from tether.testing import Reply

    reply = Reply(blocks=(TextBlock(text="both"), call("quick", id="q"), call("slow", id="s")))
    events: list[AgentEvent] = []
    agent = Agent(
        ScriptedProvider([reply]),
        tools=[tool(slow), tool(quick)],
        root=tmp_path,
        host=Host(on_event=events.append),
        session=AgentSession(sink=writer),
    )
    task = asyncio.create_task(agent.run("go"))
    await started.wait()
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = _stored_turns(writer.path)
    results = stored[-1].tool_results
    assert [r.tool_call_id for r in results] == ["q", "s"]
    assert results[0].text == "quick done" and not results[0].is_error
    assert results[1].is_error and results[1].text == CANCELLED_RUNNING  # killed while running
    assert any(isinstance(e, ToolResultEvent) and e.tool_call_id == "q" for e in events)


async def test_resume_closes_pending_calls_before_new_user_text(tmp_path: Path) -> None:
    history = [
        Turn(id="u1", role="user", content=()),
        Turn(id="a1", role="assistant", content=(call("ls", id="p1"),)),
    ]
    provider = ScriptedProvider(["ok"])
    agent = Agent(
        provider,
        tools=builtin_tools(),
        root=tmp_path,
        session=AgentSession(history=tuple(history)),
    )
    await agent.run("continue please")
    roles = [(t.role, [b.type for b in t.content]) for t in agent.history]
    assert roles[2] == ("user", ["tool_result"])
    assert agent.history[2].tool_results[0].is_error
    assert roles[3] == ("user", ["text"])


async def test_scripted_provider_fails_loudly_when_exhausted(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider([call("ls")]), tools=builtin_tools(), root=tmp_path)
    with pytest.raises(UnexpectedRequestError):
        await agent.run("x")


async def test_cancel_mid_stream_persists_the_partial_turn_and_closes_its_calls(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    streaming = asyncio.Event()

    class Hanging:
        name = "hang"
        target: Target = "anthropic"
        model = "m"

        async def stream(self, request: object):
            yield TextStart(index=0)
            yield TextDelta(index=0, text="Let me look")
            yield ToolCallStart(index=1, id="c9", name="ls")
            yield ToolCallDelta(index=1, arguments_delta='{"path": "."')
            streaming.set()
            await asyncio.sleep(60)

    events: list[AgentEvent] = []
    agent = Agent(
        Hanging(),
        tools=builtin_tools(),
        root=tmp_path,
        host=Host(on_event=events.append),
        session=AgentSession(sink=writer),
    )  # type: ignore[arg-type]
    task = asyncio.create_task(agent.run("go"))
    await streaming.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = _stored_turns(writer.path)
    assert [t.role for t in stored] == ["user", "assistant", "user"]
    partial = stored[1]
    assert partial.stop_reason == "interrupted" and partial.text == "Let me look"
    (c,) = partial.tool_calls
    assert c.invalid is not None  # never executed
    (r,) = stored[2].tool_results
    assert r.tool_call_id == "c9" and r.is_error
    assert events[-1].type == "done" and events[-1].stop_reason == "cancelled"  # type: ignore[union-attr]


async def test_a_failed_run_still_ends_with_done(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    provider = ScriptedProvider([call("ls"), StreamError(kind="rate_limited", message="slow down")])
    agent = Agent(
        provider,
        tools=builtin_tools(),
        root=tmp_path,
        host=Host(on_event=events.append),
        config=ONE_ATTEMPT,
    )
    with pytest.raises(RunError):
        await agent.run("go")
    types = [e.type for e in events]
    assert types[-2:] == ["error", "done"]
    done = events[-1]
    assert done.stop_reason == "error" and done.turns == 2  # type: ignore[union-attr]
    assert done.message is not None and done.message.tool_calls  # type: ignore[union-attr]


async def test_each_wire_repair_is_reported_once_per_run(tmp_path: Path) -> None:
    history = [
        Turn(id="u1", role="user", content=(TextBlock(text="hi"),)),
        Turn(id="a1", role="assistant", content=(TextBlock(text="ok"),)),
        # an orphan result: its call is nowhere
        Turn(id="u2", role="user", content=(tool_result("ghost", "boo"), TextBlock(text="next"))),
    ]
    events: list[AgentEvent] = []
    provider = ScriptedProvider([call("ls"), call("ls"), "done"])
    agent = Agent(
        provider,
        tools=builtin_tools(),
        root=tmp_path,
        host=Host(on_event=events.append),
        session=AgentSession(history=tuple(history)),
    )
    await agent.run()
    repairs = [e for e in events if e.type == "wire_repair"]
    assert len(repairs) == 1 and repairs[0].kind == "orphan_result"  # type: ignore[union-attr]
    for req in provider.requests:
        assert all(r.tool_call_id != "ghost" for t in req.messages for r in t.tool_results)


async def test_prefill_capability_comes_from_the_provider(tmp_path: Path) -> None:
    history = [
        Turn(id="u1", role="user", content=(TextBlock(text="JSON please"),)),
        Turn(id="a1", role="assistant", content=(TextBlock(text="{"),)),
    ]
    plain = ScriptedProvider(["x"])
    await Agent(
        plain,
        root=tmp_path,
        session=AgentSession(history=tuple(history)),
    ).run()
    assert plain.requests[0].messages[-1].role == "user"  # T12: never assistant-final
    prefill = ScriptedProvider(["x"], supports_prefill=True)
    await Agent(
        prefill,
        root=tmp_path,
        session=AgentSession(history=tuple(history)),
    ).run()
    assert prefill.requests[0].messages[-1].role == "assistant"


async def test_done_says_error_when_the_run_fails_on_a_configuration_mistake(
    tmp_path: Path,
) -> None:
    """A mistake surfacing mid-run (here a provider raising ConfigError) propagates, and the
    closing `done` event says `error`, not `max_turns`."""
    from tether.agent.events import DoneEvent
    from tether.errors import ConfigError

    class Misconfigured(ScriptedProvider):
        def stream(self, request):  # type: ignore[no-untyped-def, override]
            raise ConfigError("thinking budget must be below max_tokens")

    events: list[AgentEvent] = []
    agent = Agent(
        Misconfigured(["unused"]),
        root=tmp_path,
        host=Host(on_event=events.append),
    )
    with pytest.raises(ConfigError):
        await agent.run("hi")
    done = [e for e in events if isinstance(e, DoneEvent)]
    assert len(done) == 1 and done[0].stop_reason == "error"


def test_a_long_run_result_reprs_in_constant_size(tmp_path: Path) -> None:
    """`asyncio.run` reprs its main task's result twice on exit (restoring the SIGINT handler);
    with every turn in the repr that took 0.5 s after a 10,000-turn run."""
    provider = ScriptedProvider([*(call("ls") for _ in range(30)), "done"])
    agent = Agent(provider, tools=builtin_tools(), root=tmp_path)
    result = asyncio.run(agent.run("go"))
    assert len(result.new_turns) == 62
    short = repr(result)
    assert "new_turns" not in short and len(short) < 2_000, len(short)
