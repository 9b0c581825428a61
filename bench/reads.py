"""Benchmark stale-read elision and read dedup (a script, not a test).

A scripted refactoring session over four 150-line files: 40 rounds of `read` a file, `read` it
again (unchanged), `edit` it (121 requests), with the real file tools and a 200,000-token window
(no pruning or summary happens). Two modes:
    off   `context.elide_stale_reads: false`, `read.dedup: false` (main before this change)
    on    the defaults

Prints per mode: requests, input tokens sent (sum of every request's estimate), the last
request's size, requests whose prefix changed, uncached input tokens under an ideal prefix cache
(each request's tokens past the turns it shares with the previous request), and input priced as
Anthropic does (uncached at 1.25x, cached at 0.1x).

Run: .venv/bin/python bench/reads.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from tether import Agent, AgentConfig
from tether.compaction.pressure import estimate_tokens
from tether.messages import TextBlock
from tether.testing import Reply, ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools

BODY = "".join(f"    value_{i} = compute({i})  # line {i}\n" for i in range(150))
ROUNDS = 40


def script() -> list[Reply]:
    out: list[Reply] = []
    for i in range(ROUNDS):
        f = f"m{i % 4}.py"
        old, new = f"compute({i // 4})  #", f"compute2({i // 4})  #"
        out.append(Reply(blocks=(call("read", path=f),)))
        out.append(Reply(blocks=(call("read", path=f),)))
        out.append(Reply(blocks=(call("edit", path=f, old_string=old, new_string=new),)))
    out.append(Reply(blocks=(TextBlock(text="done"),)))
    return out


async def measure(settings: dict[str, Any]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        for k in range(4):
            Path(d, f"m{k}.py").write_text(BODY)
        p = ScriptedProvider(script())
        config = AgentConfig.model_validate({**settings, "run": {"max_turns": 500}})
        await Agent(p, root=d, tools=builtin_tools(), config=config).run("refactor")
    reqs = [r.messages for r in p.requests]
    sent = sum(estimate_tokens(m) for m in reqs)
    changed = uncached = 0
    for i, m in enumerate(reqs):
        prev = reqs[i - 1] if i else ()
        k = 0
        while k < min(len(prev), len(m)) and prev[k] == m[k]:
            k += 1
        changed += bool(i) and k < len(prev)
        uncached += estimate_tokens(m[k:])
    return {
        "requests": len(reqs),
        "input tokens sent": sent,
        "last request": estimate_tokens(reqs[-1]),
        "prefix changed": changed,
        "uncached (ideal cache)": uncached,
        "priced as Anthropic": round(uncached * 1.25 + (sent - uncached) * 0.1),
    }


def main() -> None:
    off = asyncio.run(measure({"context": {"elide_stale_reads": False}, "read": {"dedup": False}}))
    on = asyncio.run(measure({}))
    for key in off:
        print(f"{key:24} {off[key]:>12,.0f} {on[key]:>12,.0f}")


if __name__ == "__main__":
    main()
