"""The model catalog's one name normaliser, on real model names from each vendor: snapshot
suffixes, dotted and dashed versions, provider prefixes, aliases, family prefixes for limits
(never for prices), and unknown names. Where the old limits rule (prefix per candidate) and the
old price rule (exact after snapshot and alias) disagreed, the row marked "chosen" shows the
answer the one normaliser gives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.providers.catalog import (
    KNOWN_MODELS,
    listed_models,
    lookup,
    model_keys,
    price_for,
    table_limits,
)
from tether.providers.models import BUNDLED, MODEL_PROVIDERS

# model, (window, output) or None, priced as (table name) or None
TABLE: list[tuple[str, tuple[int, int] | None, str | None]] = [
    # Anthropic
    ("claude-sonnet-4-5", (200_000, 64_000), "claude-sonnet-4-5"),
    ("claude-sonnet-4-5-20250929", (200_000, 64_000), "claude-sonnet-4-5"),  # snapshot
    ("anthropic/claude-sonnet-4.5", (200_000, 64_000), "claude-sonnet-4-5"),  # OpenRouter, dots
    ("claude-sonnet-4.5", (200_000, 64_000), "claude-sonnet-4-5"),  # chosen: priced (was not)
    ("claude-opus-4.5", (200_000, 64_000), "claude-opus-4-5"),  # chosen: 64k (was opus-4's 32k)
    ("claude-haiku-4.5", (200_000, 64_000), "claude-haiku-4-5"),  # chosen: 64k (was "claude" 8k)
    ("claude-sonnet-4-20250514", (200_000, 64_000), "claude-sonnet-4-20250514"),
    ("claude-sonnet-4-0", (200_000, 64_000), "claude-sonnet-4-20250514"),  # alias
    ("claude-sonnet-4", (200_000, 64_000), "claude-sonnet-4-20250514"),
    ("claude-opus-4-0", (200_000, 32_000), "claude-opus-4"),  # alias
    ("claude-opus-4-1-20250805", (200_000, 32_000), "claude-opus-4-1"),
    ("claude-3-5-haiku-20241022", (200_000, 8_192), "claude-3-5-haiku-latest"),
    ("claude-3-5-haiku-latest", (200_000, 8_192), "claude-3-5-haiku-latest"),
    ("claude-3-7-sonnet-20250219", (200_000, 64_000), None),  # known window, no price
    ("claude-instant-1.2", (200_000, 8_192), None),  # the family only: window, never a price
    # OpenAI
    ("gpt-4o", (128_000, 16_384), "gpt-4o"),
    ("gpt-4o-2024-08-06", (128_000, 16_384), "gpt-4o"),
    ("GPT-4o", (128_000, 16_384), "gpt-4o"),
    ("gpt-4o-mini", (128_000, 16_384), "gpt-4o-mini"),
    ("gpt-4o-mini-2024-07-18", (128_000, 16_384), "gpt-4o-mini"),
    ("gpt-4o-audio-preview", (128_000, 16_384), None),  # family window, no price
    ("gpt-4.1-mini", (1_047_576, 32_768), "gpt-4.1-mini"),
    ("gpt-4.1-2025-04-14", (1_047_576, 32_768), "gpt-4.1"),
    ("gpt-5", (400_000, 128_000), "gpt-5"),
    ("gpt-5-2025-08-07", (400_000, 128_000), "gpt-5"),
    ("gpt-5-nano", (400_000, 128_000), None),  # its own entry: not priced as gpt-5
    ("gpt-5.1-codex", (400_000, 128_000), None),
    ("openai/gpt-5-mini", (400_000, 128_000), "gpt-5-mini"),
    ("o4-mini-2025-04-16", (200_000, 100_000), None),
    ("gpt-4", (8_192, 8_192), None),
    # Google
    ("gemini-2.5-pro", (1_048_576, 65_536), "gemini-2.5-pro"),
    ("models/gemini-2.5-flash", (1_048_576, 65_536), "gemini-2.5-flash"),
    ("gemini-2.5-flash-preview-05-20", (1_048_576, 65_536), None),
    ("gemini-2.5-flash-lite", (1_048_576, 65_536), None),
    ("gemini-3-pro-preview", (1_048_576, 65_536), None),
    ("gemini-2-5-pro", (1_048_576, 65_536), "gemini-2.5-pro"),  # dashed version
    # Ollama and local
    ("llama3.1:8b", (131_072, 8_192), None),
    ("qwen2.5-coder:7b", (32_768, 8_192), None),
    ("gemma3:1b", (32_768, 8_192), None),
    ("gemma3:12b", (131_072, 8_192), None),
    ("gpt-oss:120b", (131_072, 32_768), None),
    ("smollm2-135m-instruct", (8_192, 2_048), None),
    # unknown
    ("glm-5.2", None, None),
    ("gpt-4ox", None, None),
    ("llama", None, None),
    ("", None, None),
    ("my-local-model", None, None),
]


@pytest.mark.parametrize(("model", "limits", "priced_as"), TABLE)
def test_one_normaliser_for_limits_and_prices(
    model: str, limits: tuple[int, int] | None, priced_as: str | None
) -> None:
    hit = table_limits(model)
    assert (None if hit is None else (hit.context_window, hit.max_output_tokens)) == limits
    assert hit is None or hit.source == "table"
    expected = None if priced_as is None else KNOWN_MODELS[priced_as].price
    assert price_for(model) == expected
    if priced_as is not None:
        assert expected is not None


def test_the_keys_of_a_name_in_order() -> None:
    assert model_keys(" Anthropic/Claude-Sonnet-4.5-20250929 ")[:2] == (
        "anthropic/claude-sonnet-4.5-20250929",
        "anthropic/claude-sonnet-4-5-20250929",
    )
    assert "claude-sonnet-4-5" in model_keys("anthropic/claude-sonnet-4.5-20250929")
    assert model_keys("claude-sonnet-4-0") == ("claude-sonnet-4",)


@given(st.text(max_size=40))
def test_a_price_implies_an_exact_entry_with_limits(model: str) -> None:
    price = price_for(model)
    info = lookup(model)
    if price is not None:
        assert info is not None and info.price == price


def test_every_provider_lists_catalog_entries_and_local_names_resolve() -> None:
    for provider in MODEL_PROVIDERS:
        assert BUNDLED[provider] == listed_models(provider)
        assert BUNDLED[provider], provider
        for name in BUNDLED[provider]:
            assert provider in KNOWN_MODELS[name].listed
    assert BUNDLED["local"] == ("qwen2.5-coder-0.5b", "smollm2-135m-instruct")
