"""Micro benchmark: one call of a trivial tool in the worker process vs in a thread.

Usage: python bench/tool_worker.py [--n 10]

Prints milliseconds per call (mean of `n` calls, after one warm-up each) and the ratio:
    thread    `run_tool` of a sync tool defined in this process (asyncio.to_thread)
    worker    `run_tool` of the same tool scanned from a tool folder: a fresh
              `python -m tether.tools.worker` per call (interpreter start, imports, JSON lines)
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from tether.messages import ToolCallBlock
from tether.tools import ToolContext, ToolRegistry, scan_tool_folders, tool
from tether.tools.run import run_tool

SOURCE = "from tether.tools import tool\n\n@tool\ndef echo(text: str) -> str:\n    return text\n"


@tool(name="echo")
def echo(text: str) -> str:
    return text


async def _mean_ms(reg: ToolRegistry, ctx: ToolContext, n: int) -> float:
    call = ToolCallBlock(id="c", name="echo", arguments={"text": "hi"})
    await run_tool(reg, call, ctx)
    t0 = time.perf_counter()
    for _ in range(n):
        r = await run_tool(reg, call, ctx)
        assert r.block.text == "hi", r.block.text
    return (time.perf_counter() - t0) / n * 1e3


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tools"
        folder.mkdir()
        (folder / "echo.py").write_text(SOURCE)
        ctx = ToolContext.create(tmp)
        thread_ms = await _mean_ms(ToolRegistry([echo]), ctx, n)
        worker_ms = await _mean_ms(scan_tool_folders([folder]).registry, ctx, n)
    print(f"thread  {thread_ms:8.3f} ms/call")
    print(f"worker  {worker_ms:8.3f} ms/call")
    print(f"RESULT worker/thread = {worker_ms / thread_ms:.0f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10)
    asyncio.run(main(parser.parse_args().n))
