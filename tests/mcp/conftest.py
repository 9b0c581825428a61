"""Fixtures of the MCP tests: a folder for the demo server's marks, the demo server over HTTP
(`kit.mcp`)."""

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
