"""The `tool_start` event (issue 39): a call's start, after its approval and after the calls it
waits for, so a host can tell the running call from the waiting ones. A call that never runs
(denied, refused) has a `tool_result` and no `tool_start`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kit.agents import make_agent
from kit.hosts import ScriptedApprover
from tether import ApprovalDecision
from tether.agent.events import (
    AgentEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolStartEvent,
    event_to_dict,
)
from tether.agent.host import Host
from tether.testing import Reply, ScriptedProvider, call
from tether.tools.base import tool


def _calls(events: list[AgentEvent]) -> list[tuple[str, str]]:
    """(event type, call id) of the call events, in order."""
    out: list[tuple[str, str]] = []
    for e in events:
        if isinstance(e, ToolCallEvent):
            out.append(("tool_call", e.id))
        elif isinstance(e, ToolStartEvent | ToolResultEvent):
            out.append((e.type, e.tool_call_id))
    return out


async def test_a_waiting_call_starts_only_after_the_call_it_waits_for(tmp_path: Path) -> None:
    first_running, release = asyncio.Event(), asyncio.Event()
    events: list[AgentEvent] = []

    @tool()  # not safe: the second call waits for the first (`tools.exec.order`)
    async def step(n: int) -> str:
        """One step."""
        if n == 1:
            first_running.set()
            await release.wait()
        return f"step {n}"

    reply = Reply(blocks=(call("step", id="a", n=1), call("step", id="b", n=2)))
    agent = make_agent(ScriptedProvider([reply, "done"]), tmp_path, tools=[step], events=events)
    run = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(first_running.wait(), 10)
    # a is running, b is waiting: the host can tell them apart
    assert _calls(events) == [("tool_call", "a"), ("tool_call", "b"), ("tool_start", "a")]
    release.set()
    await run
    assert _calls(events) == [
        ("tool_call", "a"),
        ("tool_call", "b"),
        ("tool_start", "a"),
        ("tool_result", "a"),
        ("tool_start", "b"),
        ("tool_result", "b"),
    ]
    start = next(e for e in events if isinstance(e, ToolStartEvent))
    assert event_to_dict(start) == {"type": "tool_start", "tool_call_id": "a", "name": "step"}


async def test_a_denied_call_never_starts(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    provider = ScriptedProvider([call("bash", id="x", command="touch made.txt"), "ok"])
    host = ScriptedApprover(ApprovalDecision.deny("no"))
    agent = make_agent(
        provider,
        tmp_path,
        sandbox="any",
        approval="ask",
        builtins=True,
        host=Host(approver=host, on_event=events.append),
    )
    await agent.run("go")
    assert _calls(events) == [("tool_call", "x"), ("tool_result", "x")]
