"""A real PostgreSQL for the Jobs tests that use one (`kit.postgres`): skipped only when the
binaries are genuinely absent (`.ci/run` installs them, so CI runs it). One server per test
process (a cluster takes seconds to create and start), a fresh empty database per test (the
tests share nothing through it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kit import postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str | postgres.Unavailable]:
    """The server's URL, or why there is none (each test using it is then skipped)."""
    try:
        with postgres.postgres() as url:
            yield url
    except postgres.Unavailable as exc:
        yield exc


@pytest.fixture
def postgres_url(postgres_server: str | postgres.Unavailable) -> str:
    if isinstance(postgres_server, postgres.Unavailable):
        pytest.skip(str(postgres_server))
    return postgres.fresh_database(postgres_server)
