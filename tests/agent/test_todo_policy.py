"""The todo list restated after a compaction (`tether.agent.turn.todo_policy.TodoRestatement`):
a summary that replaces the turn holding the list's latest state is followed by the list
before the next request; a list the compaction kept is not restated; the restatement is the
policy's alone (an agent without it restates nothing, the same agent given it through the
seam does); a failed `todo` call is not the list's state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tether.agent.agent import Agent
from tether.agent.turn.compacting import AutoCompaction
from tether.agent.turn.policy import Policies
from tether.agent.turn.todo_policy import TodoRestatement
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import ModelLimits
from tether.messages import Turn
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools

ITEMS = [{"text": "write tests", "status": "done"}, {"text": "fix bug", "status": "in_progress"}]


async def _summary(
    turns: Sequence[Turn], previous_summary: str | None, focus: str | None
) -> str:
    return "summary"


def _agent(tmp_path: Path, script: list[Any], *, keep_turns: int = 1) -> Agent:
    compaction = AutoCompaction(
        ContextMonitor(ModelLimits(context_window=100_000, max_output_tokens=1000)),
        compactor=_summary,
        keep_turns=keep_turns,
    )
    return Agent(
        ScriptedProvider(script),
        tools=builtin_tools(),
        root=tmp_path,
        runtime=deterministic(),
        compaction=compaction,
    )


def _without_policy(agent: Agent) -> Agent:
    parts = agent.parts
    kept = Policies([p for p in parts.policies if not isinstance(p, TodoRestatement)])
    return Agent.from_parts(replace(parts, policies=kept), agent.session)


def _restated(turns: list[Turn]) -> list[Any]:
    return [
        c.arguments["items"] for t in turns for c in t.tool_calls
        if c.name == "todo" and c.id.startswith("restore_")
    ]


async def _plan_then_compact(agent: Agent) -> int:
    await agent.run("plan it")  # the todo call, then "noted"
    for p in ("x", "y", "z"):
        await agent.run(p)
    assert await agent.compact_now()
    return len(agent.history)


LONG = tuple(c * 800 for c in "abc")
"""Replies long enough that the summary is shorter than the turns it replaces (a manual
compaction that would grow the context writes nothing; user prompts are kept verbatim)."""
SCRIPT = [call("todo", items=ITEMS), "noted", *LONG, "after"]


async def test_a_summary_that_replaced_the_list_is_followed_by_it_before_the_next_request(
    tmp_path: Path,
) -> None:
    agent = _agent(tmp_path, SCRIPT)
    marked = await _plan_then_compact(agent)
    assert _restated(agent.history) == []  # nothing until the next request
    await agent.run("go on")
    assert _restated(agent.history[marked:]) == [ITEMS]
    provider = agent.parts.provider
    assert isinstance(provider, ScriptedProvider)
    sent = provider.requests[-1].messages
    assert [c.arguments["items"] for m in sent for c in m.tool_calls if c.name == "todo"] == [ITEMS]


async def test_the_list_is_restated_once_per_marker(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [*SCRIPT, "again"])
    marked = await _plan_then_compact(agent)
    await agent.run("go on")
    await agent.run("and on")
    assert _restated(agent.history[marked:]) == [ITEMS]


async def test_a_list_the_compaction_kept_is_not_restated(tmp_path: Path) -> None:
    script = [*LONG, call("todo", items=ITEMS), "noted", "after"]
    agent = _agent(tmp_path, script, keep_turns=4)
    for p in ("x", "y", "z"):
        await agent.run(p)
    await agent.run("plan it")  # the list is in the live turn the compaction keeps
    assert await agent.compact_now()
    await agent.run("go on")
    assert _restated(agent.history) == []


async def test_the_restatement_is_the_policy_alone(tmp_path: Path) -> None:
    bare = _without_policy(_agent(tmp_path / "a", SCRIPT))
    marked = await _plan_then_compact(bare)
    await bare.run("go on")
    assert _restated(bare.history[marked:]) == []  # compaction itself restates nothing

    given = _agent(tmp_path / "b", SCRIPT)
    given = Agent.from_parts(_without_policy(given).parts.with_policy(TodoRestatement()))
    marked = await _plan_then_compact(given)
    await given.run("go on")
    assert _restated(given.history[marked:]) == [ITEMS]


async def test_a_failed_todo_call_is_not_the_lists_state(tmp_path: Path) -> None:
    script = [
        call("todo", items=ITEMS), "noted",
        call("todo", items="not a list"), "oops",
        "a", "b", "c", "after",
    ]
    agent = _agent(tmp_path, script)
    await agent.run("plan it")
    await agent.run("change it")
    for p in ("x", "y", "z"):
        await agent.run(p)
    marked = len(agent.history)
    assert await agent.compact_now()
    await agent.run("go on")
    assert _restated(agent.history[marked:]) == [ITEMS]
