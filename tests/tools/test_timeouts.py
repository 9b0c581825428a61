"""Time limits: the default, a tool's `timeout` argument (read, capped, stripped), `on_timeout`
(clean-up, a final result, its own grace period), in process and in the worker."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit.calls import make_call
from tether.messages import TextBlock
from tether.tools import TimedOut, ToolContext, ToolRegistry, tool
from tether.tools.base import MAX_CALL_TIMEOUT_S
from tether.tools.exec.run import call_limit_s, run_tool
from tether.tools.scan import scan_tool_folders


async def test_timeout_argument_is_read_capped_and_stripped(ctx: ToolContext) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    async def wait(seconds: float, timeout: float = 5.0) -> str:
        seen.append({"seconds": seconds, "timeout": timeout})
        await asyncio.sleep(seconds)
        return "done"

    reg = ToolRegistry([wait])
    t0 = time.monotonic()
    r = await run_tool(reg, make_call("wait", seconds=10, timeout=0.1), ctx)
    assert r.block.is_error and r.block.text == "`wait` timed out after 0.1 s"
    assert time.monotonic() - t0 < 2
    # stripped: the function got its own default, not the model's value
    assert seen == [{"seconds": 10, "timeout": 5.0}]
    r = await run_tool(reg, make_call("wait", seconds=0.01, timeout=1), ctx, timeout_s=0.001)
    assert r.block.text == "done"  # the argument beats the runner default
    r = await run_tool(reg, make_call("wait", seconds=0, timeout=-1), ctx)
    assert r.block.is_error and "timeout: must be a number of seconds > 0" in r.block.text
    assert call_limit_s(wait, 10_000, 120) == MAX_CALL_TIMEOUT_S
    assert call_limit_s(wait, None, 120) == 120


async def test_on_timeout_returns_a_final_result(ctx: ToolContext) -> None:
    told: list[TimedOut] = []
    stop = threading.Event()

    def cleanup(info: TimedOut) -> str:
        told.append(info)
        stop.set()
        return "partial: 3 of 10 files done"

    @tool(on_timeout=cleanup)
    def crawl(n: int, ctx: ToolContext) -> str:
        stop.wait(10)
        return "all"

    r = await run_tool(ToolRegistry([crawl]), make_call("crawl", n=10), ctx, timeout_s=0.05)
    assert r.block.is_error
    assert r.block.content == (
        TextBlock(text="`crawl` timed out after 0.05 s"),
        TextBlock(text="partial: 3 of 10 files done"),
    )
    assert told[0].tool == "crawl" and told[0].arguments == {"n": 10} and told[0].limit_s == 0.05
    assert told[0].ctx is ctx


async def test_on_timeout_gets_only_its_grace_period(ctx: ToolContext) -> None:
    async def slow_cleanup(info: TimedOut) -> str:
        await asyncio.sleep(10)
        return "never"

    async def failing_cleanup(info: TimedOut) -> None:
        raise RuntimeError("disk gone")

    @tool(on_timeout=slow_cleanup)
    async def a() -> str:
        await asyncio.sleep(10)
        return ""

    @tool(on_timeout=failing_cleanup)
    async def b() -> str:
        await asyncio.sleep(10)
        return ""

    reg = ToolRegistry([a, b])
    t0 = time.monotonic()
    r = await run_tool(reg, make_call("a"), ctx, timeout_s=0.05, grace_s=0.1)
    assert r.block.is_error and "did not finish within 0.1 s" in r.block.text
    assert time.monotonic() - t0 < 2
    r = await run_tool(reg, make_call("b"), ctx, timeout_s=0.05, grace_s=0.1)
    assert r.block.is_error and "on_timeout cleanup failed: RuntimeError: disk gone" in r.block.text


TIMEOUT_TOOLS = """
import os, signal, time
from pathlib import Path
from tether.tools import tool

def _cleanup(info):
    Path(info.arguments["marker"]).write_text("cleaned")
    return {"result": "partial result", "system": "it was slow"}

@tool(on_timeout=_cleanup)
def slow_clean(marker: str, timeout: float = 100) -> str:
    time.sleep(30)
    return "late"

def _hang(info):
    time.sleep(30)

@tool(on_timeout=_hang)
def slow_hang(pidfile: str) -> str:
    import subprocess
    child = subprocess.Popen(["sleep", "60"])
    Path(pidfile).write_text(str(child.pid))
    time.sleep(30)
    return "late"
"""


async def test_worker_timeout_runs_on_timeout_then_kills_the_group(
    tmp_path: Path, ctx: ToolContext, alive: Callable[[int], bool]
) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "slow.py").write_text(TIMEOUT_TOOLS)
    reg = scan_tool_folders([folder]).registry
    marker = tmp_path / "marker"
    r = await run_tool(reg, make_call("slow_clean", marker=str(marker), timeout=1.5), ctx)
    assert r.block.is_error and r.block.text.startswith("`slow_clean` timed out after 1.5 s")
    assert "partial result" in r.block.text and r.system_notes == ("it was slow",)
    assert marker.read_text() == "cleaned"

    pidfile = tmp_path / "pid"
    t0 = time.monotonic()
    r = await run_tool(
        reg, make_call("slow_hang", pidfile=str(pidfile)), ctx, timeout_s=3, grace_s=0.3
    )
    assert time.monotonic() - t0 < 8
    assert r.block.is_error and "timed out after 3 s" in r.block.text
    assert "the tool process was killed" in r.block.text
    child = int(pidfile.read_text())
    for _ in range(50):
        if not alive(child):
            break
        await asyncio.sleep(0.05)
    assert not alive(child), "the tool's child process survived the group kill"
