"""Fixtures of the MCP tests; the servers and helpers live in `mcp_servers.py` (a module name of
its own: test modules import it, and `conftest` is a name every test folder shares)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.mcp import HttpDemo


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


@pytest.fixture
def http_demo(marks: Path) -> Iterator[HttpDemo]:
    demo = HttpDemo(marks)
    yield demo
    demo.stop()
