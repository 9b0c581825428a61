"""`tether run --max-budget-usd`: a run the budget stopped before its first request exits 1 with
one stderr line naming the cap as given (a cap under a cent printed as such), read from the
agent's public config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether.agent.assembly import build
from tether.cli.run import RunOptions, run_command
from tether.providers.base import Provider
from tether.testing import ScriptedProvider


def test_a_budget_stop_names_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    provider = ScriptedProvider(["never sent"])
    provider.model = "claude-sonnet-4-5"  # priced: the estimate is in dollars

    def resolve(_ref: Any, **_kw: Any) -> Provider:
        return provider

    monkeypatch.setattr(build, "resolve_provider", resolve)
    code = run_command(
        RunOptions(
            prompt="hi", model="anthropic/claude-sonnet-4-5", cwd=tmp_path, no_session=True,
            max_budget_usd=0.0001,
        )
    )
    assert code == 1 and provider.requests == []
    line = "tether: stopped: the next request would pass --max-budget-usd $0.0001; exit 1"
    assert line in capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_unpriced_model_under_a_budget_is_said_on_stderr(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
) -> None:
    """The cap cannot hold for a model with no known price: `text` and `json` runs say so on
    stderr (stream-json has the `budget_unpriced` event), once."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    provider = ScriptedProvider(["hi"])
    provider.model = "m"  # no known price

    def resolve(_ref: Any, **_kw: Any) -> Provider:
        return provider

    monkeypatch.setattr(build, "resolve_provider", resolve)
    code = run_command(
        RunOptions(
            prompt="x", model="openai/m", cwd=tmp_path, no_session=True,
            max_budget_usd=0.01, output_format=fmt,
        )
    )
    assert code == 0 and len(provider.requests) == 1
    out = capsys.readouterr()
    line = (
        "tether: warning: no known price for m: the budget of $0.01 cannot hold for its "
        "requests (they are not counted)"
    )
    assert out.err.splitlines().count(line) == 1
    assert '"budget_unpriced"' not in out.out
