"""Durations in settings files: parsing and formatting (pure).

Owns: `parse_duration` (a JSON number of milliseconds, or a string such as `"250ms"`, `"30s"`,
`"5m"`, `"1h"`, `"1m30s"`) → seconds, `header_seconds` (a duration in an HTTP header: plain
seconds or the unit form, None when neither) and `format_duration` (seconds → the shortest exact
string).
Does not own: where durations appear (settings files, the environment, HTTP headers).
"""

from __future__ import annotations

import itertools
import math
import re
from decimal import Decimal, InvalidOperation

from tether.errors import DurationError

_UNIT_MS: dict[str, int] = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000}
_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)", re.IGNORECASE)
_WHOLE = re.compile(r"(?:\s*(?:\d+(?:\.\d+)?|\.\d+)\s*(?:ms|s|m|h)\s*)+", re.IGNORECASE)
_NUMBER = re.compile(r"\s*(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*")

MAX_DURATION_S = 366 * 24 * 3600.0
"""The longest duration accepted (one year, in seconds); longer values are surely mistakes."""


_HELP = 'use milliseconds as a number (1500) or a string like "250ms", "30s", "5m", "1h", "1m30s"'


def parse_duration(value: object) -> float:
    """Parse a settings duration into seconds.

    Args:
        value: a non-negative JSON number (milliseconds), a numeric string (milliseconds), or a
            string of `<number><unit>` parts with units `ms`, `s`, `m`, `h` (case-insensitive,
            parts add up, largest unit first: `"1m30s"` is 90 s; OpenAI's `x-ratelimit-reset-*`
            headers use this form, e.g. `"6m0s"`).

    Returns:
        The duration in seconds (float, ≥ 0, ≤ `MAX_DURATION_S`).

    Raises:
        DurationError: booleans, negatives, NaN/infinity, unknown units, empty or other garbage.
    """
    if isinstance(value, bool):
        raise DurationError(f"{value!r} is not a duration; {_HELP}")
    total_ms: Decimal
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise DurationError(f"{value!r} is not a duration; {_HELP}")
        total_ms = Decimal(value)
    elif isinstance(value, str):
        if _NUMBER.fullmatch(value):
            total_ms = _decimal(value.strip())
        elif _WHOLE.fullmatch(value):
            parts = [(_decimal(n), _UNIT_MS[u.lower()]) for n, u in _PART.findall(value)]
            scales = [scale for _, scale in parts]
            if any(a <= b for a, b in itertools.pairwise(scales)):
                raise DurationError(f"{value!r}: units must go from largest to smallest; {_HELP}")
            total_ms = sum((n * scale for n, scale in parts), Decimal(0))
        else:
            raise DurationError(f"{value!r} is not a duration; {_HELP}")
    else:
        raise DurationError(f"a {type(value).__name__} is not a duration; {_HELP}")
    seconds = float(total_ms / 1000)
    if seconds > MAX_DURATION_S:
        raise DurationError(f"{value!r} is longer than a year; {_HELP}")
    return seconds


def header_seconds(value: str) -> float | None:
    """A duration in an HTTP header (`x-ratelimit-reset-*`, a rate-limit window) → seconds:
    plain seconds (`"12"`, `"1.5"`) or the unit form (`"6m0s"`, `"20ms"`); None for anything
    else (negative, not finite, garbage). Never raises."""
    try:
        plain = float(value.strip())
    except ValueError:
        try:
            return parse_duration(value.strip())
        except DurationError:
            return None
    return plain if math.isfinite(plain) and plain >= 0 else None


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation as exc:  # pragma: no cover - the regexes only pass numbers
        raise DurationError(f"{text!r} is not a number") from exc


def format_duration(seconds: float) -> str:
    """The shortest exact string for a duration: `"2h"`, `"5m"`, `"30s"`, `"1500ms"`, or
    `"12.5ms"` for sub-millisecond parts; `parse_duration(format_duration(s)) == s` for every
    whole number of milliseconds (and for any float whose `repr` in ms is exact).

    Args:
        seconds: a finite, non-negative duration in seconds.
    """
    ms = Decimal(repr(seconds)) * 1000
    if ms == ms.to_integral_value():
        whole = int(ms)
        for unit in ("h", "m", "s"):
            if whole and whole % _UNIT_MS[unit] == 0:
                return f"{whole // _UNIT_MS[unit]}{unit}"
        return f"{whole}ms"
    return f"{ms.normalize():f}ms"
