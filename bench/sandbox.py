"""Benchmark: wall time of a trivial `bash` tool call (`true`) unsandboxed vs bwrap vs Landlock.

Usage: python bench/sandbox.py [--n 40]

Each call goes through the real path (`run_tool_call` → the `bash` tool → subprocess, inside the
context's sandbox). `landlock` execs the stdlib-only launcher (what the bash tool and the
tool worker do: it makes the namespaces and reaps every descendant); `landlock-child` confines
in the forked child instead (`in_child=True`: no launcher start-up, no reaping). The variants are interleaved call by call (n calls each) so all see the same
machine state; a kind that does not work here is reported and skipped. Prints each median in ms,
the difference to the unsandboxed baseline in ms and the ratio. Target: ≤ +15 ms per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tether.messages import ToolCallBlock
from tether.sandbox.base import Sandbox
from tether.sandbox.detect import available
from tether.sandbox.landlock_sandbox import LandlockSandbox
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env

TARGET_MS = 15.0


async def one_call(registry: ToolRegistry, ctx: ToolContext) -> float:
    block = ToolCallBlock(id="b", name="bash", arguments={"command": "true"})
    t0 = time.perf_counter()
    result = await run_tool_call(registry, block, ctx)
    elapsed_ms = (time.perf_counter() - t0) * 1e3
    if result.is_error or "exit code 0" not in result.text:
        raise SystemExit(f"unexpected result: {result.text}")
    return elapsed_ms


async def main(n: int) -> None:
    registry = ToolRegistry(builtin_tools())
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / ".git").mkdir()
        variants: dict[str, Sandbox | None] = {"unsandboxed": None}
        for kind in ("bwrap", "landlock"):
            sb = available(kind)
            if sb is None:
                print(f"{kind:<12} not available on this machine: skipped")
            else:
                variants[kind] = sb
        ll = available("landlock")
        if isinstance(ll, LandlockSandbox):  # the in-child path too (no launcher)
            variants["landlock-child"] = LandlockSandbox(ll.abi, in_child=True)
        contexts = {
            name: ToolContext.create(root, env=scrubbed_env(), sandbox=sb)
            for name, sb in variants.items()
        }
        times: dict[str, list[float]] = {name: [] for name in contexts}
        for ctx in contexts.values():  # warm-up (page cache, the private tmp folder)
            await one_call(registry, ctx)
        for _ in range(n):
            for name, ctx in contexts.items():
                times[name].append(await one_call(registry, ctx))
    base = statistics.median(times["unsandboxed"])
    print(f"bash `true` through the bash tool, median of {n} interleaved calls each")
    print(f"{'unsandboxed':<14} {base:7.2f} ms  (baseline)")
    for name, ts in times.items():
        if name == "unsandboxed":
            continue
        med = statistics.median(ts)
        diff = med - base
        verdict = "within" if diff <= TARGET_MS else "OVER"
        print(
            f"{name:<14} {med:7.2f} ms  {diff:+6.2f} ms  x{med / base:.2f}  "
            f"({verdict} the +{TARGET_MS:g} ms target)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="calls per variant (≥ 30)")
    args = parser.parse_args()
    asyncio.run(main(max(args.n, 30)))
