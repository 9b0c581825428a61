"""Per-call overhead of run_tool_call (the hot path): trivial inline sync, to_thread sync, async.

Run with `-s` to see the figures; the bounds are loose (shared CI cores).
"""

from __future__ import annotations

import time

from tether.messages import ToolCallBlock
from tether.tools import ToolContext, ToolRegistry, run_tool_call, tool


@tool(inline=True)
def inline_echo(text: str, n: int = 1) -> str:
    return text


@tool
def thread_echo(text: str, n: int = 1) -> str:
    return text


@tool
async def async_echo(text: str, n: int = 1) -> str:
    return text


async def _per_call_us(reg: ToolRegistry, name: str, ctx: ToolContext, n: int) -> float:
    call = ToolCallBlock(id="c", name=name, arguments={"text": "hi", "n": 2})
    for _ in range(50):
        await run_tool_call(reg, call, ctx)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            await run_tool_call(reg, call, ctx)
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


async def test_overhead(ctx: ToolContext) -> None:
    reg = ToolRegistry([inline_echo, thread_echo, async_echo])
    inline_us = await _per_call_us(reg, "inline_echo", ctx, 2000)
    thread_us = await _per_call_us(reg, "thread_echo", ctx, 500)
    async_us = await _per_call_us(reg, "async_echo", ctx, 2000)
    print(
        f"\nrun_tool_call overhead: inline {inline_us:.1f} µs, to_thread {thread_us:.1f} µs, async {async_us:.1f} µs"
    )
    assert inline_us < 500 and thread_us < 5000 and async_us < 1000
