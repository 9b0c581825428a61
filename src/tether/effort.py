"""Reasoning effort: one level the user picks (`run.effort`, `--effort`, `/effort`,
`Agent.apply_settings`), mapped onto each provider API's own field.

Owns: the levels (`Effort`, `EFFORTS`), the cycle order (`next_effort`), the mapping per API
(`anthropic_budget`, `openai_effort`, `gemini_budget`, `ollama_think`). Pure: no I/O,
no imports of tether's.
Does not own: whether a model reasons (`tether.providers.catalog.reasons`), the requests
themselves (each adapter reads `ModelRequest.effort`).

    level   Anthropic          OpenAI (Responses      Gemini            Ollama `think`
            thinking.budget    reasoning.effort,      thinkingBudget
            _tokens            Chat reasoning_effort)
    low     2048               low                    1024              true ("low" for gpt-oss)
    medium  8192               medium                 8192              true ("medium")
    high    16384              high                   16384             true ("high")
    max     31999              high                   24576             true ("high")

The Anthropic budgets follow Claude Code's thinking levels (its top, "ultrathink", is 31999) and
stay below the request's `max_tokens` (Anthropic's rule; at least its minimum of 1024, else
thinking is off). OpenAI has no level above `high` for most models, so `max` is `high`; Gemini
2.5 Flash takes at most 24576. A level set for a model that does not reason is not sent
(the API would refuse the field) and `tether.providers.catalog.effort_note` says so once.
"""

from __future__ import annotations

from typing import Literal

Effort = Literal["low", "medium", "high", "max"]
"""A reasoning effort level."""

EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "max")

ANTHROPIC_BUDGETS: dict[Effort, int] = {"low": 2048, "medium": 8192, "high": 16384, "max": 31999}
GEMINI_BUDGETS: dict[Effort, int] = {"low": 1024, "medium": 8192, "high": 16384, "max": 24576}
ANTHROPIC_MIN_BUDGET = 1024


def parse_effort(text: str) -> Effort | None:
    """`text` as a level (case and blanks ignored), or None when it is none."""
    value = text.strip().lower()
    for e in EFFORTS:
        if e == value:
            return e
    return None


def next_effort(current: Effort | None) -> Effort | None:
    """The level after `current` in the cycle default → low → medium → high → max → default
    (None is the provider's own default)."""
    order: tuple[Effort | None, ...] = (None, *EFFORTS)
    return order[(order.index(current) + 1) % len(order)]


def anthropic_budget(effort: Effort, max_tokens: int) -> int | None:
    """`thinking.budget_tokens` for `effort`, below `max_tokens`; None when even Anthropic's
    minimum (1024) does not fit (thinking off)."""
    budget = min(ANTHROPIC_BUDGETS[effort], max_tokens - 1)
    return budget if budget >= ANTHROPIC_MIN_BUDGET else None


def openai_effort(effort: Effort) -> Literal["low", "medium", "high"]:
    """`reasoning.effort` (Responses) / `reasoning_effort` (Chat Completions) for `effort`."""
    return "high" if effort == "max" else effort


def gemini_budget(effort: Effort) -> int:
    """`thinkingConfig.thinkingBudget` for `effort`, in tokens."""
    return GEMINI_BUDGETS[effort]


def ollama_think(effort: Effort, model: str) -> bool | str:
    """Ollama's `think` for `effort`: gpt-oss takes a level, other thinking models on/off."""
    return openai_effort(effort) if "gpt-oss" in model.lower() else True

