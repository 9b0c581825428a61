"""Shared fixtures for the tools tests: a workspace folder, its context, and a call helper."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kit.calls import make_call
from tether.messages import ToolResultBlock
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env

Call = Callable[..., Awaitable[ToolResultBlock]]

@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    return r.resolve()


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext.create(root, env=scrubbed_env())


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(builtin_tools())



@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> Call:
    """`await call("read", path="x")` runs a built-in through `run_tool_call`."""

    async def run(name: str, **arguments: Any) -> ToolResultBlock:
        block = make_call(name, **arguments)
        result = await run_tool_call(registry, block, ctx)
        assert result.tool_call_id == block.id
        assert result.content and all(getattr(p, "text", "x").strip() for p in result.content), (
            "a result never has empty content"
        )
        return result

    return run


@pytest.fixture
def alive() -> Callable[[int], bool]:
    """`alive(pid)`: see `process_alive`."""
    return process_alive


def process_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, killed but not reaped, counts as gone)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
