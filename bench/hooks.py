"""Benchmark: what a hook adds to one tool call, and what a `task` call adds over the child's
own requests.

Usage: python bench/hooks.py [--n 30]

One agent run per sample through the real loop (`Agent.run`, scripted provider, an in-process
`echo` tool): a reply with one call, then a final answer. Variants, interleaved sample by
sample so all see the same machine state:
    none          no hook (the baseline)
    library       one async library `before_tool` hook that allows
    shell         one shell `before_tool` hook (`true`) under the OS sandbox
    task          the same call made by a subagent (`task` → child run → `echo`)
Prints each median in ms, the difference to the baseline in ms, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tether import Agent, AgentConfig, HookDecision, HookInput, Hooks, task_tool, tool
from tether.messages import TextBlock, Turn
from tether.providers.base import ModelRequest
from tether.sandbox.detect import available
from tether.testing import Response, ScriptedProvider, call


@tool
def echo(text: str) -> str:
    """Echo.

    Args:
        text: the text.
    """
    return text


async def allow(inp: HookInput) -> HookDecision | None:
    return None


def first_user(turns: tuple[Turn, ...]) -> str:
    for t in turns:
        if t.role == "user":
            return "".join(b.text for b in t.content if isinstance(b, TextBlock))
    return ""


def script(request: ModelRequest) -> Response:
    step = sum(1 for t in request.messages if t.role == "assistant")
    if first_user(request.messages) == "main-task":
        return [call("task", name="x", prompt="child"), "done"][step]
    return [call("echo", text="hi"), "done"][step]


TASK = task_tool()


async def sample(kind: str, root: Path, sandbox: str) -> float:
    settings: dict[str, Any] = {"tools": {"sandbox": sandbox, "approval": "auto"}}
    if kind == "shell":
        settings["hooks"] = {"before_tool": [{"command": "true"}]}
    cfg = AgentConfig.model_validate(settings)
    agent = Agent(
        ScriptedProvider(script),
        config=cfg,
        tools=[echo, TASK],
        root=root,
        hooks=Hooks(before_tool=[allow]) if kind == "library" else None,
        compaction=False,
    )
    gc.collect()  # the agent's construction garbage is not charged to the run
    t0 = time.perf_counter()
    result = await agent.run("main-task" if kind == "task" else "go")
    elapsed = (time.perf_counter() - t0) * 1e3
    if result.text != "done":
        raise SystemExit(f"{kind}: unexpected answer {result.text!r}")
    return elapsed


async def main(n: int) -> None:
    found = available("bwrap") or available("landlock")
    if found is None:
        raise SystemExit("no OS sandbox works here")
    kinds = ("none", "library", "shell", "task")
    times: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for kind in kinds:  # warm-up
            await sample(kind, root, found.kind)
        for _ in range(n):
            for kind in kinds:
                times[kind].append(await sample(kind, root, found.kind))
    base = statistics.median(times["none"])
    print(f"sandbox: {found.kind}; {n} runs per variant (one tool call + final answer each)")
    for kind in kinds:
        med = statistics.median(times[kind])
        print(f"{kind:8s} median {med:8.2f} ms   +{med - base:7.2f} ms   {med / base:5.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30)
    asyncio.run(main(parser.parse_args().n))
