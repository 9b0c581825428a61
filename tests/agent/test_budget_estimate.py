"""The budget's estimate of a request (`tether.agent.turn.budget.next_request_usd`, pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.agent.turn.budget import Budget, next_request_usd, usage_minus
from tether.messages import Usage
from tether.providers.catalog import price_for

PRICE = price_for("claude-sonnet-4-5")
tokens = st.integers(0, 500_000)
usages = st.builds(Usage, input_tokens=tokens, output_tokens=tokens, cache_read_tokens=tokens, cache_write_tokens=tokens)


@given(st.integers(0, 400_000), st.integers(0, 400_000), st.none() | usages)
def test_the_estimate_grows_with_the_prompt_and_is_never_negative(a: int, b: int, last: Usage | None) -> None:
    assert PRICE is not None
    lo, hi = sorted((a, b))
    assert 0 <= next_request_usd(PRICE, lo, last) <= next_request_usd(PRICE, hi, last)


@given(usages, usages)
def test_usage_minus_undoes_a_sum(a: Usage, b: Usage) -> None:
    assert usage_minus(a + b, b) == a


def test_a_cached_prompt_is_priced_as_cache_reads() -> None:
    assert PRICE is not None
    cold = next_request_usd(PRICE, 100_000, Usage(input_tokens=90_000))
    warm = next_request_usd(PRICE, 100_000, Usage(input_tokens=10, cache_read_tokens=90_000))
    assert warm < cold / 2


def test_the_budget_refuses_only_past_the_cap() -> None:
    b = Budget(1.0)
    b.charge(Usage(output_tokens=60_000), "claude-sonnet-4-5")  # $0.90
    assert b.refuses("claude-sonnet-4-5", 1_000, None) is None  # + $0.003
    assert b.refuses("claude-sonnet-4-5", 40_000, None) is not None  # + $0.12
    assert b.refuses("unknown-model", 10**9, None) is None and not b.use_model("unknown-model")
