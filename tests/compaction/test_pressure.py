"""Units and properties of tether.compaction.pressure (token accounting, window, trigger)."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.numbers import approx
from tether.compaction import (
    CompactionPolicy,
    ModelLimits,
    effective_window,
    estimate_tokens,
    message_tokens,
    occupied_tokens,
    text_tokens,
    trigger_reached,
)
from tether.compaction.pressure import (
    DOCUMENT_TOKENS,
    IMAGE_TOKENS,
    make_pressure,
    needed_headroom,
    normalized_fraction,
    output_reserve,
    safety_margin,
    threshold_tokens,
    trigger_tokens,
)
from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)

from .strategies import any_limits, any_policy, fractions, sane_limits, turn_lists, usages

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICY = CompactionPolicy()


def limits(window: int, output: int) -> ModelLimits:
    return ModelLimits(context_window=window, max_output_tokens=output)


def fires(tokens: int, lim: ModelLimits, pol: CompactionPolicy = POLICY) -> bool:
    p = make_pressure(tokens, lim, pol, source="estimated", is_approximate=True)
    return trigger_reached(p, lim, pol)


# -- occupied_tokens -------------------------------------------------------------------------


def test_occupied_is_whole_prompt_plus_output() -> None:
    u = Usage(
        input_tokens=12, cache_read_tokens=150_000, cache_write_tokens=9_000, output_tokens=800
    )
    assert occupied_tokens(u) == 159_812
    assert occupied_tokens(Usage()) == 0


def test_occupied_ignores_negative_fields_from_a_broken_adapter() -> None:
    assert occupied_tokens(Usage(input_tokens=-5, output_tokens=10)) == 10


@SETTINGS
@given(usages)
def test_occupied_equals_prompt_plus_output(u: Usage) -> None:
    assert occupied_tokens(u) == u.prompt_tokens + u.output_tokens


# -- estimate ------------------------------------------------------------------------------


def test_estimate_is_ceil_chars_over_4_per_message() -> None:
    assert estimate_tokens([text_turn("a", "user", "x" * 10)]) == 3  # ceil(10 / 4)
    assert estimate_tokens([text_turn("a", "user", "")]) == 0
    # rounded per message, not over the list
    assert estimate_tokens([text_turn("a", "user", "x"), text_turn("b", "user", "y")]) == 2
    assert estimate_tokens([text_turn("a", "user", "xy")]) == 1


def test_estimate_counts_every_kind_of_block() -> None:
    call = ToolCallBlock(id="c1", name="read", arguments={"path": "a.txt"})
    args = '{"path": "a.txt"}'
    turn = Turn(
        id="a",
        role="assistant",
        content=(
            ThinkingBlock(text="t" * 8, signature="sig" * 100, summary=("s" * 4,)),
            RedactedThinkingBlock(data="R" * 400),
            TextBlock(text="hi"),
            call,
        ),
    )
    chars = 8 + 4 + 2 + len("read") + len(args)
    assert message_tokens(turn) == math.ceil(chars / 4)

    results = Turn(
        id="r",
        role="user",
        content=(
            ToolResultBlock(
                tool_call_id="c1",
                content=(TextBlock(text="z" * 40), ImageBlock(media_type="image/png", data="A")),
            ),
        ),
    )
    assert message_tokens(results) == 10 + IMAGE_TOKENS

    media = Turn(
        id="m",
        role="user",
        content=(
            ImageBlock(media_type="image/png", data="A" * 10_000),
            DocumentBlock(media_type="application/pdf", data="B" * 10_000),
            CompactSummaryBlock(summary="q" * 16),
        ),
    )
    assert message_tokens(media) == IMAGE_TOKENS + DOCUMENT_TOKENS + 4


def test_invalid_tool_call_counts_its_raw_text() -> None:
    call = ToolCallBlock(id="c", name="ab", raw_arguments='{"x": tru', invalid="truncated")
    assert message_tokens(Turn(id="a", role="assistant", content=(call,))) == math.ceil(11 / 4)


def test_tokenizer_hook_replaces_the_heuristic() -> None:
    def words(s: str) -> int:
        return len(s.split())

    turn = Turn(
        id="a",
        role="user",
        content=(TextBlock(text="one two three"), tool_result("c", "four five")),
    )
    assert message_tokens(turn, tokenizer=words) == 5
    img = Turn(id="i", role="user", content=(ImageBlock(media_type="image/png", data="A"),))
    assert estimate_tokens([turn, img], tokenizer=words) == 5 + IMAGE_TOKENS


@SETTINGS
@given(turn_lists(prefix="a"), turn_lists(prefix="b"))
def test_estimate_is_additive_over_concatenation(a: list[Turn], b: list[Turn]) -> None:
    before = copy.deepcopy((a, b))
    assert estimate_tokens(a + b) == estimate_tokens(a) + estimate_tokens(b)
    assert estimate_tokens(a) >= 0
    assert (a, b) == before, "the input was mutated"


@SETTINGS
@given(turn_lists())
def test_estimate_grows_with_appended_text(turns: list[Turn]) -> None:
    longer = [*turns, text_turn("x", "user", "word " * 20)]
    assert estimate_tokens(longer) == estimate_tokens(turns) + 25


# -- effective window ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "output", "expected"),
    [
        (200_000, 64_000, 180_000),  # the 20,000 default reserve
        (32_768, 4_096, 28_672),  # capped by max output
        (32_768, 32_768, 24_576),  # capped by a quarter of the window
        (2_048, 2_048, 1_536),
        (100, 0, 100),  # no output -> no reserve
        (0, 10, 1),  # clamped >= 1
        (-5, -5, 1),
    ],
)
def test_effective_window(window: int, output: int, expected: int) -> None:
    assert effective_window(limits(window, output), POLICY) == expected


@SETTINGS
@given(any_limits, any_policy)
def test_effective_window_is_between_1_and_the_window(
    lim: ModelLimits, pol: CompactionPolicy
) -> None:
    eff = effective_window(lim, pol)
    assert 1 <= eff <= max(1, lim.context_window)
    reserve = output_reserve(lim, pol)
    assert 0 <= reserve <= max(0, lim.max_output_tokens)
    assert reserve <= max(1, lim.context_window) // 4


# -- trigger -------------------------------------------------------------------------------


def test_ratio_rule_fires_at_the_threshold() -> None:
    lim = limits(200_000, 16_000)  # eff 184,000; headroom rule at 184,000 - 17,024 + 1
    assert threshold_tokens(lim, POLICY) == 147_200
    assert not fires(147_199, lim)
    assert fires(147_200, lim)


def test_32k_window_compacts_while_one_more_maximal_reply_still_fits() -> None:
    lim = limits(32_768, 8_192)
    eff = effective_window(lim, POLICY)
    assert eff == 24_576
    assert safety_margin(lim) == 1_024
    assert needed_headroom(lim, POLICY) == 8_192 + 1_024
    # the headroom rule fires above 15,360, well before 80 % (19,661) ...
    assert trigger_tokens(lim, POLICY) == 15_361
    assert not fires(15_360, lim)
    assert fires(15_361, lim)
    # ... so the view at the last un-triggered check plus a maximal reply and the margin fits
    assert eff >= 15_360 + 8_192 + 1_024
    # while 80 % alone would not leave room for one maximal reply
    assert threshold_tokens(lim, POLICY) + 8_192 > eff
    # thinking adds to the room needed
    thinking = CompactionPolicy(thinking_budget=2_000)
    assert trigger_tokens(lim, thinking) == 24_576 - (8_192 + 2_000 + 1_024) + 1


def test_2k_window_does_not_compact_every_turn() -> None:
    lim = limits(2_048, 2_048)  # a local model that may write until its window is full
    assert effective_window(lim, POLICY) == 1_536
    assert safety_margin(lim) == 102  # 5 % of 2,048 < 1,024
    # max output + margin (2,150) exceeds the whole effective window: capped at half of it
    assert needed_headroom(lim, POLICY) == 768
    assert trigger_tokens(lim, POLICY) == 769  # headroom 1,536 - 769 < 768
    # a view right after a compaction (system 200 + summary 150 + prompt 50) does not trigger
    assert not fires(400, lim)
    assert not fires(768, lim)
    assert fires(769, lim)


def test_hard_overflow_always_fires() -> None:
    pol = CompactionPolicy(threshold=1.0)
    for lim in (limits(1, 0), limits(10, 0), limits(1_000, 0), limits(200_000, 200_000)):
        assert fires(lim.context_window, lim, pol)
        assert fires(lim.context_window * 3, lim, pol)
    assert not fires(9, limits(10, 0), pol)  # 5 % of 10 rounds to 0 margin


@pytest.mark.parametrize("threshold", [0.0, -1.0, float("nan"), float("inf"), 80.0, 1e9, 0.3])
@pytest.mark.parametrize("window", [1, 2, 100, 8_192, 200_000])
def test_threshold_is_positive_for_any_window_and_config(threshold: float, window: int) -> None:
    lim = limits(window, window)
    pol = CompactionPolicy(threshold=threshold, output_reserve=20_000)
    assert threshold_tokens(lim, pol) >= 1
    assert trigger_tokens(lim, pol) >= 1
    assert not fires(0, lim, pol)


def test_normalized_fraction() -> None:
    assert normalized_fraction(0.3, 0.8) == 0.3
    assert normalized_fraction(80, 0.8) == approx(0.8)
    assert normalized_fraction(250, 0.8) == 1.0
    assert normalized_fraction(0, 0.8) == 0.8
    assert normalized_fraction(-0.5, 0.8) == 0.8
    assert normalized_fraction(float("nan"), 0.8) == 0.8


@SETTINGS
@given(fractions)
def test_normalized_fraction_is_in_0_1(value: float) -> None:
    assert 0 < normalized_fraction(value, 0.5) <= 1


@SETTINGS
@given(any_limits, any_policy, st.integers(0, 3_000_000), st.integers(0, 3_000_000))
def test_trigger_is_monotone_in_tokens(
    lim: ModelLimits, pol: CompactionPolicy, a: int, b: int
) -> None:
    lo, hi = sorted((a, b))
    if fires(lo, lim, pol):
        assert fires(hi, lim, pol)
    assert not fires(0, lim, pol)
    assert fires(max(1, lim.context_window), lim, pol)


@SETTINGS
@given(sane_limits, any_policy, st.integers(0, 3_000_000))
def test_trigger_matches_the_documented_rule(
    lim: ModelLimits, pol: CompactionPolicy, tokens: int
) -> None:
    p = make_pressure(tokens, lim, pol, source="measured", is_approximate=False)
    assert p.headroom == p.effective_window - tokens
    assert p.ratio == tokens / p.effective_window
    rule = (
        tokens >= threshold_tokens(lim, pol)
        or p.headroom < needed_headroom(lim, pol)
        or tokens >= lim.context_window
    )
    assert trigger_reached(p, lim, pol) == rule


def test_text_tokens_for_system_prompt_and_schemas() -> None:
    assert text_tokens("x" * 9) == 3
    assert text_tokens("") == 0
    assert text_tokens("a b c", tokenizer=lambda s: len(s.split())) == 3


@SETTINGS
@given(st.text(max_size=200))
def test_text_tokens_matches_a_one_text_message(text: str) -> None:
    assert text_tokens(text) == message_tokens(text_turn("t", "user", text))
