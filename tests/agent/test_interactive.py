"""The library side of the interactive session: steering, a mid-session model switch, and a
manual compaction (`Agent.steer`, `Agent.switch_model`, `Agent.compact_now`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.agent.events import AgentEvent, CompactionEndEvent
from tether.agent.host import Host
from tether.agent.turn.tool_calls import STEERED_SKIP
from tether.errors import ConfigError
from tether.providers.base import ModelRequest
from tether.settings.model import AgentConfig
from tether.testing import Reply, ScriptedProvider, call, deterministic
from tether.tools.base import tool
from tether.wire.markers import is_marker


async def test_a_steering_message_joins_at_the_next_turn_boundary(tmp_path: Path) -> None:
    gate = asyncio.Event()
    agent_ref: list[Agent] = []

    @tool(safe=True)
    async def slow() -> str:
        """Wait."""
        agent_ref[0].steer("use tabs, not spaces")
        gate.set()
        return "done"

    provider = ScriptedProvider([call("slow"), "ok"])
    agent = Agent(provider, tools=[slow], root=tmp_path, runtime=deterministic())
    agent_ref.append(agent)
    await agent.run("go")
    assert gate.is_set()
    second: ModelRequest = provider.requests[1]
    assert second.messages[-1].role == "user"
    assert "use tabs, not spaces" in second.messages[-1].text
    assert "use tabs" not in provider.requests[0].messages[-1].text
    assert agent.pending_steering == ()


async def test_steering_left_when_the_run_ends_stays_queued(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider(["ok"]), root=tmp_path, runtime=deterministic())
    agent.steer("  ")  # blank: nothing queued
    assert agent.pending_steering == ()
    agent.steer("later")
    assert agent.take_steering() == ("later",) and agent.pending_steering == ()


async def test_switch_model_changes_the_provider_and_the_window(tmp_path: Path) -> None:
    first = ScriptedProvider(["one"], context_window=100_000)
    agent = Agent(first, root=tmp_path, runtime=deterministic())
    await agent.run("a")
    with pytest.raises(ConfigError):
        agent.switch_model("nosuchprovider/x")
    assert agent.provider is first  # a failed switch changes nothing
    agent.switch_model("ollama/llama3.2")
    assert agent.provider.name == "ollama" and agent.provider is not first
    assert agent.compaction is not None
    assert agent.compaction.monitor.limits == agent.limits


async def test_compact_now_appends_a_marker_with_the_focus(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    long = ["one" * 300, "two" * 300, "three" * 300]  # the summary is shorter than they are
    provider = ScriptedProvider([*long, "summary of it", "after"])
    agent = Agent(
        provider,
        root=tmp_path,
        runtime=deterministic(),
        host=Host(on_event=events.append),
    )
    for prompt in ("a", "b", "c"):
        await agent.run(prompt)
    assert await agent.compact_now("keep the file names")
    assert any(is_marker(t) for t in agent.history)
    assert "keep the file names" in str(provider.requests[3])
    end = [e for e in events if isinstance(e, CompactionEndEvent)]
    assert end and end[-1].marker_id is not None
    await agent.run("d")  # the run goes on after the marker
    off = Agent(ScriptedProvider([]), root=tmp_path, compaction=False)
    assert not await off.compact_now()


async def test_steering_skips_the_calls_still_waiting(tmp_path: Path) -> None:
    """The user steers while the reply's calls wait for the approval prompt: the calls that
    have not started are skipped with their own result (not "interrupted", not "never ran"),
    the run goes on, and the model reads the message right after the results."""
    ran: list[str] = []
    agent_ref: list[Agent] = []

    @tool()
    def touch(name: str) -> str:
        """Touch a file."""
        ran.append(name)
        return f"touched {name}"

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        if request.call.id == "c1":
            agent_ref[0].steer("wait: use b.txt only")
        return ApprovalDecision.once()

    calls = (call("touch", id="c1", name="a.txt"), call("touch", id="c2", name="c.txt"))
    provider = ScriptedProvider([Reply(blocks=calls), "ok"])
    agent = Agent(
        provider,
        tools=[touch],
        root=tmp_path,
        runtime=deterministic(),
        config=AgentConfig.model_validate({"tools": {"approval": "ask"}}),
        host=Host(approver=approver),
    )
    agent_ref.append(agent)
    result = await agent.run("touch a and c")
    assert result.text == "ok" and ran == []
    skipped = agent.history[2].tool_results
    assert [r.tool_call_id for r in skipped] == ["c1", "c2"]
    assert all(r.is_error and r.text == STEERED_SKIP for r in skipped)
    second = provider.requests[1].messages
    assert second[-1].role == "user" and "use b.txt only" in second[-1].text
    assert agent.pending_steering == ()
