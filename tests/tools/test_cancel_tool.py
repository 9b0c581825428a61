"""Agent.cancel_tool: ends one running call with its own message; the run and the other calls go
on; distinct from a run-wide interrupt."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, ToolCallEvent
from tether.agent.host import Host
from tether.agent.sessions import CANCELLED_RUNNING, INTERRUPTED
from tether.agent.turn.tool_calls import TOOL_CANCELLED
from tether.messages import ToolCallBlock
from tether.testing import Reply, ScriptedProvider
from tether.tools import tool
from tether.tools.base import Tool


def _slow_tools(started: dict[str, asyncio.Event]) -> list[Tool]:
    @tool
    async def slow(tag: str) -> str:
        started.setdefault(tag, asyncio.Event()).set()
        await asyncio.sleep(30)
        return "late"

    @tool
    async def quick(tag: str) -> str:
        await asyncio.sleep(0.05)
        return f"quick {tag}"

    return [slow, quick]


async def test_cancel_one_call_while_another_finishes(tmp_path: Path) -> None:
    started: dict[str, asyncio.Event] = {}
    calls = (
        ToolCallBlock(id="s1", name="slow", arguments={"tag": "a"}),
        ToolCallBlock(id="q1", name="quick", arguments={"tag": "b"}),
    )
    provider = ScriptedProvider([Reply(blocks=calls), "done"])
    events: list[AgentEvent] = []
    agent = Agent(
        provider,
        tools=_slow_tools(started),
        root=tmp_path,
        host=Host(on_event=events.append),
    )
    run = asyncio.create_task(agent.run("go"))
    while "a" not in started:
        await asyncio.sleep(0.01)
    assert agent.cancel_tool("nope") is False
    assert agent.cancel_tool("s1") is True
    result = await asyncio.wait_for(run, 5)
    assert result.text == "done"
    results = {r.tool_call_id: r for r in agent.history[-2].tool_results}
    assert results["s1"].is_error and results["s1"].text == TOOL_CANCELLED
    assert results["q1"].text == "quick b" and not results["q1"].is_error
    assert len({TOOL_CANCELLED, INTERRUPTED, CANCELLED_RUNNING}) == 3
    assert [e.id for e in events if isinstance(e, ToolCallEvent)] == ["s1", "q1"]
    assert agent.cancel_tool("s1") is False  # finished calls cannot be cancelled


async def test_single_call_cancel_and_run_cancel_stay_distinct(tmp_path: Path) -> None:
    started: dict[str, asyncio.Event] = {}
    provider = ScriptedProvider(
        [
            Reply(blocks=(ToolCallBlock(id="s1", name="slow", arguments={"tag": "a"}),)),
            Reply(blocks=(ToolCallBlock(id="s2", name="slow", arguments={"tag": "b"}),)),
        ]
    )
    agent = Agent(provider, tools=_slow_tools(started), root=tmp_path)
    run = asyncio.create_task(agent.run("go"))
    while "a" not in started:
        await asyncio.sleep(0.01)
    agent.cancel_tool("s1")
    while "b" not in started:  # the run went on to the next request
        await asyncio.sleep(0.01)
    run.cancel()  # a run-wide interrupt now
    with contextlib.suppress(asyncio.CancelledError):
        await run
    texts = [t.tool_results[0].text for t in agent.history if t.tool_results]
    assert texts == [TOOL_CANCELLED, CANCELLED_RUNNING]
