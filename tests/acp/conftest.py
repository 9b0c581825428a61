"""The ACP tests' fixture: a project served by the loopback fault server (`kit.acp`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.acp import Project, acp_project


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    with acp_project(tmp_path) as p:
        yield p
