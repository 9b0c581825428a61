"""The reasoning effort on a live agent: `apply_settings({"run.effort": ...})` is the
library's way to set it at runtime; the next request carries it, the session records it (a
resume keeps it: `tests/cli/test_cli_effort.py`), and a model without reasoning gets one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.agents import make_agent
from tether.agent import user_controls
from tether.agent.sessions import EFFORT_EVENT, AgentSession
from tether.errors import ConfigError
from tether.session import SessionStore
from tether.testing import ScriptedProvider


async def test_apply_settings_effort_reaches_the_next_request_and_the_session(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(["a", "b"], model="claude-sonnet-4-5")
    store = SessionStore(tmp_path / "sessions")
    session = AgentSession.new(store, cwd=tmp_path)
    agent = make_agent(provider, tmp_path, session=session)
    assert user_controls.effort_of(agent) is None
    await agent.run("one")
    agent.apply_settings({"run.effort": "max"})
    assert user_controls.effort_of(agent) == "max"
    await agent.run("two")
    assert [r.effort for r in provider.requests] == [None, "max"]
    session.close()
    events = [e for e in store.load(session.id or "").events if e.kind == EFFORT_EVENT]
    assert [e.data for e in events] == [{"effort": "max"}]


def test_a_bad_level_is_refused(tmp_path: Path) -> None:
    agent = make_agent(ScriptedProvider([]), tmp_path)
    with pytest.raises(ConfigError):
        agent.apply_settings({"run.effort": "extreme"})


def test_a_model_without_reasoning_is_one_line(tmp_path: Path) -> None:
    agent = make_agent(ScriptedProvider([], model="gpt-4o"), tmp_path)
    line = user_controls.set_effort(agent, "high")
    assert line is not None and "gpt-4o" in line and "\n" not in line
    assert agent.notes == []  # said by the host that set it (the TUI's note), not twice
    built = make_agent(
        ScriptedProvider([], model="gpt-4o"), tmp_path, settings={"run": {"effort": "low"}}
    )
    assert [n for n in built.notes if "no reasoning" in n] == [
        "effort low: gpt-4o has no reasoning to set; the effort is not sent"
    ]
