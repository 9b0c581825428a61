"""One construction path: `tether run`, `tether chat` and `tether compact` read the settings
and resolve the model through `tether.agent.assembly.build.settings_chain`, and the model string
is split once (`ModelRef.parse`) on its way to the provider registry, which is handed the parsed
value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tether.agent.assembly import build
from tether.agent.host import Host
from tether.cli.main import app
from tether.cli.run import RunOptions, run_command
from tether.messages import text_turn
from tether.providers.base import Provider
from tether.providers.fallback import ModelRef
from tether.session import SessionStore
from tether.testing import ScriptedProvider
from tether.tui.opening import ChatOptions, open_agent

MODEL = "work/team-model:8b"


class Seen:
    def __init__(self) -> None:
        self.parsed: list[str | None] = []
        self.chains: list[Any] = []
        self.resolved: list[Any] = []


@pytest.fixture
def seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Seen:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    out = Seen()
    parse = ModelRef.parse

    def parsing(_cls: type[ModelRef], spec: str | None) -> ModelRef:
        out.parsed.append(spec)
        return parse(spec)

    monkeypatch.setattr(ModelRef, "parse", classmethod(parsing))
    chain = build.settings_chain

    def spied(*args: Any, **kwargs: Any) -> Any:
        out.chains.append(kwargs["model"])
        return chain(*args, **kwargs)

    monkeypatch.setattr(build, "settings_chain", spied)

    def resolve(ref: Any, **_kw: Any) -> Provider:
        out.resolved.append(ref)
        return ScriptedProvider(lambda _r: "## Goal\nthe answer")

    monkeypatch.setattr(build, "resolve_provider", resolve)
    return out


def _once_through_the_path(seen: Seen) -> None:
    assert seen.chains == [MODEL]
    assert seen.parsed.count(MODEL) == 1
    assert seen.resolved == [ModelRef(provider="work", model="team-model:8b")]


def test_tether_run_builds_through_the_one_path(seen: Seen, tmp_path: Path) -> None:
    code = run_command(RunOptions(prompt="hi", model=MODEL, cwd=tmp_path, no_session=True))
    assert code == 0
    _once_through_the_path(seen)


def test_tether_chat_builds_through_the_one_path(seen: Seen, tmp_path: Path) -> None:
    opened = open_agent(ChatOptions(model=MODEL, cwd=tmp_path, no_session=True), Host())
    assert opened.agent.parts.provider.name == "scripted"
    _once_through_the_path(seen)


def test_tether_compact_builds_through_the_one_path(seen: Seen, tmp_path: Path) -> None:
    store = SessionStore()
    with store.create("s1", cwd=str(tmp_path)) as w:
        for i in range(6):
            w.append(text_turn(f"u{i}", "user", f"question {i} " * 50))
            w.append(text_turn(f"a{i}", "assistant", f"answer {i} " * 50))
    out = CliRunner().invoke(app, ["compact", "s1", "--model", MODEL])
    assert out.exit_code == 0, out.output
    _once_through_the_path(seen)


def test_a_model_string_parses_to_provider_and_model() -> None:
    assert ModelRef.parse("ollama/qwen3:8b") == ModelRef(provider="ollama", model="qwen3:8b")
    assert ModelRef.parse("openai/meta-llama/Llama-3-8B").model == "meta-llama/Llama-3-8B"
    assert ModelRef.parse(" anthropic ") == ModelRef(provider="anthropic", model="")
    assert ModelRef.parse(None) == ModelRef.parse("") == ModelRef(provider="local", model="")
