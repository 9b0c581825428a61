"""`tether run`'s wiring from settings: the fallback chain, tool folders, the path deny list,
thinking decay, context settings — each unit, then one end-to-end fallback through `tether run`
against two loopback servers (the first overloaded, the second answering)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.cli import run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, error_after_200, text, tool
from tether.agent.assembly import build
from tether.agent.turn.continuation import GeometricDecay, StepDecay
from tether.errors import AuthError, ConfigError
from tether.providers.fallback import ModelRef
from tether.sandbox.policy import policy_for
from tether.settings import AgentConfig
from tether.testing import ScriptedProvider


def _settings(data: dict[str, Any]) -> AgentConfig:
    return AgentConfig.model_validate(data)


def refs(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r.provider, r.model) for r in build.model_refs(_settings(data))]


def test_unset_selection_is_each_configured_default_else_local() -> None:
    assert refs({}) == [("local", "")]
    assert refs(
        {
            "providers": {
                "a": {"type": "openai", "model": "m1"},
                "b": {"type": "ollama", "model": "m2"},
                "c": {"type": "openai"},  # no default model: not in the chain
            }
        }
    ) == [("a", "m1"), ("b", "m2")]


def test_selection_pins_spreads_and_deduplicates() -> None:
    data = {
        "providers": {"a": {"type": "openai", "model": "m1"}, "b": {"type": "ollama"}},
        "model": ["anthropic/claude-x", "qwen3", {"provider": "a"}, "a/qwen3", "local"],
    }
    assert refs(data) == [
        ("anthropic", "claude-x"),
        ("a", "qwen3"),  # a bare model runs on every configured provider, in order
        ("b", "qwen3"),
        ("a", "m1"),  # {provider} alone: its default model
        ("local", ""),
    ]  # "a/qwen3" repeated an earlier entry: dropped


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"model": "nope/x"}, "unknown provider 'nope'"),
        ({"model": "qwen3"}, "names no provider"),
        ({"model": [{"provider": "ghost"}]}, "unknown provider 'ghost'"),
    ],
)
def test_a_bad_selection_is_an_error_at_start(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build.model_refs(_settings(data))


@pytest.mark.parametrize("entry", ["ghost/m", {"provider": "ghost", "model": "m"}])
def test_an_unknown_pinned_provider_is_named_with_the_ones_there_are(entry: object) -> None:
    """Text and `{provider, model}` entries are one idea (a pinned entry) and fail alike: the
    error names the configured and the built-in providers, whichever way it was written."""
    data = {"providers": {"a": {"type": "openai", "model": "m1"}}, "model": [entry]}
    with pytest.raises(ConfigError) as caught:
        build.model_refs(_settings(data))
    assert str(caught.value) == (
        "unknown provider 'ghost' in the settings' model 'ghost/m' "
        f"(configured: a; built in: {', '.join(build.PROVIDERS)})"
    )


def test_chain_skips_entries_without_a_key_and_fails_with_the_first_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    notes: list[str] = []
    settings = _settings({"model": ["openai/gpt-4o", "local"]})
    chain = build.resolve_models(None, settings, note=notes.append)
    assert [p.name for p in chain] == ["local"]
    assert len(notes) == 1 and "skipping model 'openai/gpt-4o'" in notes[0]
    settings = _settings({"model": ["openai/gpt-4o", "anthropic/claude-x"]})
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        build.resolve_models(None, settings, note=notes.append)
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):  # an explicit model: strict
        build.resolve_models(["openai/gpt-4o", "local"], _settings({}))
    assert ModelRef(provider="local", model="") in build.model_refs(_settings({}))


def test_thinking_settings_become_decay_policies() -> None:
    def decay(thinking: dict[str, Any]) -> object:
        return build.thinking_decay(_settings({"run": {"thinking": thinking}}))

    assert decay({}) is None
    assert decay({"budget_tokens": 8000}) == StepDecay(
        full_tokens=8000, floor_tokens=8000, after_turn=1
    )
    assert decay(
        {"budget_tokens": 8000, "decay": "step", "floor": 2000, "after_turn": 5}
    ) == StepDecay(full_tokens=8000, floor_tokens=2000, after_turn=5)
    assert decay({"budget_tokens": 8000, "decay": "geometric", "factor": 0.5}) == GeometricDecay(
        full_tokens=8000, factor=0.5, floor_tokens=0
    )
    with pytest.raises(ConfigError, match="needs floor and after_turn"):
        decay({"budget_tokens": 8000, "decay": "step"})


def test_deny_paths_add_to_the_dotenv_rules() -> None:
    policy = policy_for(_settings({"tools": {"deny_paths": ["**/*.pem"]}}).tools)
    assert "**/.env" in policy.deny_read and "**/*.pem" in policy.deny_read
    assert "**/*.pem" in policy.deny_write


def test_refused_env_has_the_defaults_and_every_providers_key_variable() -> None:
    refused = build.refused_env(
        _settings({"providers": {"w": {"type": "openai", "api_key_env": "WORK_LLM_KEY"}}})
    )
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "WORK_LLM_KEY"} <= set(refused)
    assert len(refused) == len(set(refused))


def test_tool_folders_are_scanned_and_problems_noted(tmp_path: Path) -> None:
    folder = tmp_path / ".tether" / "tools"
    folder.mkdir(parents=True)
    (folder / "hello.py").write_text(
        "from tether.tools import tool\n\n@tool\ndef hello(name: str) -> str:\n"
        '    """Greet someone.\n\n    Args:\n        name: who.\n    """\n'
        '    return f"hello {name}"\n'
    )
    (folder / "broken.py").write_text("import nonexistent_module_xyz\n")
    notes: list[str] = []
    names = [t.name for t in build.folder_tools(AgentConfig(), tmp_path, notes.append)]
    assert "hello" in names and "bash" in names
    assert len(notes) == 1 and "broken.py" in notes[0]
    (folder / "dup.py").write_text(
        "from tether.tools import tool\n\n@tool\ndef bash(command: str) -> str:\n"
        '    """Shadow the built-in."""\n    return command\n'
    )
    with pytest.raises(ConfigError, match="bash"):
        build.folder_tools(AgentConfig(), tmp_path, notes.append)
    with pytest.raises(ConfigError, match="not a folder"):
        build.folder_tools(_settings({"tools": {"folders": ["missing"]}}), tmp_path, notes.append)


def test_context_settings_reach_the_monitor_and_the_output_threshold() -> None:
    provider = ScriptedProvider([], model="qwen3-32b")
    warnings: list[str] = []
    off = _settings({"context": {"auto_compact": False}})
    limits = build.model_limits(provider, None, warnings.append)
    assert build.auto_compaction(limits, off) is None
    on = _settings(
        {
            "context": {
                "windows": {"qwen3-32b": {"context_window": 32768, "max_output_tokens": 8192}},
                "threshold": 0.6,
            }
        }
    )
    limits = build.model_limits(
        provider, None, warnings.append, configured=build.configured_windows(on)
    )
    manager = build.auto_compaction(limits, on)
    assert manager is not None
    monitor = manager.monitor
    assert monitor.limits.context_window == 32768 and monitor.limits.source == "settings"
    assert monitor.policy.threshold == 0.6
    assert warnings == []  # a configured window needs no "unknown model" warning
    # one tool result may fill at most a quarter of the window (~4 chars per token): T25
    assert build.output_threshold_chars(on, limits) == 32768
    small = build.model_limits(provider, 8192, warnings.append)
    assert build.output_threshold_chars(on, small) == 8192
    big = build.model_limits(provider, 1_000_000, warnings.append)
    assert build.output_threshold_chars(on, big) == 50_000  # the setting caps it


def test_tether_run_falls_back_to_the_next_configured_provider(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "config"
    with (
        FaultServer([error_after_200(), error_after_200()]) as first,
        FaultServer([text("from the second")]) as second,
    ):
        config.mkdir()
        (config / "settings.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "one": {"type": "openai", "base_url": first.openai_url, "model": "m1"},
                        "two": {"type": "openai", "base_url": second.openai_url, "model": "m2"},
                    },
                    "retry": {"max_attempts": 2},
                }
            )
        )
        proc = run_cli(
            ["run", "--no-session", "hi"],
            home,
            TETHER_CONFIG_DIR=str(config),
            OPENAI_API_KEY="sk-test",
        )
        assert (len(first.requests), len(second.requests)) == (2, 1)
    assert proc.returncode == 0, proc.stderr
    evs = jsonl(proc.stdout)
    (fallback,) = [e for e in evs if e["type"] == "fallback"]
    assert fallback["kind"] == "overloaded"
    assert "m1" in fallback["from_model"] and "m2" in fallback["to_model"]
    assert evs[-1]["type"] == "done" and evs[-1]["text"] == "from the second"


def test_a_window_the_fixed_prompt_overfills_exits_5_and_max_turns_is_noted(
    tmp_path: Path,
) -> None:
    """A 300-token window is overfilled by the system prompt and the tools alone: the run is
    refused before any request (it used to send one, then stop with a runaway context; the
    runaway itself is `tests/cli/test_sessions_fork.py`'s and `test_runaway_guard.py`'s)."""
    home = tmp_path / "home"
    (tmp_path / "work").mkdir()
    with FaultServer([text("never sent")]) as server:
        proc = run_cli(
            [
                "run",
                "--no-session",
                "--model",
                "openai/m",
                "--base-url",
                server.openai_url,
                "--context-window",
                "300",
                "hi",
            ],
            home,
            OPENAI_API_KEY="sk-test",
        )
        assert server.requests == [], proc.stdout
    assert proc.returncode == 5, proc.stderr
    assert "of system prompt and tools" in proc.stderr and "nothing was sent" in proc.stderr
    with FaultServer([tool("ls", path=".")]) as server:
        proc = run_cli(
            [
                "run",
                "--no-session",
                "--model",
                "openai/m",
                "--base-url",
                server.openai_url,
                "--max-turns",
                "1",
                "hi",
            ],
            home,
            OPENAI_API_KEY="sk-test",
        )
    assert proc.returncode == 1, proc.stderr  # not success: no final answer
    assert "--max-turns reached (1 request)" in proc.stderr


async def test_a_key_from_the_credential_file_is_redacted_from_tool_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key tether read from its credential file is in no environment, so env scrubbing
    cannot hide it; a tool that prints the file must still not show it to the model."""
    from tether.agent.agent import Agent
    from tether.credentials import credentials_path, store_key
    from tether.testing import call

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    key = "plain-looking-secret-0001"  # no provider key shape: only the literal match hides it
    store_key("work", key, store="file")
    settings = _settings({"providers": {"work": {"type": "openai", "model": "m"}}})
    provider = ScriptedProvider([call("bash", command="cat leaked.json"), "done"], model="m")
    provider.name = "work"
    assert build.provider_keys([provider], settings) == (key,)
    work = tmp_path / "w"
    work.mkdir()
    # a copy of the credential file inside the project (the sandbox hides the real one's /tmp)
    (work / "leaked.json").write_text(credentials_path().read_text())
    agent = Agent(  # the agent finds the key itself, from the config's providers
        provider, config=settings, tools=build.folder_tools(AgentConfig(), work, print), root=work
    )
    await agent.run("show me")
    shown = agent.history[2].tool_results[0].text
    assert key not in shown and "[REDACTED]" in shown and '"work"' in shown


def test_tether_compact_uses_the_settings_endpoints(tmp_path: Path) -> None:
    from tether.messages import text_turn
    from tether.session import SessionStore

    home, config = tmp_path / "home", tmp_path / "config"
    config.mkdir()
    with SessionStore(home / "sessions").create("s1", cwd=str(tmp_path)) as w:
        w.append(text_turn("t1", "user", "refactor the parser"))
        for i in range(2, 8):
            w.append(text_turn(f"t{i}", "assistant" if i % 2 == 0 else "user", f"step {i} " * 40))
    with FaultServer([text("## Goal\nrefactor the parser")]) as server:
        (config / "settings.json").write_text(
            json.dumps({"providers": {"work": {"type": "openai", "base_url": server.openai_url}}})
        )
        proc = run_cli(
            ["compact", "s1", "--model", "work/m", "--context-window", "8192"],
            home,
            TETHER_CONFIG_DIR=str(config),
            OPENAI_API_KEY="sk-test",
        )
        assert len(server.requests) == 1  # the summary call went to the configured endpoint
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["turns_replaced"] >= 1 and out["session_id"] == "s1"
