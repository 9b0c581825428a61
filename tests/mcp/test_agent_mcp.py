"""The front door starts MCP servers for library users too: an `Agent` whose config names a
server (as `Agent.from_settings` and `tether run` build it) offers its tools from the first run,
`run_sync` stops the servers before it returns (each call runs in a fresh event loop, so the
next one starts them again), `async with agent` keeps them for several runs, and a server that
fails is a `warning` event, not an error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from kit.agents import make_agent
from kit.events import results
from kit.mcp import stdio_settings
from tether import Agent
from tether.agent.events import AgentEvent, WarningEvent
from tether.sandbox.detect import detect_sandbox
from tether.testing import ScriptedProvider, call

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(detect_sandbox() is None, reason="no OS sandbox on this machine"),
]


def demo_server(tmp_path: Path) -> dict[str, Any]:
    """The demo server, writing its markers inside the working folder (the sandbox lets a
    stdio server write only there)."""
    marks = tmp_path / "work" / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    return stdio_settings(marks).model_dump(mode="json", exclude_unset=True)


def mcp_agent(
    provider: ScriptedProvider, tmp_path: Path, servers: dict[str, Any], events: list[AgentEvent]
) -> Agent:
    """An agent in `tmp_path/work` whose settings name `servers`; its events go to `events`."""
    root = tmp_path / "work"
    root.mkdir(exist_ok=True)
    return make_agent(provider, root, settings={"mcp": {"servers": servers}}, events=events)


def test_run_sync_offers_the_servers_tools_and_stops_them(tmp_path: Path) -> None:
    demo = demo_server(tmp_path)
    provider = ScriptedProvider(
        [call("mcp__demo__add", a=2, b=3), "five", call("mcp__demo__add", a=1, b=1), "two"]
    )
    events: list[AgentEvent] = []
    agent = mcp_agent(provider, tmp_path, {"demo": demo}, events)
    assert agent.run_sync("add").text == "five"
    offered = [t.name for t in provider.requests[0].tools]
    assert "mcp__demo__add" in offered
    assert "mcp__demo__add" not in agent.registry  # stopped, tools withdrawn
    assert agent.run_sync("again").text == "two"  # a fresh loop: started again
    texts = [r.content for r in results(events)]
    assert len(texts) == 2 and "5" in texts[0] and "2" in texts[1]
    assert not any(r.is_error for r in results(events))


async def test_async_with_keeps_servers_across_runs(tmp_path: Path) -> None:
    demo = demo_server(tmp_path)
    provider = ScriptedProvider(
        [call("mcp__demo__add", a=2, b=3), "five", call("mcp__demo__add", a=4, b=4), "eight"]
    )
    events: list[AgentEvent] = []
    agent = mcp_agent(provider, tmp_path, {"demo": demo}, events)
    async with agent:
        assert "mcp__demo__add" in agent.registry
        conn = agent.mcp.tools
        await agent.run("add")
        await agent.run("again")
        assert agent.mcp.tools is conn  # one start for both runs
    assert "mcp__demo__add" not in agent.registry
    assert [r.is_error for r in results(events)] == [False, False]


def test_a_failing_server_is_a_warning(tmp_path: Path) -> None:
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    provider = ScriptedProvider(["fine"])
    events: list[AgentEvent] = []
    agent = mcp_agent(provider, tmp_path, {"broken": broken}, events)
    assert agent.run_sync("hi").text == "fine"
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.kind for w in warnings] == ["mcp_server_failed"]
    assert "broken" in warnings[0].message


def test_tools_only_limits_the_servers_tools_as_it_limits_the_others(tmp_path: Path) -> None:
    """`tools.only` (a Job's `tools`) names the tools offered whatever their kind: an MCP
    server's tools not named are not offered (nor `mcp_read_resource`), like built-in ones."""
    demo = demo_server(tmp_path)
    provider = ScriptedProvider([call("mcp__demo__add", a=2, b=3), "five"])
    events: list[AgentEvent] = []
    root = tmp_path / "work"
    root.mkdir(exist_ok=True)
    agent = make_agent(
        provider,
        root,
        settings={"mcp": {"servers": {"demo": demo}}, "tools": {"only": ["read", "mcp__demo__add"]}},
        builtins=True,
        events=events,
    )
    assert agent.run_sync("add").text == "five"
    assert sorted(t.name for t in provider.requests[0].tools) == ["mcp__demo__add", "read"]
    assert [r.is_error for r in results(events)] == [False]
