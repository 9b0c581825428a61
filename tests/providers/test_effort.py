"""Reasoning effort: each adapter's request conversion puts the level in its API's own field
(Anthropic `thinking.budget_tokens`, OpenAI Responses `reasoning.effort`, Chat Completions
`reasoning_effort`, Gemini `thinkingConfig.thinkingBudget`, Ollama `think`), and nothing for a
model that does not reason (`effort_note` says so)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.effort import EFFORTS, Effort, anthropic_budget, next_effort, parse_effort
from tether.messages import text_turn
from tether.providers.anthropic_request import build_params as anthropic_params
from tether.providers.base import ModelRequest
from tether.providers.catalog import effort_note, reasons
from tether.providers.google import GoogleProvider
from tether.providers.ollama import OllamaProvider
from tether.providers.openai_chat_request import reasoning_effort
from tether.providers.openai_responses import OpenAIResponsesProvider

VIEW = (text_turn("u", "user", "q"),)


def req(model: str, effort: Effort | None, **kw: object) -> ModelRequest:
    return ModelRequest(model=model, messages=VIEW, effort=effort, **kw)  # type: ignore[arg-type]


def test_anthropic_thinking_budget_per_level() -> None:
    got = {
        e: anthropic_params(
            req("claude-sonnet-4-5", e), VIEW, default_max_tokens=64_000, default_thinking_budget=None
        ).thinking
        for e in EFFORTS
    }
    assert got == {
        "low": {"type": "enabled", "budget_tokens": 2048},
        "medium": {"type": "enabled", "budget_tokens": 8192},
        "high": {"type": "enabled", "budget_tokens": 16384},
        "max": {"type": "enabled", "budget_tokens": 31999},
    }


def test_anthropic_effort_wins_over_the_budget_and_stays_below_max_tokens() -> None:
    p = anthropic_params(
        req("claude-opus-4-5", "max", max_output_tokens=10_000, thinking_budget_tokens=4096),
        VIEW,
        default_max_tokens=64_000,
        default_thinking_budget=None,
    )
    assert p.thinking == {"type": "enabled", "budget_tokens": 9_999}
    assert p.max_tokens == 10_000


def test_anthropic_model_without_thinking_gets_none() -> None:
    p = anthropic_params(
        req("claude-3-5-haiku-latest", "high", temperature=0.3),
        VIEW,
        default_max_tokens=8192,
        default_thinking_budget=None,
    )
    assert p.thinking is None and p.temperature == 0.3


def test_openai_responses_reasoning_effort() -> None:
    provider = OpenAIResponsesProvider("gpt-5", api_key="k")
    assert provider.request_params(req("gpt-5", "low"))["reasoning"]["effort"] == "low"
    assert provider.request_params(req("gpt-5", "max"))["reasoning"]["effort"] == "high"
    assert "effort" not in provider.request_params(req("gpt-5", None)).get("reasoning", {})
    plain = OpenAIResponsesProvider("gpt-4o", api_key="k")
    assert "reasoning" not in plain.request_params(req("gpt-4o", "high"))


def test_openai_chat_reasoning_effort() -> None:
    assert reasoning_effort(req("o3", "medium"), "o3") == "medium"
    assert reasoning_effort(req("gpt-5-mini", "max"), "gpt-5-mini") == "high"
    assert reasoning_effort(req("gpt-4o", "high"), "gpt-4o") is None
    assert reasoning_effort(req("o3", None), "o3") is None


def test_gemini_thinking_budget() -> None:
    provider = GoogleProvider("gemini-2.5-pro", api_key="k", thinking_budget=64)
    _, cfg = provider.request_config(req("gemini-2.5-pro", "high"))
    assert cfg.thinking_config is not None and cfg.thinking_config.thinking_budget == 16384
    _, cfg = provider.request_config(req("gemini-2.5-pro", None))
    assert cfg.thinking_config is not None and cfg.thinking_config.thinking_budget == 64
    _, cfg = GoogleProvider("gemini-2.0-flash", api_key="k").request_config(
        req("gemini-2.0-flash", "high")
    )
    assert cfg.thinking_config is None


def test_ollama_think() -> None:
    assert OllamaProvider("qwen3:8b").request_params(req("qwen3:8b", "low"))["think"] is True
    oss = OllamaProvider("gpt-oss:20b").request_params(req("gpt-oss:20b", "max"))
    assert oss["think"] == "high"
    assert "think" not in OllamaProvider("llama3.1").request_params(req("llama3.1", "high"))


def test_the_catalog_knows_which_models_reason() -> None:
    for model in ("claude-sonnet-4-5-20250929", "o3", "gpt-5.1", "gemini-2.5-flash", "qwen3:8b"):
        assert reasons(model), model
    for model in ("gpt-4o", "claude-3-5-haiku-latest", "llama3.1", "gemini-2.0-flash"):
        assert not reasons(model), model
    assert reasons("o3-pro") and reasons("gemini-3-flash")  # not in the table: by name


def test_no_reasoning_is_one_line() -> None:
    line = effort_note("gpt-4o", "high")
    assert line is not None and "gpt-4o" in line and "\n" not in line
    assert effort_note("gpt-5", "high") is None
    assert effort_note("gpt-4o", None) is None


def test_cycle_and_parse() -> None:
    seen: list[Effort | None] = [None]
    for _ in range(5):
        seen.append(next_effort(seen[-1]))
    assert seen == [None, "low", "medium", "high", "max", None]
    assert parse_effort(" High ") == "high" and parse_effort("extreme") is None


@given(st.sampled_from(EFFORTS), st.integers(min_value=1, max_value=200_000))
def test_anthropic_budget_is_valid_or_off(effort: Effort, max_tokens: int) -> None:
    budget = anthropic_budget(effort, max_tokens)
    if budget is not None:
        assert 1024 <= budget < max_tokens
    else:
        assert max_tokens <= 1024
