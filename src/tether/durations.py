"""Parse durations as settings and HTTP headers write them.

Owns: `parse_duration`, pure (no I/O, no clock). Does not own: where durations come from (settings,
environment, headers).

Grammar (case-insensitive, surrounding whitespace ignored):
    number                    milliseconds: 250, 2.5, "250" (a bare number in a string too)
    <number><unit>[...]       one or more parts, largest unit first: "30s", "5m", "250ms",
                              "1h", "1.5s", "1m30s", "6m0s" (OpenAI's `x-ratelimit-reset-*`
                              header form), "2h 5m"
    units                     ms · s · m · h
"""

from __future__ import annotations

import math
import re

_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)", re.IGNORECASE)


def parse_duration(value: int | float | str) -> float:
    """A duration in seconds.

    Args:
        value: a number of milliseconds, or a string in the grammar of the module docstring.

    Returns:
        Non-negative, finite seconds (float).

    Raises:
        ValueError: negative, not finite, a bool, an unknown unit, units out of order or repeated,
            or text that is not a duration.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        return _checked(float(value) / 1000.0, value)
    text = value.strip()
    if not text:
        raise ValueError("empty duration")
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return _checked(number / 1000.0, value)
    total = 0.0
    pos = 0
    last_scale = math.inf
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None:
            raise ValueError(
                f"not a duration: {value!r} (use e.g. 250, '250ms', '30s', '5m', '1h')"
            )
        scale = _UNIT_S[match.group(2).lower()]
        if scale >= last_scale:
            raise ValueError(f"not a duration: {value!r} (units must go from largest to smallest)")
        last_scale = scale
        total += float(match.group(1)) * scale
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return _checked(total, value)


def _checked(seconds: float, value: object) -> float:
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration must be finite and non-negative: {value!r}")
    return seconds
