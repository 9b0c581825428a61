"""The shared pieces of the settings sections: the `Section` base (unknown keys refused,
frozen, aliases and names both accepted) and the value types `Duration` and `Fraction`.

Owns: those three. Kept apart from `tether.settings.model` so that section modules
(`tether.settings.mcp`) can use them without importing the whole config.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from tether.durations import format_duration, parse_duration

__all__ = ["Duration", "Fraction", "Section"]


class Section(BaseModel):
    """A settings section: unknown keys are an error, values are frozen."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_alias=True, validate_by_name=True
    )


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
"""Seconds (float) in Python; milliseconds (number) or `"30s"`-style strings in JSON."""


def _fraction(value: float) -> float:
    """A share in (0, 1]; a value above 1 reads as a percentage (90 → 0.9)."""
    if value > 1:
        value = value / 100
    if not 0 < value <= 1:
        raise ValueError("must be a fraction in (0, 1] or a percentage in (1, 100]")
    return value


Fraction = Annotated[float, AfterValidator(_fraction)]
