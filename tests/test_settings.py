"""Settings: merge rules, file errors, durations, saving one key (tether.settings)."""

from __future__ import annotations

import copy
import json
import math
import threading
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.numbers import approx
from tether.agent.assembly.build import check_only_tools, model_refs
from tether.errors import ConfigError
from tether.settings import (
    AgentConfig,
    DurationError,
    format_duration,
    load_settings,
    merge_layers,
    parse_cli_value,
    parse_duration,
    save_setting,
    settings_path,
)
from tether.settings.merge import set_dotted, split_dotted
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.env import DEFAULT_REFUSED, scrubbed_env


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "user-config"
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(d))
    return d


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def user_file(user_dir: Path, data: Any) -> Path:
    return write(user_dir / "settings.json", data)


def project_file(project: Path, data: Any) -> Path:
    return write(project / ".tether" / "settings.json", data)


# --- loading and merging -------------------------------------------------------------------------


def test_no_files_gives_the_documented_defaults(user_dir: Path, project: Path) -> None:
    loaded = load_settings(project)
    s = loaded.settings
    assert loaded.sources == []
    assert s.model is None and [r.spec for r in model_refs(s)] == ["local"]
    assert (s.retry.max_attempts, s.retry.base_s, s.retry.max_s) == (3, 2.0, 30.0)
    assert (s.tools.timeout_s, s.tools.output_threshold_chars) == (120.0, 50_000)
    assert s.tools.deny_paths == []  # added to the built-in dotenv rules
    assert s.tools.refused_env == list(DEFAULT_REFUSED)
    assert (s.tools.network, s.tools.safe, s.tools.folders) == (False, False, [])
    c = s.context
    assert (c.threshold, c.output_reserve, c.runaway_total, c.runaway_growth) == (
        0.8,
        20_000,
        0.9,
        0.4,
    )
    assert c.auto_compact and c.windows == {}
    assert (s.run.max_turns, s.run.continuation_limit, s.run.thinking.decay) == (50, 3, "none")


def test_project_wins_objects_deep_merge_arrays_concatenate(user_dir: Path, project: Path) -> None:
    u = user_file(
        user_dir,
        {
            "model": ["anthropic/claude-sonnet-4-5", "openai/gpt-4o"],
            "tools": {"timeout": "30s", "deny_paths": ["secrets/**"], "network": True},
            "providers": {"work": {"type": "openai", "base_url": "https://u.example/v1"}},
            "run": {"max_turns": 10},
        },
    )
    p = project_file(
        project,
        {
            "model": [{"provider": "local", "model": ""}],
            "tools": {"deny_paths": ["*.pem"], "network": False},
            "providers": {"work": {"model": "m1"}},
        },
    )
    loaded = load_settings(project)
    s = loaded.settings
    assert loaded.sources == [u, p]
    assert s.tools.timeout_s == 30.0  # user value kept (deep merge)
    assert s.tools.network is False  # project wins
    assert s.tools.deny_paths == [
        "*.pem",
        "secrets/**",
    ]  # project first, then user; defaults replaced
    assert [r.spec for r in model_refs(s)] == ["local", "anthropic/claude-sonnet-4-5", "openai/gpt-4o"]
    work = s.providers["work"]
    assert (work.type, work.base_url, work.model) == ("openai", "https://u.example/v1", "m1")
    assert s.run.max_turns == 10
    assert loaded.project_layer(project) == json.loads(p.read_text())


def test_project_null_clears_a_user_value(user_dir: Path, project: Path) -> None:
    user_file(user_dir, {"model": "openai/gpt-4o"})
    project_file(project, {"model": None})
    assert load_settings(project).settings.model is None


def test_empty_file_is_no_settings_and_bom_is_accepted(user_dir: Path, project: Path) -> None:
    user_file(user_dir, "  \n")
    write(project / ".tether" / "settings.json", "\ufeff" + json.dumps({"run": {"max_turns": 7}}))
    assert load_settings(project).settings.run.max_turns == 7


