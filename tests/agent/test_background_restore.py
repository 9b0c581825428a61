"""Issue 40 item 3: after a compaction the model is told which background shells are still
running (a `shell_output` listing among the restored calls); none is listed once none runs;
the agent's close stops them."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.sandbox import sandbox_or_skip
from tether.agent.agent import Agent
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import ModelLimits
from tether.messages import Turn
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools


async def _summary(turns: Sequence[Turn], previous_summary: str | None, focus: str | None) -> str:
    return "summary"


def _agent(tmp_path: Path, script: list[Any]) -> Agent:
    compaction = AutoCompaction(
        ContextMonitor(ModelLimits(context_window=100_000, max_output_tokens=1000)),
        compactor=_summary,
        keep_turns=1,
    )
    return Agent(
        ScriptedProvider(script),
        tools=builtin_tools(),
        root=tmp_path,
        runtime=deterministic(),
        compaction=compaction,
    )


def _restored_listing(agent: Agent) -> str | None:
    for turn in agent.history[-2:]:
        calls = {c.id for c in turn.tool_calls if c.name == "shell_output"}
        if calls:
            (result,) = [r for t in agent.history[-2:] for r in t.tool_results if r.tool_call_id in calls]
            return result.text
    return None


async def test_a_compaction_tells_the_model_which_shells_still_run(tmp_path: Path) -> None:
    sandbox_or_skip()
    mark = f"{os.getpid() % 9000 + 1000}901"
    script = [
        call("bash", command=f"echo hello; sleep {mark}", run_in_background=True),
        call("bash", command="echo done; exit 0", run_in_background=True),
        "started",
        "a",
        "b",
        "c",
    ]
    agent = _agent(tmp_path, script)
    try:
        await agent.run("start the server")
        shells = agent.tool_context.shells
        assert shells is not None and len(shells) == 2
        running, ended = shells.get("bash_1"), shells.get("bash_2")
        assert running is not None and ended is not None
        while ended.running or not running.unread:  # the short one ends; the other writes
            await asyncio.sleep(0.05)
        for p in ("x", "y", "z"):
            await agent.run(p)
        assert await agent.compact_now()
        listing = _restored_listing(agent)
        assert listing is not None, [t.content for t in agent.history[-2:]]
        assert "bash_1: running" in listing and f"sleep {mark}" in listing
        assert "bash_2: exit code 0" in listing
        assert running.unread == len("hello\n")  # listed, not read
    finally:
        await agent.aclose()
    assert not (agent.tool_context.shells and agent.tool_context.shells.running())


async def test_no_listing_when_no_shell_runs(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [c * 800 for c in "abcd"])  # the summary is shorter than they are
    for p in ("w", "x", "y", "z"):
        await agent.run(p)
    assert await agent.compact_now()
    assert _restored_listing(agent) is None


async def test_the_setting_caps_the_agent_and_a_subagent_starts_none(tmp_path: Path) -> None:
    sandbox_or_skip()
    from tether import AgentConfig
    from tether.agent.host import Host

    mark = f"{os.getpid() % 9000 + 1000}902"
    script = [
        call("bash", id="b1", command=f"sleep {mark}", run_in_background=True),
        call("bash", id="b2", command=f"sleep {mark}", run_in_background=True),
        "done",
    ]
    config = AgentConfig.model_validate({"tools": {"max_background": 1}})
    agent = Agent(
        ScriptedProvider(script), config=config, tools=builtin_tools(), root=tmp_path,
        runtime=deterministic(),
    )
    try:
        await agent.run("two servers")
        results = {r.tool_call_id: r for t in agent.history for r in t.tool_results}
        assert not results["b1"].is_error
        assert results["b2"].is_error and "(tools.max_background)" in results["b2"].text
    finally:
        await agent.aclose()
    child = Agent(
        ScriptedProvider([call("bash", id="c1", command="true", run_in_background=True), "ok"]),
        tools=builtin_tools(), root=tmp_path, runtime=deterministic(),
        host=Host(agent_path=("main", "task_1")),
    )
    await child.run("go")
    (result,) = [r for t in child.history for r in t.tool_results]
    assert result.is_error and "only the main agent" in result.text
