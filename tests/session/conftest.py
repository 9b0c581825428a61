"""Fixtures for the session store tests: a store under tmp_path with a fake clock and ids."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tether.session import SessionStore


class FakeClock:
    """Integer Unix milliseconds starting at 1_700_000_000_000, +1 per call."""

    def __init__(self) -> None:
        self.now_ms = 1_700_000_000_000

    def __call__(self) -> int:
        self.now_ms += 1
        return self.now_ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> SessionStore:
    counter = itertools.count(1)
    return SessionStore(
        tmp_path / "sessions", clock_ms=clock, id_factory=lambda: f"id{next(counter)}"
    )