def test_percentages_and_fractions(user_dir: Path) -> None:
    user_file(user_dir, {"context": {"runaway_total": 90, "runaway_growth": 0.25, "threshold": 75}})
    c = load_settings(None).settings.context
    assert (c.runaway_total, c.runaway_growth, c.threshold) == (0.9, 0.25, 0.75)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"tools": {"timeout": 5,}\n}', "line 1, column 25"),
        ('{\n  "run": {\n    "max_turns": 5\n  \n', "line 5, column 1"),
        ("[1, 2]", "must be a JSON object"),
        ('{"a": NaN}', "NaN is not allowed"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_malformed_files_name_the_file_and_place(
    user_dir: Path, content: str | bytes, says: str
) -> None:
    path = user_dir / "settings.json"
    path.parent.mkdir(parents=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_settings(None)
    assert str(path) in str(info.value) and says in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"tools": {"timeout": "soon"}}, "tools.timeout: 'soon' is not a duration"),
        ({"tools": {"tmeout": "5s"}}, "tools.tmeout: Extra inputs are not permitted"),
        ({"run": {"max_turns": 0}}, "run.max_turns: Input should be greater than or equal to 1"),
        ({"run": {"thinking": {"decay": "linear"}}}, "run.thinking.decay"),
        ({"model": [{"provider": "", "model": "x"}]}, "model[0].provider:"),
        ({"model": ["ok/m", 5]}, "model[1]"),
        ({"model": 5}, "model: Input should be a valid string or Input should be a valid list"),
        ({"providers": {"w": {"type": "azure"}}}, "providers.w.type"),
        ({"providers": {"w": {"api_key_env": "BAD-NAME"}}}, "providers.w.api_key_env"),
        (
            {"context": {"windows": {"gpt-4.1": {"max_output_tokens": 5}}}},
            "context.windows.gpt-4.1.context_window: Field required",
        ),
        ({"context": {"runaway_total": 0}}, "context.runaway_total"),
        ({"context": {"runaway_total": 150}}, "context.runaway_total"),
        ({"retry": {"max_attempts": "three"}}, "retry.max_attempts"),
    ],
)
def test_invalid_values_name_the_file_and_json_path(
    user_dir: Path, project: Path, data: dict[str, Any], says: str
) -> None:
    path = project_file(project, data)
    with pytest.raises(ConfigError) as info:
        load_settings(project)
    msg = str(info.value)
    assert msg.startswith(f"{path}: invalid settings: ") and says in msg, msg
    assert "list[union" not in msg and "ModelEntry" not in msg  # no pydantic branch names


# --- model helpers -----------------------------------------------------------------------------


def test_model_selection_accepts_all_shapes() -> None:
    one = AgentConfig.model_validate({"model": "openai/gpt-4o"})
    assert [r.spec for r in model_refs(one)] == ["openai/gpt-4o"]
    s = AgentConfig.model_validate(
        {
            "providers": {"a": {"type": "openai"}, "c": {"type": "ollama"}},
            "model": ["a/b", {"provider": "c", "model": "d"}, {"provider": "local"}],
        }
    )
    assert [r.spec for r in model_refs(s)] == ["a/b", "c/d", "local"]


def test_refused_env_adds_every_api_key_env_and_scrubs_it() -> None:
    s = AgentConfig.model_validate(
        {"providers": {"work": {"type": "openai", "api_key_env": "WORK_LLM"}}}
    )
    assert s.refused_env()[-1] == "WORK_LLM"
    env = {"WORK_LLM": "secret-value-123", "PATH": "/bin"}
    assert scrubbed_env(env, s.refused_env()) == {"PATH": "/bin"}
    assert "WORK_LLM" in scrubbed_env(env)  # not secret-shaped by name: only settings know it


def test_to_json_round_trips_and_uses_file_names() -> None:
    s = AgentConfig.model_validate(
        {"tools": {"timeout": 1500}, "retry": {"base": "250ms", "max": "1m30s"}, "model": "a/b"}
    )
    out = s.to_json()
    assert out["tools"]["timeout"] == "1500ms" and out["retry"] == {
        "max_attempts": 3,
        "base": "250ms",
        "max": "90s",
        "stream_idle_timeout": "5m",
        "fallback_cooldown": "5m",
    }
    assert AgentConfig.model_validate(json.loads(json.dumps(out))) == s


