"""Benchmark the cost of an MCP tool call (a script, not a test).

One round trip through the whole harness side — `run_tool` → the `McpTools` tool → the SDK
`Client` → a real stdio MCP server (the tests' `demo_server.py`, the SDK's MCPServer) → the
result mapped to a tool_result — against the baseline measured in the same run: the same
`run_tool` calling an in-process async tool that adds two numbers. Also the one-off cost of
starting the server (spawn, handshake, tools/list), unsandboxed and under the OS sandbox.

Prints the median and p95 per call (ms) and the MCP/baseline ratio.
Run: .venv/bin/python bench/mcp_call.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tether.mcp import McpTools
from tether.messages import ToolCallBlock
from tether.sandbox.detect import detect_sandbox
from tether.settings.model import McpServerSettings
from tether.tools.base import tool
from tether.tools.context import ToolContext
from tether.tools.exec.run import run_tool
from tether.tools.registry import ToolRegistry

DEMO = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "demo_server.py"
N = 300


@tool
async def add(a: int, b: int) -> str:
    """Add."""
    return str(a + b)


async def timed(registry: ToolRegistry, name: str, ctx: ToolContext) -> list[float]:
    out: list[float] = []
    for i in range(N):
        call = ToolCallBlock(id=f"c{i}", name=name, arguments={"a": i, "b": 1})
        t = time.perf_counter()
        run = await run_tool(registry, call, ctx)
        out.append((time.perf_counter() - t) * 1000)
        assert not run.block.is_error, run.block
    return out


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.95)]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ctx = ToolContext.create(root)
        settings = McpServerSettings(command=sys.executable, args=[str(DEMO)])
        starts: dict[str, float] = {}
        mcp_ms: list[float] = []
        for label, sandbox in (("unsandboxed", None), ("sandboxed", detect_sandbox())):
            if label == "sandboxed" and sandbox is None:
                continue
            mcp = McpTools(
                {"demo": settings}, root=root, sandbox=sandbox, allow_unsandboxed=True
            )
            t = time.perf_counter()
            tools = await mcp.start()
            starts[label] = (time.perf_counter() - t) * 1000
            if label == "unsandboxed":
                mcp_ms = await timed(ToolRegistry(tools), "mcp__demo__add", ctx)
            await mcp.aclose()
        base_ms = await timed(ToolRegistry([add]), "add", ctx)
    m_mcp, m_base = statistics.median(mcp_ms), statistics.median(base_ms)
    print(f"calls: {N} each")
    print(f"baseline in-process tool: median {m_base:.3f} ms, p95 {p95(base_ms):.3f} ms")
    print(f"MCP stdio tool:           median {m_mcp:.3f} ms, p95 {p95(mcp_ms):.3f} ms")
    print(f"ratio MCP/baseline (median): {m_mcp / m_base:.1f}x")
    for label, ms in starts.items():
        print(f"server start ({label}: spawn, handshake, tools/list): {ms:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
