"""A stdio MCP server (the SDK's MCPServer) that sleeps before its handshake: the run that
finds it too slow waits its `startup_timeout` once and says so in one warning; the next runs do
not wait for it at all (the fourth trial: every `tether run` paid 10 s while it was configured),
start it in the background, and its tools join the registry when it is ready."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_servers import call, make_tools

from kit.mcp import stdio_settings
from kit.waits import await_until
from tether.mcp import McpTools
from tether.tools.registry import ToolRegistry

pytestmark = pytest.mark.timeout(120)


async def test_a_server_too_slow_once_is_not_waited_for_again(tmp_path: Path) -> None:
    cache, marks = tmp_path / "cache", tmp_path / "marks"
    marks.mkdir()
    slow = stdio_settings(marks, env={"START_SLEEP": "3"}, startup_timeout="1s")
    first, said = make_tools(tmp_path, {"slow": slow}, cache_dir=cache)
    try:
        started = time.monotonic()
        assert await first.start() == []
    finally:
        await first.aclose()
    assert time.monotonic() - started < 8
    assert said == [
        (
            "mcp_server_failed",
            "MCP server `slow` did not start within 1 s (`startup_timeout`); its tools are not "
            "offered, and later runs start it without waiting",
        )
    ]
    # the next run: no wait, one warning, and the tools join once the server is ready
    patient = stdio_settings(marks, env={"START_SLEEP": "3"})
    second, said = make_tools(tmp_path, {"slow": patient}, cache_dir=cache)
    assert isinstance(second, McpTools)
    registry = ToolRegistry([])
    joined: list[str] = []
    try:
        started = time.monotonic()
        offered = await second.start()
        waited = time.monotonic() - started
        second.attach(registry)
        second.on_joined = joined.append
        assert offered == [] and waited < 1.0
        assert said == [
            (
                "mcp_server_late",
                "MCP server `slow` did not start in time in an earlier run; the run goes on "
                "without it and its tools join when it is ready",
            )
        ]
        await await_until(lambda: joined == ["slow"], timeout_s=60)
        assert "mcp__slow__add" in registry.names()
        text, is_error, _ = await call(registry, "mcp__slow__add", tmp_path, a=2, b=3)
        assert (text, is_error) == ("5", False)
    finally:
        await second.aclose()
    # and the one after offers it from the listing cached by that background start
    third, said = make_tools(tmp_path, {"slow": patient}, cache_dir=cache)
    try:
        assert "mcp__slow__add" in [t.name for t in await third.start()]
        assert said == []
    finally:
        await third.aclose()


async def test_closing_while_a_late_server_is_still_starting_is_quick(tmp_path: Path) -> None:
    cache, marks = tmp_path / "cache", tmp_path / "marks"
    marks.mkdir()
    hang = stdio_settings(marks, env={"START_SLEEP": "600"}, startup_timeout="1s")
    first, _ = make_tools(tmp_path, {"hang": hang}, cache_dir=cache)
    await first.start()
    await first.aclose()
    second, said = make_tools(tmp_path, {"hang": hang}, cache_dir=cache)
    await second.start()
    assert [k for k, _ in said] == ["mcp_server_late"]
    started = time.monotonic()
    await second.aclose()
    assert time.monotonic() - started < 5
