"""STAND-IN for the `pressure` branch (the integrator takes that branch's file over this one).

Pure context-pressure arithmetic: token estimates, the effective window, the trigger.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLimits:
    """A model's raw context window and max output, in tokens."""

    context_window: int
    max_output_tokens: int
    source: str = "table"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPolicy:
    """Thresholds (ratios of the effective window) and reserves (tokens)."""

    threshold: float = 0.8
    output_reserve: int = 20_000
    thinking_budget: int = 0
    hysteresis: float = 0.10
    runaway_total: float = 0.9
    runaway_growth: float = 0.4


@dataclass(frozen=True, slots=True, kw_only=True)
class Pressure:
    """How much of the effective window the next request occupies (tokens)."""

    tokens: int
    effective_window: int
    ratio: float
    headroom: int
    source: Literal["measured", "estimated"]
    is_approximate: bool


def occupied_tokens(usage: Usage) -> int:
    """Prompt tokens of a request plus its output (tokens)."""
    return usage.prompt_tokens + usage.output_tokens


def _block_chars(b: object) -> int:
    if isinstance(b, TextBlock | ThinkingBlock):
        return len(b.text)
    if isinstance(b, ToolCallBlock):
        return len(b.name) + len(str(b.arguments))
    if isinstance(b, ToolResultBlock):
        return len(b.text) + 16
    if isinstance(b, CompactSummaryBlock):
        return len(b.summary)
    if isinstance(b, ImageBlock | DocumentBlock):
        return 4000
    return 0


def estimate_tokens(turns: Sequence[Turn]) -> int:
    """ceil(chars / 4) per turn, plus 4 tokens of framing per turn."""
    return sum(math.ceil(sum(_block_chars(b) for b in t.content) / 4) + 4 for t in turns)


def effective_window(limits: ModelLimits, policy: CompactionPolicy) -> int:
    """Raw window minus the output reserve (≤ max output, ≤ a quarter of the window), ≥ 1."""
    reserve = min(policy.output_reserve, limits.max_output_tokens, limits.context_window // 4)
    return max(1, limits.context_window - reserve)


def trigger_reached(p: Pressure, limits: ModelLimits, policy: CompactionPolicy) -> bool:
    """ratio ≥ threshold."""
    return p.ratio >= policy.threshold