# --- durations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (1500, 1.5),
        (0, 0.0),
        (2.5, 0.0025),
        ("250ms", 0.25),
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        (".5s", 0.5),
        ("1m30s", 90.0),
        ("1h 2m 3s 4ms", 3723.004),
        ("30S", 30.0),
        ("1500", 1.5),
        (" 10s ", 10.0),
    ],
)
def test_parse_duration(value: object, seconds: float) -> None:
    assert parse_duration(value) == approx(seconds, abs=1e-12)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "soon",
        "5",
        "-5s",
        "5 seconds",
        "5d",
        "s",
        "1.2.3s",
        "5s5",
        True,
        None,
        [],
        -1,
        math.nan,
        math.inf,
        "9999h",
    ],
)
def test_parse_duration_rejects_garbage_with_a_hint(value: object) -> None:
    if value == "5":
        assert parse_duration(value) == 0.005  # a numeric string is milliseconds, like a number
        return
    with pytest.raises(DurationError) as info:
        parse_duration(value)
    assert "duration" in str(info.value) or "longer than a year" in str(info.value)


@given(st.integers(min_value=0, max_value=366 * 24 * 3_600_000))
def test_format_parse_round_trip_whole_ms(ms: int) -> None:
    text = format_duration(ms / 1000)
    assert parse_duration(text) == ms / 1000
    assert parse_duration(ms) == ms / 1000  # a number is milliseconds
    assert text.endswith(("ms", "s", "m", "h"))


@given(st.floats(min_value=0, max_value=366 * 24 * 3600.0, allow_nan=False))
def test_format_parse_round_trip_any_float(seconds: float) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@given(st.text(max_size=12))
def test_parse_duration_never_raises_anything_but_duration_error(text: str) -> None:
    try:
        out = parse_duration(text)
    except DurationError:
        return
    assert out >= 0 and math.isfinite(out)


# --- merge properties --------------------------------------------------------------------------

json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=8,
)
json_object = st.dictionaries(st.sampled_from("abcd"), json_value, max_size=4)


# Layers that agree on the type at each key, as files valid against one schema do: key "n" holds
# numbers, "l" lists, "s" strings, "o" objects of the same kind.
typed_object: st.SearchStrategy[dict[str, Any]] = st.deferred(
    lambda: st.fixed_dictionaries(
        {},
        optional={
            "n": st.integers(-3, 3),
            "s": st.text(max_size=2),
            "l": st.lists(st.integers(0, 3), max_size=3),
            "o": typed_object,
        },
    )
)


@given(typed_object, typed_object, typed_object)
def test_merge_is_associative(a: dict[str, Any], b: dict[str, Any], c: dict[str, Any]) -> None:
    assert merge_layers(merge_layers(a, b), c) == merge_layers(a, merge_layers(b, c))


def test_merge_is_not_associative_when_a_scalar_replaces_an_object() -> None:
    """Documented limit: `null` over an object, then an object again, depends on grouping."""
    a: dict[str, Any] = {"k": {"x": 1}}
    b: dict[str, Any] = {"k": None}
    c: dict[str, Any] = {"k": {}}
    assert merge_layers(merge_layers(a, b), c) == {"k": {}}
    assert merge_layers(a, merge_layers(b, c)) == {"k": {"x": 1}}


@given(json_object)
def test_empty_is_the_identity(a: dict[str, Any]) -> None:
    assert merge_layers(a, {}) == a
    assert merge_layers({}, a) == a


@given(json_object, json_object)
def test_merge_never_mutates_and_overlay_scalars_win(a: dict[str, Any], b: dict[str, Any]) -> None:
    a0, b0 = copy.deepcopy(a), copy.deepcopy(b)
    out = merge_layers(a, b)
    assert (a, b) == (a0, b0)
    for k, v in b.items():
        if isinstance(v, list) and isinstance(a.get(k), list):
            assert out[k] == v + a[k]  # concatenation, overlay first
        elif not isinstance(v, dict) or not isinstance(a.get(k), dict):
            assert out[k] == v
    for k in a.keys() - b.keys():
        assert out[k] == a[k]
    # the result shares no containers with the inputs
    out_ids = {id(x) for x in _containers(out)}
    assert not out_ids & {id(x) for x in _containers(a) + _containers(b)}


