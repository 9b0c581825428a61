"""Live settings rebuild the MCP tool entries (issue 39 row): `Agent.apply_settings` adding,
removing or changing `mcp.servers` takes effect at the next run of the same agent and session,
no restart: a new server's tools are offered, a removed server is stopped and its tools leave
the catalog. Real stdio servers (the demo server, `kit.mcp`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kit.agents import make_agent
from kit.events import results
from kit.mcp import stdio_settings
from tether.agent.events import AgentEvent
from tether.sandbox.detect import detect_sandbox
from tether.testing import ScriptedProvider, call

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(detect_sandbox() is None, reason="no OS sandbox on this machine"),
]


def demo_server(root: Path) -> dict[str, Any]:
    marks = root / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    return stdio_settings(marks).model_dump(mode="json", exclude_unset=True)


def offered(provider: ScriptedProvider, i: int) -> set[str]:
    return {t.name for t in provider.requests[i].tools if t.name.startswith("mcp")}


async def test_adding_and_removing_a_server_rebuilds_the_tools(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    demo = demo_server(root)
    provider = ScriptedProvider(
        [
            "no servers yet",
            call("mcp__demo__add", a=2, b=3),
            "five",
            call("mcp__calc__add", a=1, b=1),
            "two",
            "same",
            "gone",
        ]
    )
    events: list[AgentEvent] = []
    agent = make_agent(provider, root, sandbox="any", events=events)
    async with agent:
        await agent.run("one")
        assert offered(provider, 0) == set()
        agent.apply_settings({"mcp.servers": {"demo": demo}})
        await agent.run("two")
        assert "mcp__demo__add" in offered(provider, 1)
        first = agent.mcp.tools
        agent.apply_settings({"mcp.servers": {"calc": demo}})  # renamed: demo out, calc in
        await agent.run("three")
        names = offered(provider, 3)
        assert "mcp__calc__add" in names and not any(n.startswith("mcp__demo__") for n in names)
        assert agent.mcp.tools is not first and "mcp__demo__add" not in agent.registry
        second = agent.mcp.tools
        await agent.run("four")  # unchanged settings: the same servers, not restarted
        assert agent.mcp.tools is second and "mcp__calc__add" in agent.registry
        agent.apply_settings({"mcp.servers": {}})
        await agent.run("five")
        assert offered(provider, 6) == set() and agent.mcp.tools is None
    texts = [r.content for r in results(events)]
    assert len(texts) == 2 and "5" in texts[0] and "2" in texts[1]
    assert not any(r.is_error for r in results(events))
    assert len(agent.history) == 14  # one session throughout
