"""`McpTools` against real MCP servers (the SDK's MCPServer, started by the tests) over stdio
and streamable HTTP: listing, calls, errors, images, structured content, resources,
tools/list_changed, a crash mid-call, a hang past the time limit, cancellation, stderr logs,
and the lazy start from a cached listing."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kit.mcp import HttpDemo, stdio_settings
from kit.waits import await_until
from tether.mcp import McpTools
from tether.messages import ImageBlock, TextBlock, ToolCallBlock
from tether.settings.model import McpServerSettings
from tether.tools.base import Tool
from tether.tools.context import ToolContext
from tether.tools.exec.run import run_tool
from tether.tools.registry import ToolRegistry

pytestmark = pytest.mark.timeout(120)


def make_tools(
    tmp_path: Path, servers: dict[str, McpServerSettings], **kw: Any
) -> tuple[McpTools, list[tuple[str, str]]]:
    warnings: list[tuple[str, str]] = []
    root = tmp_path / "work"
    root.mkdir(exist_ok=True)
    mcp = McpTools(
        servers,
        root=root,
        session_dir=tmp_path / "session",
        on_warning=lambda k, m: warnings.append((k, m)),
        allow_unsandboxed=True,
        **kw,
    )
    return mcp, warnings


async def call(
    tools: list[Tool] | ToolRegistry, name: str, tmp_path: Path, **args: Any
) -> tuple[str, bool, tuple[Any, ...]]:
    """Run one call through the real tool runner: (joined text, is_error, parts)."""
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    ctx = ToolContext.create(tmp_path)
    run = await run_tool(registry, ToolCallBlock(id="c1", name=name, arguments=args), ctx)
    parts = run.block.content
    text = "\n".join(p.text for p in parts if isinstance(p, TextBlock))
    return text, run.block.is_error, parts


@pytest.fixture(params=["stdio", "http"])
async def demo(
    request: pytest.FixtureRequest, tmp_path: Path, marks: Path
) -> AsyncIterator[tuple[McpTools, list[Tool]]]:
    if request.param == "stdio":
        settings = stdio_settings(marks)
    else:
        server = HttpDemo(marks)
        request.addfinalizer(server.stop)
        settings = McpServerSettings(url=server.url)
    mcp, warnings = make_tools(tmp_path, {"demo": settings})
    tools = await mcp.start(taken=["bash"])
    assert warnings == []
    yield mcp, tools
    await mcp.aclose()


NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


async def test_listing_names_and_schemas(demo: tuple[McpTools, list[Tool]]) -> None:
    _, tools = demo
    by_name = {t.name: t for t in tools}
    assert "mcp__demo__add" in by_name and "mcp_read_resource" in by_name
    assert all(NAME.match(n) for n in by_name)
    add = by_name["mcp__demo__add"]
    assert add.parameters["properties"]["a"]["type"] == "integer"  # passed through
    assert add.parameters["required"] == ["a", "b"]
    assert "Add two integers." in add.description and "demo" in add.description


async def test_calls_errors_images_structured(
    demo: tuple[McpTools, list[Tool]], tmp_path: Path
) -> None:
    _, tools = demo
    text, is_error, _ = await call(tools, "mcp__demo__add", tmp_path, a=2, b=3)
    assert (text, is_error) == ("5", False)
    text, is_error, _ = await call(tools, "mcp__demo__weather", tmp_path, city="Oslo")
    assert not is_error and json.loads(text) == {"city": "Oslo", "celsius": 21.5}
    text, is_error, _ = await call(tools, "mcp__demo__structured_only", tmp_path)
    assert (json.loads(text), is_error) == ({"answer": 42}, False)
    text, is_error, _ = await call(tools, "mcp__demo__fail", tmp_path, message="boom")
    assert is_error and "fail" in text
    _, is_error, parts = await call(tools, "mcp__demo__pic", tmp_path)
    assert not is_error
    assert [type(p) for p in parts] == [ImageBlock]
    assert parts[0].media_type == "image/png" and parts[0].data.startswith("iVBORw0KGgo")
    text, _, _ = await call(tools, "mcp__demo__embedded", tmp_path)
    assert "[resource note://one (text/plain)]\nhi" in text and "note://readme" in text


async def test_read_resource(demo: tuple[McpTools, list[Tool]], tmp_path: Path) -> None:
    _, tools = demo
    text, is_error, _ = await call(
        tools, "mcp_read_resource", tmp_path, server="demo", uri="note://readme"
    )
    assert not is_error and text.endswith("the readme text")
    text, is_error, _ = await call(
        tools, "mcp_read_resource", tmp_path, server="nope", uri="note://readme"
    )
    assert is_error and "no MCP server `nope`" in text


async def test_list_changed_updates_the_registry(
    demo: tuple[McpTools, list[Tool]], tmp_path: Path
) -> None:
    mcp, tools = demo
    registry = ToolRegistry(tools)
    mcp.attach(registry)
    assert "mcp__demo__extra" not in registry
    text, _, _ = await call(registry, "mcp__demo__grow", tmp_path)
    assert text == "grown"
    await await_until(lambda: "mcp__demo__extra" in registry)
    text, is_error, _ = await call(registry, "mcp__demo__extra", tmp_path)
    assert (text, is_error) == ("extra!", False)


async def test_hang_past_the_timeout_cancels_the_request(
    tmp_path: Path, marks: Path
) -> None:
    mcp, _ = make_tools(tmp_path, {"demo": stdio_settings(marks, timeout="1s")})
    tools = await mcp.start()
    try:
        text, is_error, _ = await call(tools, "mcp__demo__hang", tmp_path, seconds=30)
        assert is_error and "timed out after 1 s" in text and "`demo`" in text
        await await_until(lambda: (marks / "cancelled").exists())  # notifications/cancelled
        text, is_error, _ = await call(tools, "mcp__demo__add", tmp_path, a=1, b=1)
        assert (text, is_error) == ("2", False)  # the same server goes on
        assert len(list(marks.glob("started-*"))) == 1
    finally:
        await mcp.aclose()


async def test_cancellation_sends_cancelled(tmp_path: Path, marks: Path) -> None:
    mcp, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)})
    tools = await mcp.start()
    try:
        task = asyncio.create_task(call(tools, "mcp__demo__hang", tmp_path, seconds=30))
        await await_until(lambda: (marks / "hanging").exists(), timeout_s=10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await await_until(lambda: (marks / "cancelled").exists())
    finally:
        await mcp.aclose()


async def test_crash_mid_call_is_an_error_then_restart(tmp_path: Path, marks: Path) -> None:
    mcp, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)})
    tools = await mcp.start()
    try:
        text, is_error, _ = await call(tools, "mcp__demo__crash", tmp_path)
        assert is_error and "MCP server `demo`" in text and "restarted" in text
        text, is_error, _ = await call(tools, "mcp__demo__add", tmp_path, a=4, b=5)
        assert (text, is_error) == ("9", False)
        assert len(list(marks.glob("started-*"))) == 2
        log = (tmp_path / "session" / "mcp-warnings" / "demo.log").read_text()
        assert "crashing now" in log and log.count("demo server starting") == 2
    finally:
        await mcp.aclose()


async def test_restarts_are_bounded(tmp_path: Path, marks: Path) -> None:
    mcp, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)})
    tools = await mcp.start()
    mcp.connections["demo"].max_restarts = 1
    try:
        text, is_error, _ = await call(tools, "mcp__demo__crash", tmp_path)
        assert is_error
        text, is_error, _ = await call(tools, "mcp__demo__crash", tmp_path)
        assert is_error and "not restarted again" in text
        text, is_error, _ = await call(tools, "mcp__demo__add", tmp_path, a=1, b=2)
        assert is_error and "not restarted again" in text
        assert len(list(marks.glob("started-*"))) == 2
    finally:
        await mcp.aclose()


async def test_http_server_gone_is_an_error(tmp_path: Path, http_demo: HttpDemo) -> None:
    mcp, _ = make_tools(tmp_path, {"web": McpServerSettings(url=http_demo.url)})
    tools = await mcp.start()
    try:
        http_demo.stop()
        text, is_error, _ = await call(tools, "mcp__web__add", tmp_path, a=1, b=2)
        assert is_error and "MCP server `web`" in text
    finally:
        await mcp.aclose()


async def test_failing_start_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = McpServerSettings(command="/nonexistent/mcp-server")
    slow = McpServerSettings.model_validate(
        {"command": "sleep", "args": ["30"], "startup_timeout": "1s"}
    )
    off = McpServerSettings(command="/nonexistent", enabled=False)
    missing = McpServerSettings(command="x", env={"K": "${TETHER_TEST_UNSET_VAR}"})
    mcp, warnings = make_tools(
        tmp_path, {"bad": bad, "slow": slow, "off": off, "missing": missing}
    )
    started = time.monotonic()
    try:
        assert await mcp.start() == []
    finally:
        await mcp.aclose()
    # the server still in its handshake is cancelled at its timeout (1 s) and the SDK ends its
    # process (stdin closed, 2 s, then terminated): not 10 s more waiting for it to stop
    assert time.monotonic() - started < 8
    gc.collect()  # an exception nobody retrieved is logged as its future is collected
    assert "never retrieved" not in caplog.text
    kinds = {m.split("`")[1]: k for k, m in warnings}
    assert kinds == {
        "bad": "mcp_server_failed",
        "slow": "mcp_server_failed",
        "missing": "mcp_server_failed",
    }
    text = " ".join(m for _, m in warnings)
    assert "did not start within 1 s" in text and "TETHER_TEST_UNSET_VAR" in text


async def test_lazy_server_offered_from_cache_and_started_at_first_call(
    tmp_path: Path, marks: Path
) -> None:
    cache = tmp_path / "cache"
    first, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)}, cache_dir=cache)
    names = [t.name for t in await first.start()]
    await first.aclose()
    assert len(list(marks.glob("started-*"))) == 1
    second, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)}, cache_dir=cache)
    try:
        tools = await second.start()
        assert [t.name for t in tools] == names
        assert len(list(marks.glob("started-*"))) == 1  # not started yet
        text, _, _ = await call(tools, "mcp__demo__add", tmp_path, a=20, b=22)
        assert text == "42"
        assert len(list(marks.glob("started-*"))) == 2
    finally:
        await second.aclose()
    eager, _ = make_tools(
        tmp_path, {"demo": stdio_settings(marks, start="eager")}, cache_dir=cache
    )
    try:
        await eager.start()
        assert len(list(marks.glob("started-*"))) == 3  # eager: started at once
    finally:
        await eager.aclose()


async def test_names_avoid_taken_ones(tmp_path: Path, marks: Path) -> None:
    mcp, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)})
    try:
        tools = await mcp.start(taken=["mcp__demo__add"])
    finally:
        await mcp.aclose()
    names = [t.name for t in tools]
    assert "mcp__demo__add" not in names and "mcp__demo__add_2" in names


async def test_a_stale_cached_listing_is_replaced_at_the_lazy_start(
    tmp_path: Path, marks: Path
) -> None:
    cache = tmp_path / "cache"
    first, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)}, cache_dir=cache)
    await first.start()
    await first.aclose()
    (cached,) = (cache / "mcp-tools").glob("demo-*.json")
    listing = [t for t in json.loads(cached.read_text()) if t["name"] != "add"]
    cached.write_text(json.dumps(listing))
    second, _ = make_tools(tmp_path, {"demo": stdio_settings(marks)}, cache_dir=cache)
    try:
        registry = ToolRegistry(await second.start())
        second.attach(registry)
        assert "mcp__demo__add" not in registry
        text, _, _ = await call(registry, "mcp__demo__weather", tmp_path, city="Rome")
        assert json.loads(text)["city"] == "Rome"
        assert "mcp__demo__add" in registry  # the live listing replaced the stale one
    finally:
        await second.aclose()
