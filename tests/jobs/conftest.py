"""A real PostgreSQL for the Jobs scale-out test (`pgserver.postgres`): skipped only when
the binaries are genuinely absent (`.ci/run` installs them, so CI runs it)."""

from __future__ import annotations

from collections.abc import Iterator

import pgserver
import pytest


@pytest.fixture
def postgres_url() -> Iterator[str]:
    try:
        with pgserver.postgres() as url:
            yield url
    except pgserver.Unavailable as exc:
        pytest.skip(str(exc))
