"""Language servers through an agent (`Agent`, scripted model, real `ruff server` in the OS
sandbox): the diagnostics of an edit reach the stored tool result the model reads, a subagent
uses its caller's servers, and no server process outlives `aclose` (the process table)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit.agents import make_agent, routed, subagent_agent
from lsp.test_lsp_servers import servers_running
from tether.agent.events import AgentEvent, WarningEvent
from tether.agent.subagents import TASK_TOOL
from tether.lsp.config import find_command
from tether.lsp.manager import LspManager
from tether.lsp.report import block_count
from tether.messages import ToolResultBlock
from tether.testing import ScriptedProvider, call

pytestmark = pytest.mark.slow

LSP = {"timeout": "90s", "severity": "warning", "servers": {"python": {"command": ["ruff", "server"]}}}


@pytest.fixture(autouse=True)
def _ruff() -> None:
    if find_command(["ruff"], os.environ.get("PATH")) is None:
        pytest.skip("ruff is not installed (the dev extra has it)")


def results(agent_history: list[object]) -> list[ToolResultBlock]:
    return [b for t in agent_history for b in getattr(t, "content", ()) if isinstance(b, ToolResultBlock)]


async def test_an_edit_through_the_agent_stores_its_diagnostics_and_aclose_stops_the_server(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    provider = ScriptedProvider(
        [call("edit", path="m.py", old_string="x = 1", new_string="x = nope"), "done"]
    )
    events: list[AgentEvent] = []
    agent = make_agent(
        provider, tmp_path, settings={"lsp": LSP}, sandbox="any", approval="auto",
        builtins=True, events=events,
    )
    await agent.run("fix it")
    (result,) = results(list(agent.history))
    assert block_count(result.text) == (1, 1) and "[F821]" in result.text
    # the model's next request carried it
    sent = provider.requests[-1]
    assert any("[F821]" in str(getattr(t, "content", "")) for t in sent.messages)
    assert servers_running() != []
    assert [e for e in events if isinstance(e, WarningEvent)] == []
    await agent.aclose()
    assert servers_running() == []


async def test_a_subagent_uses_its_callers_servers(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    provider = ScriptedProvider(
        routed(
            {
                "delegate": [call(TASK_TOOL, id="c1", name="fix", prompt="edit m.py"), "done"],
                "edit m.py": [
                    call("edit", path="m.py", old_string="x = 1", new_string="x = nope"),
                    "ok",
                ],
            }
        )
    )
    agent = subagent_agent(provider, tmp_path, settings={"lsp": LSP}, builtins=True)
    await agent.run("delegate")
    manager = agent.tool_context.lsp
    assert isinstance(manager, LspManager)
    assert len(manager.servers) == 1  # the child's edit started it in its caller's manager
    await agent.aclose()  # the caller closes it; the child never did
    assert servers_running() == []