def _containers(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return [v, *(c for x in cast("dict[Any, Any]", v).values() for c in _containers(x))]
    if isinstance(v, list):
        return [v, *(c for x in cast("list[Any]", v) for c in _containers(x))]
    return []


# --- saving ------------------------------------------------------------------------------------


def test_save_setting_keeps_other_keys_and_validates(user_dir: Path, project: Path) -> None:
    path = user_file(user_dir, {"run": {"max_turns": 9}, "tools": {"network": True}})
    assert save_setting("user", "tools.timeout", "45s") == path
    data = json.loads(path.read_text())
    assert data == {"run": {"max_turns": 9}, "tools": {"network": True, "timeout": "45s"}}
    assert load_settings(None).settings.tools.timeout_s == 45.0
    before = path.read_bytes()
    for key, value in [("tools.timeout", "later"), ("tools.bogus", 1), ("run.max_turns.x", 1)]:
        with pytest.raises(ConfigError) as info:
            save_setting("user", key, value)
        assert str(path) in str(info.value)
        assert path.read_bytes() == before  # nothing lost on a rejected value
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_save_setting_project_scope_and_escaped_dots(user_dir: Path, project: Path) -> None:
    path = save_setting(
        "project", r"context.windows.gpt-4\.1.context_window", 1_000_000, project_dir=project
    )
    assert path == settings_path("project", project) == project / ".tether" / "settings.json"
    s = load_settings(project).settings
    assert s.context.windows["gpt-4.1"].context_window == 1_000_000
    assert not (user_dir / "settings.json").exists()


def test_save_setting_refuses_to_overwrite_a_malformed_file(user_dir: Path) -> None:
    path = user_file(user_dir, '{"run": ')
    with pytest.raises(ConfigError, match="malformed JSON"):
        save_setting("user", "run.max_turns", 3)
    assert path.read_text() == '{"run": '


def test_concurrent_saves_lose_nothing(user_dir: Path) -> None:
    keys = [f"p{i}" for i in range(12)]
    threads = [
        threading.Thread(target=save_setting, args=("user", f"providers.{k}.model", k))
        for k in keys
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = load_settings(None).settings
    assert sorted(s.providers) == sorted(keys)


def test_cli_values_and_dotted_keys() -> None:
    assert parse_cli_value("5") == 5 and parse_cli_value("true") is True
    assert parse_cli_value('["a"]') == ["a"] and parse_cli_value("null") is None
    assert parse_cli_value("30s") == "30s" and parse_cli_value("openai/gpt-4o") == "openai/gpt-4o"
    assert split_dotted("a.b") == ["a", "b"] and split_dotted(r"a\.b.c") == ["a.b", "c"]
    for bad in ("", "a..b", ".a", "a."):
        with pytest.raises(ValueError):
            split_dotted(bad)
    with pytest.raises(ValueError):
        set_dotted({"a": 1}, ["a", "b"], 2)
    src = {"a": {"x": 1}}
    assert set_dotted(src, ["a", "y"], 2) == {"a": {"x": 1, "y": 2}} and src == {"a": {"x": 1}}


def test_the_settings_page_sample_is_valid() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "settings.md").read_text(encoding="utf-8")
    sample = json.loads(page.split("```json", 1)[1].split("```", 1)[0])
    s = AgentConfig.model_validate(sample)
    assert model_refs(s)[1].spec == "work/qwen3-32b" and s.context.runaway_total == 0.9
    assert s.tools.timeout_s == 120.0 and s.run.thinking.decay == "step"


key_part = st.text(st.sampled_from("ab.-_1"), min_size=1, max_size=4)


@given(st.lists(key_part, min_size=1, max_size=4))
def test_split_dotted_round_trips_escaped_keys(parts: list[str]) -> None:
    key = ".".join(p.replace(".", "\\.") for p in parts)
    assert split_dotted(key) == parts


@given(typed_object, st.lists(st.sampled_from(["x", "y", "o"]), min_size=1, max_size=3), json_leaf)
def test_set_dotted_sets_only_that_key(data: dict[str, Any], path: list[str], value: Any) -> None:
    before = copy.deepcopy(data)
    try:
        out = set_dotted(data, path, value)
    except ValueError:
        return  # an intermediate value is not an object
    assert data == before
    node: Any = out
    for p in path:
        node = node[p]
    assert node == value
    # everything off the path is unchanged
    assert {k: v for k, v in out.items() if k != path[0]} == {
        k: v for k, v in data.items() if k != path[0]
    }


def test_tools_only_names_are_checked_against_the_tools_there_are() -> None:
    tools = builtin_tools()
    check_only_tools(None, tools)
    # built-in names, MCP names (their servers list them once started), and `recall`
    check_only_tools(["read", "bash", "mcp__demo__add", "mcp_read_resource", "recall"], tools)
    with pytest.raises(ConfigError, match=r"tools.only: nosuchtool, reed \(the tools: .*read"):
        check_only_tools(["nosuchtool", "read", "reed"], tools)
