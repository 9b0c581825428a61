"""A run-wide cancel (SIGINT / SIGTERM in `tether run`) while a reply's calls run: every call
whose tool had returned keeps its own result, a call still running is killed and told
`CANCELLED_RUNNING`, a call that had not started is told `INTERRUPTED`; the results turn is
persisted before the cancel propagates."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from tether.agent.agent import Agent
from tether.agent.events import ToolResultEvent
from tether.agent.host import Host
from tether.agent.sessions import CANCELLED_RUNNING, INTERRUPTED, AgentSession
from tether.agent.turn.hooks import HookInput, Hooks
from tether.messages import Turn
from tether.session import SessionStore
from tether.testing import Reply, ScriptedProvider, call
from tether.tools.base import tool
from tether.tools.builtin.toolset import builtin_tools


def _stored(store: SessionStore, session_id: str) -> list[Turn]:
    return list(store.load(session_id).turns)


async def test_finished_running_and_waiting_calls_are_told_apart(tmp_path: Path) -> None:
    """Three parallel calls when the cancel lands: `done` had returned (its after_tool hook
    still running), `slow` was running, `held` had not started (its before_tool hook held
    it). Only `done`'s own result is kept as it came."""
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    settling = asyncio.Event()
    running = asyncio.Event()

    @tool(safe=True)
    async def work(name: str) -> str:
        """Work."""
        if name == "slow":
            running.set()
            await asyncio.sleep(60)
        return f"{name} finished"

    async def after(event: HookInput) -> None:
        if event.call is not None and event.call.id == "done":
            settling.set()
            await asyncio.sleep(60)  # the cancel lands here: the call had finished

    async def before(event: HookInput) -> None:
        if event.call is not None and event.call.id == "held":
            await asyncio.sleep(60)  # never started

    calls = (
        call("work", id="done", name="done"),
        call("work", id="slow", name="slow"),
        call("work", id="held", name="held"),
    )
    events: list[Any] = []
    agent = Agent(
        ScriptedProvider([Reply(blocks=calls)]),
        tools=[work],
        root=tmp_path,
        hooks=Hooks(after_tool=[after], before_tool=[before]),
        session=AgentSession(sink=writer),
        host=Host(on_event=events.append),
    )
    run = asyncio.create_task(agent.run("go"))
    await settling.wait()
    await running.wait()
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    results = _stored(store, writer.id)[-1].tool_results
    assert [r.tool_call_id for r in results] == ["done", "slow", "held"]
    assert results[0].text == "done finished" and not results[0].is_error
    assert results[1].is_error and results[1].text == CANCELLED_RUNNING
    assert results[2].is_error and results[2].text == INTERRUPTED
    # the host hears of each call's result once, as stored
    told = {e.tool_call_id: e for e in events if isinstance(e, ToolResultEvent)}
    assert len([e for e in events if isinstance(e, ToolResultEvent)]) == 3
    assert [(told[r.tool_call_id].content, told[r.tool_call_id].is_error) for r in results] == [
        (r.text, r.is_error) for r in results
    ]
    assert CANCELLED_RUNNING.startswith("cancelled while running: it may have had effects")


async def test_a_single_finished_call_keeps_its_result(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    settling = asyncio.Event()

    @tool(safe=True)
    def quick() -> str:
        """Quick."""
        return "quick finished"

    async def after(_event: HookInput) -> None:
        settling.set()
        await asyncio.sleep(60)

    agent = Agent(
        ScriptedProvider([call("quick", id="q")]),
        tools=[quick],
        root=tmp_path,
        hooks=Hooks(after_tool=[after]),
        session=AgentSession(sink=writer),
    )
    run = asyncio.create_task(agent.run("go"))
    await settling.wait()
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    (result,) = _stored(store, writer.id)[-1].tool_results
    assert result.text == "quick finished" and not result.is_error


async def test_a_tool_that_returns_as_the_cancel_lands_keeps_its_result(tmp_path: Path) -> None:
    """The cancel reaches a tool whose work was done (it returns instead of raising, as `bash`
    does once its command's output has ended): the result is stored and the run stops."""
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    inside = asyncio.Event()

    @tool(safe=True)
    async def ending() -> str:
        """Its work is done; it is only tidying up when the cancel comes."""
        inside.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return "ending finished"
        return "never"

    provider = ScriptedProvider([call("ending", id="e"), "not asked"])
    agent = Agent(provider, tools=[ending], root=tmp_path, session=AgentSession(sink=writer))
    run = asyncio.create_task(agent.run("go"))
    await inside.wait()
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    assert run.cancelled() and len(provider.requests) == 1  # the run stopped
    (result,) = _stored(store, writer.id)[-1].tool_results
    assert result.text == "ending finished" and not result.is_error


async def test_bash_returns_the_output_of_a_command_that_had_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that lands after the command's output ended (its exit not yet noticed: the
    shell's exit is polled) returns the output; one that lands while it runs kills it."""
    from tether.tools.builtin import bash as bash_module

    ended = asyncio.Event()
    real_drain = bash_module._drain  # pyright: ignore[reportPrivateUsage]

    async def slow_to_notice(proc: Any, reader: asyncio.Task[None]) -> bool:
        await asyncio.wait({reader})
        ended.set()
        await asyncio.sleep(60)  # the cancel lands here
        return await real_drain(proc, reader)

    monkeypatch.setattr(bash_module, "_drain", slow_to_notice)
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    agent = Agent(
        ScriptedProvider([call("bash", id="b", command="echo done-here")]),
        tools=builtin_tools(),
        root=tmp_path,
        session=AgentSession(sink=writer),
    )
    run = asyncio.create_task(agent.run("go"))
    await ended.wait()
    run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await run
    (result,) = _stored(store, writer.id)[-1].tool_results
    assert "done-here" in result.text and not result.is_error
