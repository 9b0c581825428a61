"""Micro benchmark: one call of a trivial tool in the worker process vs in a thread.

Usage: python bench/tool_worker.py [--n 10]

Prints milliseconds per call (mean of `n` calls, after one warm-up each) and the ratios:
    thread    `run_tool` of a sync tool defined in this process (asyncio.to_thread)
    fresh     the same tool scanned from a tool folder, the baseline: a fresh
              `python -m tether.tools.exec.worker` per call (interpreter start, imports, JSON lines)
    forked    the same, as tether runs it: a worker forked per call from a pre-started server
              in the same sandbox (`tether.tools.exec.forkserver`)
Each folder-tool call runs in the OS sandbox this machine has (`--sandbox none` for none).
Goal (issue 12): forked <= 50 ms per call.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from tether.messages import ToolCallBlock
from tether.sandbox.detect import detect_sandbox
from tether.tools import ToolContext, ToolRegistry, scan_tool_folders, tool
from tether.tools.exec import forkserver
from tether.tools.exec.run import run_tool

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


async def main(n: int, sandbox: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tools"
        folder.mkdir()
        (folder / "echo.py").write_text(SOURCE)
        box = detect_sandbox() if sandbox == "auto" else None
        ctx = ToolContext.create(tmp, sandbox=box)
        folder_tools = scan_tool_folders([folder]).registry
        thread_ms = await _mean_ms(ToolRegistry([echo]), ctx, n)
        forkserver.enabled = False
        fresh_ms = await _mean_ms(folder_tools, ctx, n)
        forkserver.enabled = True
        forked_ms = await _mean_ms(folder_tools, ctx, n)
        forkserver.shutdown()
    print(f"sandbox {box.kind if box is not None else 'none'}")
    print(f"thread  {thread_ms:8.3f} ms/call")
    print(f"fresh   {fresh_ms:8.3f} ms/call  (baseline: a new interpreter per call)")
    print(f"forked  {forked_ms:8.3f} ms/call  ({fresh_ms / forked_ms:.1f}x faster than fresh)")
    print(
        f"RESULT forked {forked_ms:.1f} ms/call (goal <= 50), fresh {fresh_ms:.1f} ms/call, "
        f"forked/thread = {forked_ms / thread_ms:.0f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--sandbox", choices=["auto", "none"], default="auto")
    args = parser.parse_args()
    asyncio.run(main(args.n, args.sandbox))
