"""`approx`: `pytest.approx` for numbers, typed (pytest leaves its parameters unannotated, which
strict pyright reports at every use)."""

from __future__ import annotations

import pytest


def approx(expected: float, *, rel: float | None = None, abs: float | None = None) -> object:
    """`pytest.approx(expected, rel=rel, abs=abs)`: compares equal to a number near `expected`."""
    return pytest.approx(expected, rel=rel, abs=abs)  # pyright: ignore[reportUnknownMemberType]
