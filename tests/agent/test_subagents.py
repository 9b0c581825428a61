"""Subagents (`task`): the child's answer as the tool result, its own session (header naming the
caller and the call, resumable on its own), depth limit, concurrent children, cancel
propagation, usage roll-up, events tagged with the agent path, the spawn permission through the
approval gate, named subagents."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import pytest

from kit.agents import routed, subagent_agent
from kit.events import first_user_text, results
from kit.hosts import ScriptedApprover
from kit.waits import await_until
from tether import Agent, AgentConfig, ApprovalDecision, tool
from tether.agent.events import (
    AgentEvent,
    DoneEvent,
    SubagentEvent,
    TextDeltaEvent,
    ToolResultEvent,
    event_to_json,
)
from tether.agent.host import Host
from tether.agent.sessions import CANCELLED_RUNNING, AgentSession
from tether.agent.subagents import SUBAGENT_SYSTEM, TASK_TOOL
from tether.messages import Usage
from tether.session import SessionStore
from tether.testing import Reply, ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools


def child_sessions(store: SessionStore, parent_id: str) -> list[str]:
    out: list[str] = []
    for info in store.list():
        header = store.load(info.id).header
        if header.caller_session == parent_id:
            out.append(info.id)
    return out


def test_task_returns_the_childs_answer_and_the_child_has_its_own_session(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "summarize the repo": [
                    call(TASK_TOOL, id="c1", name="look", prompt="count the files"),
                    "The child says: 3 files.",
                ],
                "count the files": ["There are 3 files."],
            }
        )
    )
    store = SessionStore(tmp_path / "sessions")
    writer = store.create("main-1", cwd=str(tmp_path))
    events: list[AgentEvent] = []
    agent = subagent_agent(provider, tmp_path, host=Host(on_event=events.append), session=AgentSession(sink=writer),)
    result = agent.run_sync("summarize the repo")
    writer.close()

    assert result.text == "The child says: 3 files."
    [res] = results(events)
    assert res.content == "There are 3 files." and not res.is_error
    assert res.display["agent_path"] == ["main", "task:c1"]
    # the child's requests: its own system prompt, only its own task in its context
    child_requests = [r for r in provider.requests if first_user_text(r.messages) == "count the files"]
    assert len(child_requests) == 1
    assert child_requests[0].system == SUBAGENT_SYSTEM
    assert len(child_requests[0].messages) == 1
    [child_id] = child_sessions(store, "main-1")
    assert res.display["session_id"] == child_id
    loaded = store.load(child_id)
    assert loaded.header.caller_session == "main-1"
    assert loaded.header.caller_tool_call == "c1"
    assert loaded.header.agent_path == ("main", "task:c1")
    assert loaded.header.parent_session is None  # not a fork: nothing inherited
    assert [t.role for t in loaded.turns] == ["user", "assistant"]
    assert loaded.turns[1].text == "There are 3 files."
    # `sessions list` marks the child with its caller, computed and then from the index
    for _ in range(2):
        callers = {info.id: info.caller for info in store.list()}
        assert callers == {"main-1": None, child_id: "main-1"}


def test_nested_subagents_run_at_depth_2_and_are_refused_at_3(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "top": [call(TASK_TOOL, id="a", name="one", prompt="level 1"), "top done"],
                "level 1": [call(TASK_TOOL, id="b", name="two", prompt="level 2"), "l1 done"],
                "level 2": [call(TASK_TOOL, id="c", name="three", prompt="level 3"), "l2 done"],
                "level 3": ["never asked"],
            }
        )
    )
    store = SessionStore(tmp_path / "sessions")
    writer = store.create("top-1", cwd=str(tmp_path))
    events: list[AgentEvent] = []
    agent = subagent_agent(provider, tmp_path, host=Host(on_event=events.append), session=AgentSession(sink=writer),)
    assert agent.run_sync("top").text == "top done"
    writer.close()

    asked = [first_user_text(r.messages) for r in provider.requests]
    assert "level 3" not in asked  # no agent at depth 3 ever ran
    offered = {
        first_user_text(r.messages): {s.name for s in r.tools} for r in provider.requests
    }
    assert TASK_TOOL in offered["top"] and TASK_TOOL in offered["level 1"]
    assert TASK_TOOL not in offered["level 2"]  # depth 2 = max_depth: not offered
    # the depth-2 agent's call of `task` is an error result, forwarded with its full path
    deep = [
        e.event
        for e in events
        if isinstance(e, SubagentEvent)
        and isinstance(e.event, ToolResultEvent)
        and e.agent_path == ("main", "task:a", "task:b")
    ]
    assert len(deep) == 1 and deep[0].is_error
    # one session per level that ran: depth 1 and depth 2
    [d1] = child_sessions(store, "top-1")
    [d2] = child_sessions(store, d1)
    assert store.load(d2).header.agent_path == ("main", "task:a", "task:b")
    assert child_sessions(store, d2) == []


def test_spawn_is_refused_past_the_configured_depth(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed({"top": [call(TASK_TOOL, id="a", name="x", prompt="sub"), "done"]})
    )
    events: list[AgentEvent] = []
    agent = subagent_agent(
        provider, tmp_path, settings={"agents": {"max_depth": 0}}, host=Host(on_event=events.append),
    )
    agent.run_sync("top")
    [res] = results(events)
    assert res.is_error and "nest at most 0 deep" in res.content
    assert len(provider.requests) == 2  # no child request


def _slow_tool(state: dict[str, int], release: asyncio.Event | None = None) -> Any:
    @tool(safe=True)
    async def slow(label: str) -> str:
        """Wait a little.

        Args:
            label: which child.
        """
        state["active"] += 1
        state["max_active"] = max(state["max_active"], state["active"])
        try:
            if release is not None:
                await release.wait()
            else:
                await asyncio.sleep(0.2)
        finally:
            state["active"] -= 1
        return f"waited {label}"

    return slow


def _three_children_plan() -> dict[str, Any]:
    plan: dict[str, Any] = {
        "fan out": [
            Reply(
                blocks=tuple(
                    call(TASK_TOOL, id=f"k{i}", name=f"job {i}", prompt=f"job {i}")
                    for i in range(3)
                )
            ),
            "all done",
        ]
    }
    for i in range(3):
        plan[f"job {i}"] = [call("slow", id=f"s{i}", label=str(i)), f"child {i} ok"]
    return plan


@pytest.mark.parametrize(("limit", "expected"), [(4, 3), (2, 2), (1, 1)])
def test_children_run_concurrently_up_to_the_limit(
    tmp_path: Path, limit: int, expected: int
) -> None:
    state = {"active": 0, "max_active": 0}
    provider = ScriptedProvider(routed(_three_children_plan()))
    events: list[AgentEvent] = []
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=[_slow_tool(state)],
        settings={"agents": {"max_concurrent": limit}},
        host=Host(on_event=events.append),
        )
    assert agent.run_sync("fan out").text == "all done"
    assert state["max_active"] == expected
    assert sorted(r.content for r in results(events)) == [
        "child 0 ok",
        "child 1 ok",
        "child 2 ok",
    ]


def test_cancelling_the_parent_cancels_the_child_and_persists_its_partial_turn(
    tmp_path: Path,
) -> None:
    state = {"active": 0, "max_active": 0}
    never = asyncio.Event()
    provider = ScriptedProvider(
        routed(
            {
                "parent": [call(TASK_TOOL, id="t1", name="stuck", prompt="block forever")],
                "block forever": [call("slow", id="s1", label="x")],
            }
        )
    )
    store = SessionStore(tmp_path / "sessions")
    writer = store.create("p-1", cwd=str(tmp_path))
    agent = subagent_agent(provider, tmp_path, tools=[_slow_tool(state, never)], session=AgentSession(sink=writer),)

    async def go() -> None:
        task = asyncio.ensure_future(agent.run("parent"))
        await await_until(lambda: state["active"], timeout_s=5, what="the child's tool started")
        assert state["active"] == 1
        assert list(agent.subagents.running) == ["t1"]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    writer.close()
    assert state["active"] == 0  # the child's tool call was cancelled, not left running
    assert agent.subagents.running == {}
    parent = store.load("p-1")
    [task_result] = parent.turns[-1].tool_results
    assert task_result.tool_call_id == "t1" and task_result.is_error
    assert task_result.text == CANCELLED_RUNNING  # killed while it ran
    [child_id] = child_sessions(store, "p-1")
    child = store.load(child_id)
    assert [t.role for t in child.turns] == ["user", "assistant", "user"]
    [slow_result] = child.turns[-1].tool_results
    assert slow_result.tool_call_id == "s1" and slow_result.is_error
    assert slow_result.text == CANCELLED_RUNNING


def test_the_child_session_resumes_on_its_own(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "main job": [call(TASK_TOOL, id="t1", name="sub", prompt="child job"), "ok"],
                "child job": ["first answer", "second answer"],
            }
        )
    )
    store = SessionStore(tmp_path / "sessions")
    writer = store.create("m-1", cwd=str(tmp_path))
    subagent_agent(provider, tmp_path, session=AgentSession(sink=writer),).run_sync("main job")
    writer.close()
    [child_id] = child_sessions(store, "m-1")

    loaded = store.load(child_id)
    again = store.open_for_append(child_id)
    resumed = Agent(
        provider,
        config=AgentConfig.model_validate({"tools": {"approval": "auto"}}),
        root=tmp_path,
        session=AgentSession(history=loaded.turns, sink=again),
    )
    assert resumed.run_sync("and now?").text == "second answer"
    again.close()
    turns = store.load(child_id).turns
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
    assert provider.requests[-1].messages[0] == loaded.turns[0]


def test_child_usage_is_added_to_the_parents_and_reported_separately(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "main": [
                    Reply(
                        blocks=(call(TASK_TOOL, id="t1", name="a", prompt="sub"),),
                        usage=Usage(input_tokens=100, output_tokens=10),
                    ),
                    "final",
                ],
                "sub": [
                    call(TASK_TOOL, id="t2", name="b", prompt="subsub"),
                    "sub done",
                ],
                "subsub": ["leaf done"],
            }
        ),
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    events: list[AgentEvent] = []
    agent = subagent_agent(provider, tmp_path, host=Host(on_event=events.append),)
    result = agent.run_sync("main")
    # own: 100/10 + 1/1; child: 2 requests (1/1 each) + grandchild 1 request (1/1)
    assert result.children_usage == Usage(input_tokens=3, output_tokens=3)
    assert result.usage == Usage(input_tokens=104, output_tokens=14)
    done = [e for e in events if isinstance(e, DoneEvent)]
    assert len(done) == 1 and done[0].children_usage == result.children_usage
    assert done[0].usage == result.usage
    child_done = [
        e.event for e in events if isinstance(e, SubagentEvent) and isinstance(e.event, DoneEvent)
    ]
    assert [d.usage for d in child_done] == [
        Usage(input_tokens=1, output_tokens=1),  # the grandchild ends first
        Usage(input_tokens=3, output_tokens=3),
    ]
    # a run without subagents reports none
    plain = subagent_agent(ScriptedProvider(["hi"]), tmp_path)
    assert plain.run_sync("x").children_usage is None


def test_child_events_are_tagged_with_the_agent_path(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "main": [call(TASK_TOOL, id="t1", name="a", prompt="sub"), "final"],
                "sub": [call(TASK_TOOL, id="t2", name="b", prompt="leaf"), "sub done"],
                "leaf": ["leaf text"],
            }
        )
    )
    events: list[AgentEvent] = []
    subagent_agent(provider, tmp_path, host=Host(on_event=events.append),).run_sync("main")
    tagged = [e for e in events if isinstance(e, SubagentEvent)]
    paths = {e.agent_path for e in tagged}
    assert paths == {("main", "task:t1"), ("main", "task:t1", "task:t2")}
    assert not any(isinstance(e.event, SubagentEvent) for e in tagged)  # never wrapped twice
    leaf_text = [
        e.event.text
        for e in tagged
        if e.agent_path[-1] == "task:t2" and isinstance(e.event, TextDeltaEvent)
    ]
    assert "".join(leaf_text) == "leaf text"
    # the main agent's own events are untagged; the JSONL form carries the path
    own_text = "".join(e.text for e in events if isinstance(e, TextDeltaEvent))
    assert own_text == "final"
    line = json.loads(event_to_json(tagged[0]))
    assert line["type"] == "subagent" and line["agent_path"] == ["main", "task:t1"]
    assert line["event"]["type"] == "session_start"


def test_spawn_goes_through_the_approval_gate_and_the_child_asks_with_its_path(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "main": [call(TASK_TOOL, id="t1", name="a", prompt="sub"), "final"],
                "sub": [call("write", id="w1", path="out.txt", content="x"), "written"],
            }
        )
    )
    host = ScriptedApprover(ApprovalDecision.once(), ApprovalDecision.deny("not there"))
    events: list[AgentEvent] = []
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=builtin_tools(),
        settings={"tools": {"sandbox": "auto", "approval": "ask"}},
        host=Host(approver=host, on_event=events.append),
        )
    agent.run_sync("main")
    assert [(r.kind, r.agent_path) for r in host.seen] == [
        ("spawn", ("main",)),
        ("edit", ("main", "task:t1")),
    ]
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("spawn", ["allow", "deny"])
def test_spawn_permission_allow_skips_the_prompt_and_deny_refuses(
    tmp_path: Path, spawn: str
) -> None:
    provider = ScriptedProvider(
        routed({"main": [call(TASK_TOOL, id="t1", name="a", prompt="sub"), "final"], "sub": ["ok"]})
    )
    host = ScriptedApprover()
    events: list[AgentEvent] = []
    agent = subagent_agent(
        provider,
        tmp_path,
        settings={"tools": {"sandbox": "auto", "approval": "ask"}, "agents": {"spawn": spawn}},
        host=Host(approver=host, on_event=events.append),
        )
    agent.run_sync("main")
    assert host.seen == []
    [res] = results(events)
    if spawn == "allow":
        assert res.content == "ok"
    else:
        assert res.is_error and "agents.spawn = deny" in res.content


def test_named_subagents_bring_their_prompt_and_tools(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        routed(
            {
                "main": [
                    Reply(
                        blocks=(
                            call(TASK_TOOL, id="t1", name="r", prompt="review it", agent="reviewer"),
                            call(TASK_TOOL, id="t2", name="x", prompt="nobody", agent="ghost"),
                        )
                    ),
                    "final",
                ],
                "review it": ["looks fine"],
            }
        )
    )
    events: list[AgentEvent] = []
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=builtin_tools(),
        settings={
            "agents": {
                "reviewer": {"system": "You review.", "tools": ["read", "grep"], "description": "reviews"}
            }
        },
        host=Host(on_event=events.append),
        )
    agent.run_sync("main")
    [child] = [r for r in provider.requests if first_user_text(r.messages) == "review it"]
    assert child.system == "You review."
    assert sorted(s.name for s in child.tools) == ["grep", "read"]
    by_id = {r.tool_call_id: r for r in results(events)}
    assert by_id["t1"].content == "looks fine"
    assert by_id["t2"].is_error and "no subagent named 'ghost'" in by_id["t2"].content
    # the task tool's description lists the named subagents
    main_specs = {s.name: s for s in provider.requests[0].tools}
    assert "reviewer: reviews" in main_specs[TASK_TOOL].description
    properties = main_specs[TASK_TOOL].parameters["properties"]
    assert all(properties[p].get("description") for p in ("name", "prompt", "agent", "tools"))


def test_from_settings_offers_task_unless_turned_off(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    on = Agent.from_settings(tmp_path, model=ScriptedProvider(["x"]))
    assert TASK_TOOL in on.registry.names()
    off = Agent.from_settings(
        tmp_path, model=ScriptedProvider(["x"]), overrides={"agents.task_tool": False}
    )
    assert TASK_TOOL not in off.registry.names()


def test_a_child_gets_its_callers_tools_but_starts_no_mcp_servers_of_its_own(
    tmp_path: Path,
) -> None:
    seen: dict[str, Any] = {}
    holder: dict[str, Agent] = {}

    @tool(safe=True)
    def peek() -> str:
        """Look at the running child."""
        child = cast(Agent, holder["main"].subagents.running["t1"])  # a child is an Agent
        seen["servers"] = dict(child.config.mcp.servers)
        seen["spawn"] = child.config.agents.spawn
        return "peeked"

    provider = ScriptedProvider(
        routed(
            {
                "main": [call(TASK_TOOL, id="t1", name="a", prompt="sub"), "final"],
                "sub": [call("peek", id="p1"), "child done"],
            }
        )
    )
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=[peek],
        settings={
            "agents": {"spawn": "allow"},
            "mcp": {"servers": {"files": {"command": "no-such-server", "start": "lazy"}}},
        },
    )
    holder["main"] = agent
    assert agent.run_sync("main").text == "final"
    assert seen == {"servers": {}, "spawn": "allow"}
    assert "files" in agent.config.mcp.servers  # the caller's own config is unchanged


def test_the_agent_tree_parent_children_name_description_and_a_library_child(
    tmp_path: Path,
) -> None:
    """The tree API (audit row "agent tree"): while a named child runs, its caller lists it
    in `children()`, the child's `parent` is the caller and it carries its name and
    description; after, no children. `run_child` starts one from the library like `task`."""
    provider = ScriptedProvider(
        routed(
            {
                "main": [
                    Reply(
                        blocks=(
                            call(TASK_TOOL, id="t1", name="r", prompt="review it", agent="reviewer"),
                        )
                    ),
                    "final",
                ],
                "review it": ["looks fine"],
                "from the library": ["done by hand"],
            }
        )
    )
    seen: list[tuple[Any, ...]] = []
    holder: list[Agent] = []

    def watch(event: AgentEvent) -> None:
        if isinstance(event, SubagentEvent) and holder:
            (child,) = holder[0].subagents.children()
            node = child.subagents
            seen.append((node.parent is holder[0], node.name, node.description, child.agent_path))

    agent = subagent_agent(
        provider,
        tmp_path,
        settings={"agents": {"reviewer": {"system": "You review.", "description": "reviews"}}},
        host=Host(on_event=watch),
    )
    holder.append(agent)
    assert agent.subagents.parent is None and agent.subagents.name is None
    agent.run_sync("main")
    assert seen and all(s[:3] == (True, "reviewer", "reviews") for s in seen)
    assert seen[0][3][-1] == "task:t1"
    assert agent.subagents.children() == ()
    out = asyncio.run(agent.subagents.run_child("from the library"))
    assert not out.is_error and out.content == "done by hand"
    refused = asyncio.run(agent.subagents.run_child("x", agent="ghost"))
    assert refused.is_error and "no subagent named 'ghost'" in str(refused.content)
