"""Units and properties of tether.compaction.windows (table, resolution, overflow parsing)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.compaction import ModelLimits, parse_overflow_limit, parse_windows_setting
from tether.providers.catalog import (
    DEFAULT_LIMITS,
    KNOWN_MODELS,
    LimitsResolver,
    resolve_limits,
    table_limits,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- the table -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "window", "output"),
    [
        ("claude-sonnet-4-5", 200_000, 64_000),
        ("claude-sonnet-4-5-20250929", 200_000, 64_000),  # dated snapshot -> prefix
        ("anthropic/claude-sonnet-4.5", 200_000, 64_000),  # OpenRouter name, dots
        ("claude-3-5-haiku-latest", 200_000, 8_192),
        ("gpt-4o", 128_000, 16_384),
        ("gpt-4o-mini", 128_000, 16_384),
        ("gpt-4", 8_192, 8_192),
        ("gpt-4.1-mini", 1_047_576, 32_768),
        ("GPT-5", 400_000, 128_000),
        ("o4-mini-2025-04-16", 200_000, 100_000),
        ("gemini-2.5-pro", 1_048_576, 65_536),
        ("models/gemini-2.5-flash", 1_048_576, 65_536),
        ("llama3.1:8b", 131_072, 8_192),
        ("qwen2.5-coder:7b", 32_768, 8_192),
        ("gemma3:1b", 32_768, 8_192),
        ("gemma3:12b", 131_072, 8_192),
        ("smollm2", 8_192, 2_048),
        ("smollm2:135m", 8_192, 2_048),
    ],
)
def test_table_exact_then_prefix(model: str, window: int, output: int) -> None:
    hit = table_limits(model)
    assert hit is not None
    assert (hit.context_window, hit.max_output_tokens, hit.source) == (window, output, "table")


@pytest.mark.parametrize("model", ["glm-5.2", "gpt-4ox", "llama", "mistralai-foo", "", "o"])
def test_table_misses_unknown_names(model: str) -> None:
    assert table_limits(model) is None


def test_table_entries_are_sane() -> None:
    for name, lim in KNOWN_MODELS.items():
        assert name == name.lower()
        assert lim.source == "table"
        assert 0 < lim.max_output_tokens <= lim.context_window


@SETTINGS
@given(st.sampled_from(sorted(KNOWN_MODELS)), st.sampled_from("-:@_/ "), st.text(max_size=10))
def test_a_suffix_after_a_separator_keeps_the_family(key: str, sep: str, rest: str) -> None:
    hit = table_limits(key + sep + rest)
    assert hit is not None  # the key itself or a longer, more specific one


# -- resolution ------------------------------------------------------------------------------

CONFIGURED = {"glm-5.2": ModelLimits(context_window=1_000_000, max_output_tokens=32_000)}
REPORTED = ModelLimits(context_window=65_536, max_output_tokens=8_192)


def test_resolution_order() -> None:
    lim, warn = resolve_limits("glm-5.2", configured=CONFIGURED, provider_reported=REPORTED)
    assert (lim.context_window, lim.source, warn) == (1_000_000, "settings", None)
    lim, warn = resolve_limits("GLM-5.2", configured=CONFIGURED)  # case-insensitive fallback
    assert lim.source == "settings"
    lim, warn = resolve_limits("openai/glm-5.2", configured=CONFIGURED)  # provider/model
    assert (lim.context_window, lim.source) == (1_000_000, "settings")
    lim, warn = resolve_limits("gpt-4o", configured=CONFIGURED, provider_reported=REPORTED)
    assert (lim.context_window, lim.source, warn) == (65_536, "provider", None)
    lim, warn = resolve_limits("gpt-4o", configured=CONFIGURED)
    assert (lim.context_window, lim.source, warn) == (128_000, "table", None)
    lim, warn = resolve_limits("glm-5.2")
    assert lim == DEFAULT_LIMITS
    assert lim.source == "default"
    assert warn is not None
    assert "glm-5.2" in warn and "32,768" in warn and "context" in warn and "windows" in warn


def test_a_reported_zero_window_is_not_metadata() -> None:
    lim, _ = resolve_limits(
        "gpt-4o", provider_reported=ModelLimits(context_window=0, max_output_tokens=0)
    )
    assert lim.source == "table"


def test_resolver_warns_once_per_model() -> None:
    r = LimitsResolver()
    assert r.resolve("glm-5.2")[1] is not None
    assert r.resolve("glm-5.2")[1] is None
    assert r.resolve("other-model")[1] is not None
    assert r.resolve("gpt-4o")[1] is None


@SETTINGS
@given(st.text(max_size=30), st.booleans(), st.booleans())
def test_resolution_properties(model: str, with_config: bool, with_report: bool) -> None:
    configured = (
        {model: ModelLimits(context_window=5_000, max_output_tokens=100)} if with_config else None
    )
    lim, warn = resolve_limits(
        model, configured=configured, provider_reported=REPORTED if with_report else None
    )
    assert lim.context_window > 0
    assert (warn is not None) == (lim.source == "default")
    if with_config:
        assert lim.source == "settings" and lim.context_window == 5_000
    elif with_report:
        assert lim.source == "provider"


# -- settings shape --------------------------------------------------------------------------


def test_parse_windows_setting() -> None:
    out = parse_windows_setting(
        {"glm-5.2": 1_000_000, "tiny": {"context_window": 4_096, "max_output_tokens": 512}}
    )
    assert out["glm-5.2"] == ModelLimits(
        context_window=1_000_000, max_output_tokens=32_768, source="settings"
    )
    assert out["tiny"] == ModelLimits(
        context_window=4_096, max_output_tokens=512, source="settings"
    )
    assert parse_windows_setting({"x": 100})["x"].max_output_tokens == 25


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ([1, 2], "must be an object"),
        ({"m": 0}, "'m'"),
        ({"m": "128k"}, "positive integer"),
        ({"m": True}, "positive integer"),
        ({"m": {"max_output_tokens": 5}}, "context_window"),
        ({"m": {"context_window": 100, "max_output_tokens": -1}}, "max_output_tokens"),
        ({3: 100}, "strings"),
    ],
)
def test_parse_windows_setting_rejects_bad_input_clearly(value: object, needle: str) -> None:
    with pytest.raises(ValueError, match=r"context\.windows") as info:
        parse_windows_setting(value)
    assert needle in str(info.value)


# -- overflow errors -------------------------------------------------------------------------

WORDINGS = [
    # OpenAI chat (and Azure)
    (
        "This model's maximum context length is 131072 tokens. However, your messages resulted "
        "in 140000 tokens. Please reduce the length of the messages.",
        131_072,
    ),
    # vLLM
    (
        "This model's maximum context length is 32768 tokens. However, you requested 33000 "
        "tokens (32000 in the messages, 1000 in the completion).",
        32_768,
    ),
    # OpenRouter
    (
        "This endpoint's maximum context length is 163840 tokens. However, you requested about 170000",
        163_840,
    ),
    # Anthropic
    ("prompt is too long: 207547 tokens > 200000 maximum", 200_000),
    (
        "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease "
        "input length or `max_tokens` and try again",
        200_000,
    ),
    # Gemini
    (
        "The input token count (2551556) exceeds the maximum number of tokens allowed (1048576).",
        1_048_576,
    ),
    # llama.cpp server, message and JSON body
    ("request (4476 tokens) exceeds the available context size (4096 tokens)", 4_096),
    (
        '{"error":{"code":400,"message":"the request exceeds the available context size. try '
        'increasing the context size or enable context shift","type":"exceed_context_size_error",'
        '"n_prompt_tokens":14429,"n_ctx":8192}}',
        8_192,
    ),
    # llama-cpp-python (the embedded local provider)
    ("local model: Requested tokens (9000) exceed context window of 8192", 8_192),
    # vLLM offline
    (
        "The prompt (total length 25938) is too long to fit into the model (context length 4096).",
        4_096,
    ),
    # xAI
    (
        "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
        131_072,
    ),
    # LM Studio
    (
        "Trying to keep the first 5000 tokens when context the overflows. However, the model is "
        "loaded with context length of only 4096 tokens",
        4_096,
    ),
    # Mistral
    (
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        32_768,
    ),
    # TGI
    (
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000",
        4_096,
    ),
    # separators
    ("maximum context length is 1,048,576 tokens", 1_048_576),
]


def test_a_prompt_ollama_cut_teaches_its_real_window() -> None:
    from tether.providers.ollama import overflow_message, truncation_message

    assert parse_overflow_limit(truncation_message(160_689, 200_000, 16_387)) == 16_387
    assert parse_overflow_limit(overflow_message(10_000, 2_048, 2_040)) is None


@pytest.mark.parametrize(("message", "expected"), WORDINGS)
def test_parse_overflow_limit_wordings(message: str, expected: int) -> None:
    assert parse_overflow_limit(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        "the input length exceeds the context length",  # Ollama: no number
        "the request exceeds the available context size, try increasing it",
        "rate limited, retry after 30 seconds",
        "maximum context length is 0 tokens",
        "",
    ],
)
def test_parse_overflow_limit_without_a_maximum(message: str) -> None:
    assert parse_overflow_limit(message) is None


TEMPLATES = [
    "This model's maximum context length is {n} tokens. However, you requested {m} tokens",
    "prompt is too long: {m} tokens > {n} maximum",
    "exceed context limit: {m} + 4096 > {n}, decrease input length",
    "The input token count ({m}) exceeds the maximum number of tokens allowed ({n}).",
    "Requested tokens ({m}) exceed context window of {n}",
    '{{"type":"exceed_context_size_error","n_prompt_tokens":{m},"n_ctx":{n}}}',
]


@SETTINGS
@given(
    st.sampled_from(TEMPLATES),
    st.integers(1, 10**9),
    st.integers(1, 10**9),
    st.booleans(),
)
def test_parse_overflow_limit_reads_the_maximum_not_the_request(
    template: str, n: int, m: int, commas: bool
) -> None:
    fmt: Callable[[int], str] = (lambda x: f"{x:,}") if commas and "n_ctx" not in template else str
    assert parse_overflow_limit(template.format(n=fmt(n), m=fmt(m))) == n


@SETTINGS
@given(st.text(max_size=200))
def test_parse_overflow_limit_never_raises(text: str) -> None:
    n = parse_overflow_limit(text)
    assert n is None or n > 0
