"""The thinking level changed at runtime from the library (issue 39 row, the seed's
agent-owned thinking level): `Agent.apply_settings` with `run.thinking` (a budget, a decay) or
`run.effort` (a named level) reaches the very next request of the same agent and session; a
bad value is one ConfigError and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.agents import make_agent
from tether.errors import ConfigError
from tether.testing import ScriptedProvider


async def test_thinking_budget_and_level_change_mid_session(tmp_path: Path) -> None:
    provider = ScriptedProvider(["a", "b", "c", "d"], model="claude-sonnet-4-5")
    agent = make_agent(provider, tmp_path)
    await agent.run("one")
    agent.apply_settings({"run.thinking": {"budget_tokens": 4096}})
    await agent.run("two")
    agent.apply_settings({"run.thinking.budget_tokens": 2048, "run.effort": "high"})
    await agent.run("three")
    agent.apply_settings({"run.thinking": {"budget_tokens": None}, "run.effort": None})
    await agent.run("four")
    sent = [(r.thinking_budget_tokens, r.effort) for r in provider.requests]
    assert sent == [(None, None), (4096, None), (2048, "high"), (None, None)]
    assert len(agent.history) == 8  # one session throughout: nothing restarted


def test_a_bad_thinking_value_changes_nothing(tmp_path: Path) -> None:
    agent = make_agent(ScriptedProvider([], model="claude-sonnet-4-5"), tmp_path)
    agent.apply_settings({"run.thinking": {"budget_tokens": 1024}})
    with pytest.raises(ConfigError):
        agent.apply_settings({"run.thinking": {"budget_tokens": -5}})
    assert agent.parts.config.run.thinking.budget_tokens == 1024
