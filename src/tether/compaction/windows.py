"""STAND-IN for the `pressure` branch (the integrator takes that branch's file over this one).

Context windows of known models; learning a window from a context_overflow message.
"""

from __future__ import annotations

import re

from tether.compaction.pressure import ModelLimits

DEFAULT_LIMITS = ModelLimits(context_window=8192, max_output_tokens=2048, source="default")
_TABLE = {
    "claude": ModelLimits(context_window=200_000, max_output_tokens=64_000),
    "gpt-4o": ModelLimits(context_window=128_000, max_output_tokens=16_384),
    "local": ModelLimits(context_window=8192, max_output_tokens=1024),
    "smollm2": ModelLimits(context_window=8192, max_output_tokens=1024),
}


def resolve_limits(
    model: str,
    *,
    configured: ModelLimits | None = None,
    provider_reported: ModelLimits | None = None,
) -> tuple[ModelLimits, str | None]:
    """Configured, else provider-reported, else the table, else a default with a warning."""
    if configured is not None:
        return configured, None
    if provider_reported is not None:
        return provider_reported, None
    low = model.lower()
    for key, limits in _TABLE.items():
        if key in low:
            return limits, None
    return (
        DEFAULT_LIMITS,
        f"unknown context window for {model!r}; assuming {DEFAULT_LIMITS.context_window}",
    )


_NUM = re.compile(r"(\d[\d,]*)\s*(?:tokens)?\s*maximum|maximum context length is (\d[\d,]*)")


def parse_overflow_limit(message: str) -> int | None:
    """The window a context_overflow message names (`> 200000 maximum`), or None."""
    m = _NUM.search(message)
    if not m:
        return None
    return int((m.group(1) or m.group(2)).replace(",", ""))
