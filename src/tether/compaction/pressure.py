"""Context pressure: how much of a model's context window the next request occupies.

Owns: the policy record, token accounting from normalized usage, the effective window and the
trigger rule. The model limits and the character heuristic for turns no usage covers yet live on
the bottom floor (`tether.tokens`; their names are kept here for the compaction modules).
Does not own: any state across requests (`tether.compaction.monitor`), the model table
(`tether.compaction.windows`), nor the summarize call (an edge).

Pure: imports only `tether.messages` and `tether.tokens`; no I/O, no clock; inputs are never mutated.

Shapes (all figures in tokens):
    ModelLimits(context_window, max_output_tokens, source)
    CompactionPolicy(threshold, output_reserve, thinking_budget, hysteresis, runaway_total,
                     runaway_growth)
    Pressure(tokens, effective_window, ratio, headroom, source, is_approximate)
    occupied_tokens(usage) -> int
    estimate_tokens(turns, *, tokenizer=None) -> int
    text_tokens(text, *, tokenizer=None) -> int                  # system prompt, tool schemas
    effective_window(limits, policy) -> int                      # >= 1
    trigger_reached(pressure, limits, policy) -> bool

The rule in numbers:
    output reserve   = min(policy.output_reserve, max_output_tokens, context_window // 4)
    effective window = max(1, context_window - output reserve)
    safety margin    = min(1024, 5 % of context_window)
    needed headroom  = min(max_output_tokens + thinking_budget + safety margin,
                           effective window // 2)
    trigger          = ratio >= threshold  or  headroom < needed headroom
                       or tokens >= context_window (hard overflow)

The headroom rule makes a small window compact while one more maximal reply still fits
(32k window, 8k output: at 15,360 tokens rather than at 80 % = 19,661); its cap at half the
effective window keeps a model whose max output is as large as its window (2k window, 2k
output) from compacting every turn (it compacts above 768 tokens, not at 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from tether.messages import Usage
from tether.tokens import (
    CHARS_PER_TOKEN,
    DOCUMENT_TOKENS,
    IMAGE_TOKENS,
    LimitsSource,
    ModelLimits,
    Tokenizer,
    estimate_tokens,
    message_tokens,
    text_tokens,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "DOCUMENT_TOKENS",
    "IMAGE_TOKENS",
    "CompactionPolicy",
    "LimitsSource",
    "ModelLimits",
    "Pressure",
    "Tokenizer",
    "effective_window",
    "estimate_tokens",
    "make_pressure",
    "message_tokens",
    "normalized_fraction",
    "occupied_tokens",
    "output_reserve",
    "text_tokens",
    "threshold_tokens",
    "trigger_reached",
    "trigger_tokens",
]

PressureSource = Literal["measured", "estimated"]

SAFETY_MARGIN_TOKENS = 1_024
"""Safety margin of the headroom rule, in tokens (or 5 % of the window when that is smaller)."""

DEFAULT_THRESHOLD = 0.8
DEFAULT_HYSTERESIS = 0.10
DEFAULT_RUNAWAY_TOTAL = 0.9
DEFAULT_RUNAWAY_GROWTH = 0.4


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPolicy:
    """When to compact, as fractions of the effective window unless stated otherwise.

    Bad values are clamped, never raised on (see `normalized_fraction`): a fraction above 1
    reads as a percentage (80 -> 0.8), a non-positive or NaN one falls back to its default.

    Attributes:
        threshold: compact when the pressure ratio reaches this, in (0, 1].
        output_reserve: tokens kept free for the reply; never more than the model's
            max_output_tokens nor a quarter of the window.
        thinking_budget: tokens of extended thinking per reply, when thinking is on.
        hysteresis: after a compaction, no new one until the pressure grew by this fraction
            beyond the post-compaction baseline (hard overflow excepted).
        runaway_total: refuse to continue above this ratio when compaction could not bring
            the pressure down.
        runaway_growth: growth in ONE turn (between two checks) above this fraction of the
            effective window is a runaway: compact first, refuse if compaction is not possible.
    """

    threshold: float = DEFAULT_THRESHOLD
    output_reserve: int = 20_000
    thinking_budget: int = 0
    hysteresis: float = DEFAULT_HYSTERESIS
    runaway_total: float = DEFAULT_RUNAWAY_TOTAL
    runaway_growth: float = DEFAULT_RUNAWAY_GROWTH


@dataclass(frozen=True, slots=True, kw_only=True)
class Pressure:
    """How much of the effective window the next request occupies.

    Attributes:
        tokens: the next request's prompt size, in tokens (measured base + estimate of the
            messages appended since, or an estimate of the whole view).
        effective_window: the window minus the output reserve, in tokens (>= 1).
        ratio: tokens / effective_window (may exceed 1).
        headroom: effective_window - tokens, in tokens (negative when over).
        source: "measured" when a provider usage for the current view's prefix is the base,
            "estimated" when the whole figure is the heuristic (+ calibration offset).
        is_approximate: True when any part of `tokens` is estimated, or when the window itself
            is a guess (`ModelLimits.source` "default": a model tether does not know), so a
            host shows the ratio as approximate (`~42%`) either way.
    """

    tokens: int
    effective_window: int
    ratio: float
    headroom: int
    source: PressureSource
    is_approximate: bool


def normalized_fraction(value: float, default: float) -> float:
    """A policy fraction clamped into (0, 1]: > 1 reads as a percentage (capped at 1),
    <= 0, NaN or infinite falls back to `default`.

    >>> normalized_fraction(80, 0.8), normalized_fraction(-1, 0.8), normalized_fraction(250, 0.8)
    (0.8, 0.8, 1.0)
    """
    if not math.isfinite(value) or value <= 0:
        return default
    if value > 1:
        value = value / 100
    return min(value, 1.0)


def _window(limits: ModelLimits) -> int:
    return max(1, limits.context_window)


def _max_output(limits: ModelLimits) -> int:
    return max(0, limits.max_output_tokens)


def output_reserve(limits: ModelLimits, policy: CompactionPolicy) -> int:
    """Tokens kept free for the reply: min(policy.output_reserve, max_output_tokens,
    window // 4), never negative."""
    return max(0, min(policy.output_reserve, _max_output(limits), _window(limits) // 4))


def effective_window(limits: ModelLimits, policy: CompactionPolicy) -> int:
    """The window minus the output reserve, in tokens; always in [1, max(1, context_window)]."""
    return max(1, _window(limits) - output_reserve(limits, policy))


def safety_margin(limits: ModelLimits) -> int:
    """min(1,024, 5 % of the window), in tokens."""
    return min(SAFETY_MARGIN_TOKENS, _window(limits) * 5 // 100)


def needed_headroom(limits: ModelLimits, policy: CompactionPolicy) -> int:
    """Room the headroom rule keeps below the effective window, in tokens:
    min(max_output_tokens + thinking_budget + safety margin, effective window // 2)."""
    want = _max_output(limits) + max(0, policy.thinking_budget) + safety_margin(limits)
    return min(want, effective_window(limits, policy) // 2)


def threshold_tokens(limits: ModelLimits, policy: CompactionPolicy) -> int:
    """The token count at which the ratio rule fires: ceil(threshold x effective window),
    always >= 1 (positive for any window and any configured ratio: a zero threshold would
    compact before every request)."""
    ratio = normalized_fraction(policy.threshold, DEFAULT_THRESHOLD)
    return max(1, math.ceil(ratio * effective_window(limits, policy)))


def trigger_tokens(limits: ModelLimits, policy: CompactionPolicy) -> int:
    """The smallest token count at which `trigger_reached` fires (>= 1)."""
    by_headroom = effective_window(limits, policy) - needed_headroom(limits, policy) + 1
    return max(1, min(threshold_tokens(limits, policy), by_headroom, _window(limits)))


def make_pressure(
    tokens: int,
    limits: ModelLimits,
    policy: CompactionPolicy,
    *,
    source: PressureSource,
    is_approximate: bool,
) -> Pressure:
    """A Pressure for `tokens` (clamped >= 0) under `limits` and `policy`; approximate also
    when the window is a fallback guess (`limits.source` "default")."""
    return pressure_in(
        tokens,
        effective_window(limits, policy),
        source=source,
        is_approximate=is_approximate or limits.source == "default",
    )


def pressure_in(
    tokens: int, effective: int, *, source: PressureSource, is_approximate: bool
) -> Pressure:
    """A Pressure for `tokens` (clamped >= 0) in an `effective` window already worked out
    (`make_pressure`, and the monitor's kept figures)."""
    tokens = max(0, tokens)
    return Pressure(
        tokens=tokens,
        effective_window=effective,
        ratio=tokens / effective,
        headroom=effective - tokens,
        source=source,
        is_approximate=is_approximate,
    )


def trigger_reached(p: Pressure, limits: ModelLimits, policy: CompactionPolicy) -> bool:
    """Whether the pressure calls for compaction (the hysteresis is the monitor's business).

    True when `p.tokens` reaches the threshold (ratio >= threshold), when the headroom below
    the effective window is less than `needed_headroom`, or at hard overflow
    (tokens >= context_window). Monotone in `p.tokens`.
    """
    return p.tokens >= trigger_tokens(limits, policy)


def occupied_tokens(usage: Usage) -> int:
    """The context one call occupied, in tokens: its whole prompt
    (input + cache_read + cache_write, see `Usage`) plus its output.

    Taken from ONE call (the last request of a tool loop), never summed across calls (cache
    tokens would be counted once per call).
    Negative fields (a broken adapter) count as 0.
    """
    return (
        max(0, usage.input_tokens)
        + max(0, usage.cache_read_tokens)
        + max(0, usage.cache_write_tokens)
        + max(0, usage.output_tokens)
    )
