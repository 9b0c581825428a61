"""A real PostgreSQL for the Jobs scale-out test (`kit.postgres`): skipped only when the binaries
are genuinely absent (`.ci/run` installs them, so CI runs it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kit import postgres


@pytest.fixture
def postgres_url() -> Iterator[str]:
    try:
        with postgres.postgres() as url:
            yield url
    except postgres.Unavailable as exc:
        pytest.skip(str(exc))
