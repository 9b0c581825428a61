"""`context.date` pins the date the system prompt states (the embedded model's output follows
the prompt, so a test that asserts its normal path pins the day; the e2e test did not, and
looped on one day and not the day before)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from tether.agent.agent import Agent
from tether.settings.model import AgentConfig
from tether.testing import ScriptedProvider


def _system(tmp_path: Path, overrides: dict[str, object] | None) -> str:
    provider = ScriptedProvider(["ok"])
    Agent.from_settings(tmp_path, model=provider, overrides=overrides).run_sync("hi")
    return str(provider.requests[0].system)


def test_the_setting_pins_the_prompts_date(tmp_path: Path) -> None:
    assert AgentConfig.model_validate({"context": {"date": "2024-02-29"}}).context.date
    assert "2024-02-29" in _system(tmp_path, {"context.date": "2024-02-29"})
    today = _system(tmp_path, None)
    assert date.today().isoformat() in today and "2024-02-29" not in today
