"""`tether compact SESSION`: appends one marker, prints tokens before/after; refuses bad input.
`tether run` wiring: --no-compact / --context-window and the recall tool."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tether import Agent, AgentConfig, AutoCompaction
from tether.agent.assembly import build
from tether.cli.agent_setup import ContextOptions, flag_overrides
from tether.cli.main import app
from tether.messages import Provenance, text_turn
from tether.providers.fallback import ModelRef
from tether.session import SessionStore
from tether.testing import ScriptedProvider
from tether.wire import build_view
from tether.wire.markers import SUMMARY_HEADER, is_marker

from .helpers import TASK, history, request_text


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _summarizer(monkeypatch: pytest.MonkeyPatch) -> ScriptedProvider:
    provider = ScriptedProvider(lambda r: "## Goal\nrefactor the parser")

    def resolve(
        model: str, base_url: str | None = None, providers: object = None
    ) -> ScriptedProvider:
        return provider

    monkeypatch.setattr(build, "resolve_provider", resolve)
    return provider


def test_compact_appends_a_marker_and_prints_tokens(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore()
    with store.create("s1", cwd=str(home)) as w:
        for t in history(6, result_chars=2_000):
            w.append(t)
    provider = _summarizer(monkeypatch)
    out = CliRunner().invoke(app, ["compact", "s1", "--focus", "the lexer", "--model", "x/y"])
    assert out.exit_code == 0, out.output
    row = json.loads(next(x for x in out.stdout.splitlines() if x.startswith("{")))
    assert row["session_id"] == "s1" and row["turns_replaced"] == 12
    assert row["tokens_after"] < row["tokens_before"] / 4
    assert "the lexer" in request_text(provider.requests[0])
    loaded = store.load("s1")
    assert is_marker(loaded.turns[-1]) and loaded.turns[-1].id == row["marker_id"]
    view = build_view(loaded.turns, "anthropic")
    assert view[0].content[0].text == TASK  # type: ignore[union-attr]
    assert SUMMARY_HEADER in view[0].content[1].text  # type: ignore[union-attr]


def test_compact_refuses_nothing_to_summarize_and_unknown_sessions(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore()
    with store.create("s2", cwd=str(home)) as w:
        w.append(text_turn("t", "user", "only the task"))
    provider = _summarizer(monkeypatch)
    out = CliRunner().invoke(app, ["compact", "s2"])
    assert out.exit_code == 1 and "nothing to summarize" in out.output  # a no-op, not malformed
    assert provider.requests == [] and len(store.load("s2").turns) == 1  # nothing lost
    out = CliRunner().invoke(app, ["compact", "missing"])
    assert out.exit_code == 1


def test_run_context_flags_become_config_fields() -> None:
    def agent(options: ContextOptions) -> Agent:
        flags = flag_overrides(max_turns=None, safe=False, network=False, context=options)
        provider = ScriptedProvider(["x"], model="mystery-model", context_window=0)
        return Agent(provider, config=AgentConfig().with_values(flags))

    forced = agent(ContextOptions(context_window=2_048))
    assert isinstance(forced.compaction, AutoCompaction)
    assert forced.compaction.monitor.limits.context_window == 2_048
    assert forced.notes == []
    assert agent(ContextOptions(enabled=False, context_window=2_048)).compaction is None
    default = agent(ContextOptions())
    assert default.compaction is not None and "mystery-model" in default.notes[0]


def test_compact_in_an_unapproved_project_ignores_its_settings_and_says_so(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tether compact` reads settings like `tether run`: a project file not approved with
    `tether trust` is not loaded, and a warning line says so."""
    project = tmp_path / "proj"
    (project / ".tether").mkdir(parents=True)
    (project / ".tether" / "settings.json").write_text('{"context": {"threshold": 0.5}}')
    monkeypatch.chdir(project)
    store = SessionStore()
    with store.create("s3", cwd=str(project)) as w:
        w.append(text_turn("t", "user", "only the task"))
    _summarizer(monkeypatch)
    out = CliRunner().invoke(app, ["compact", "s3"])
    assert "warning:" in out.output and "tether trust" in out.output


def test_compact_refuses_a_summary_that_is_not_shorter(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's small session went from 18 to 86 tokens and the command said it compacted:
    a summary longer than what it replaces is refused and nothing is written: exit 1 (usage/
    other; 5 is malformed input, which this is not)."""
    store = SessionStore()
    with store.create("s3", cwd=str(home)) as w:
        for t in history(2, result_chars=10):
            w.append(t)
    provider = ScriptedProvider(lambda r: "## Goal\n" + "a long summary of very little. " * 60)
    monkeypatch.setattr(build, "resolve_provider", lambda *a, **k: provider)  # type: ignore[misc]
    before = len(store.load("s3").turns)
    out = CliRunner().invoke(app, ["compact", "s3", "--model", "x/y"])
    assert out.exit_code == 1 and "not shorter" in out.output, out.output
    assert len(store.load("s3").turns) == before  # nothing written


def test_compact_uses_the_sessions_model_unless_model_is_given(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's session ran on openai/m and `tether compact` loaded the embedded model (the
    settings' selection): the summary is written by the session's own model, `--model` wins."""
    store = SessionStore()
    with store.create("s4", cwd=str(home)) as w:
        for t in history(6, result_chars=2_000):
            prov = Provenance(provider="openai", api="openai-chat", model="gpt-test")
            w.append(dataclasses.replace(t, provenance=prov) if t.role == "assistant" else t)
    provider = ScriptedProvider(lambda r: "## Goal\nrefactor the parser")
    asked: list[str] = []

    def resolve(
        ref: ModelRef, base_url: str | None = None, providers: object = None
    ) -> ScriptedProvider:
        asked.append(ref.spec)
        return provider

    monkeypatch.setattr(build, "resolve_provider", resolve)
    out = CliRunner().invoke(app, ["compact", "s4"])
    assert out.exit_code == 0, out.output
    assert asked == ["openai/gpt-test"] and "the session's model" in out.output
    out = CliRunner().invoke(app, ["compact", "s4", "--model", "x/y"])
    assert asked[-1] == "x/y", out.output


def test_compact_takes_a_sessions_name_as_resume_does(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third trial: `tether compact NAME` said "no session" (show/fork took names)."""
    from tether.session.names import NAME_EVENT

    store = SessionStore()
    with store.create("s-named", cwd=str(home)) as w:
        for t in history(6, result_chars=2_000):
            w.append(t)
        w.append_event(NAME_EVENT, {"name": "parser work"})
    _summarizer(monkeypatch)
    out = CliRunner().invoke(app, ["compact", "parser work", "--model", "x/y"])
    assert out.exit_code == 0, out.output
    row = json.loads(next(x for x in out.stdout.splitlines() if x.startswith("{")))
    assert row["session_id"] == "s-named"
    assert is_marker(store.load("s-named").turns[-1])
