"""Case T19 and its whole kind: every adapter's usage normalizes to the same meaning
(`input` = the uncached part; prompt = input + cache_read + cache_write)."""

from __future__ import annotations

import sys
from pathlib import Path

from anthropic import types as at
from google.genai import types as gt
from hypothesis import given
from hypothesis import strategies as st
from openai.types.completion_usage import CompletionUsage
from openai.types.responses import ResponseUsage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kit.cases import load_case
from tether.providers.anthropic import normalize_usage as anthropic_usage
from tether.providers.google import normalize_usage as gemini_usage
from tether.providers.openai_chat import normalize_usage as chat_usage
from tether.providers.openai_responses import normalize_usage as responses_usage


def _responses(input_tokens: int, cached: int, output: int) -> ResponseUsage:
    return ResponseUsage.model_validate(
        {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output,
        }
    )


def test_t19_numbers() -> None:
    case = load_case("T19")["input"]
    window = case["window"]
    o = case["openai_usage"]
    u = responses_usage(
        _responses(
            o["input_tokens"], o["input_tokens_details"]["cached_tokens"], o["output_tokens"]
        )
    )
    assert u.prompt_tokens + u.output_tokens == 184_753
    assert round(100 * (u.prompt_tokens + u.output_tokens) / window) == 46
    assert u.cache_read_tokens == 183_936 and u.input_tokens == 184_704 - 183_936
    a = case["anthropic_usage"]
    ua = anthropic_usage(at.Usage.model_validate(a))
    assert ua.prompt_tokens + ua.output_tokens == 159_812


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**6))
def test_openai_shapes_count_cached_inside_the_prompt(prompt: int, cached: int, out: int) -> None:
    cached = min(cached, prompt)
    r = responses_usage(_responses(prompt, cached, out))
    c = chat_usage(
        CompletionUsage.model_validate(
            {
                "prompt_tokens": prompt,
                "completion_tokens": out,
                "total_tokens": prompt + out,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        )
    )
    assert r == c
    assert r.prompt_tokens == prompt and r.cache_read_tokens == cached and r.output_tokens == out


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**6), st.integers(0, 10**6))
def test_gemini_counts_cached_inside_and_thoughts_as_output(
    prompt: int, cached: int, out: int, thoughts: int
) -> None:
    cached = min(cached, prompt)
    g = gemini_usage(
        gt.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt,
            cached_content_token_count=cached,
            candidates_token_count=out,
            thoughts_token_count=thoughts,
        )
    )
    assert g.prompt_tokens == prompt and g.cache_read_tokens == cached
    assert g.output_tokens == out + thoughts


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7))
def test_anthropic_cache_fields_add_to_input(inp: int, read: int, write: int) -> None:
    u = anthropic_usage(
        at.Usage(
            input_tokens=inp,
            output_tokens=1,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=write,
        )
    )
    assert u.prompt_tokens == inp + read + write and u.input_tokens == inp
