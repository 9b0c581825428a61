"""Benchmark automatic compaction over a long scripted session (a script, not a test).

A 500-turn session (250 tool rounds: an assistant tool call + its results turn, each result
~8,000 characters ≈ 2,000 tokens) against a 32,000-token window, driven by `ScriptedProvider`
with usage consistent with the view it was sent (prompt tokens = the view's estimate). Prints:

1. compactions per window fill — target exactly 1. A "fill" is the context growing from a
   compaction's result back up to the trigger; the figure is compactions / trigger crossings,
   and the mean growth between compactions / the room each compaction freed (≈ 1 means no
   premature or repeated compaction);
2. prompt-cache friendliness — for consecutive requests, the share of the previous request's
   bytes (messages serialized as one JSON line each, sorted keys) that the next one repeats as an
   identical prefix; target ≥ 99 % outside compaction events;
3. the baseline measured in the same run: the same session with compaction off (the largest
   request as a multiple of the window) and, for reference, with the wire-only tail strategy.

Run: .venv/bin/python bench/compaction.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from typing import cast

from tether import AgentConfig, Runtime
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, CompactionEndEvent
from tether.agent.host import Host
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import (
    CompactionPolicy,
    ModelLimits,
    effective_window,
    estimate_tokens,
)
from tether.compaction.tail import TailPolicy
from tether.messages import Turn, Usage, turn_to_dict
from tether.providers.base import ModelRequest
from tether.testing import Reply, Response, ScriptedProvider, call
from tether.tools.base import tool
from tether.wire.markers import is_marker

ROUNDS = 250  # 500 turns
WINDOW = 32_000
LIMITS = ModelLimits(context_window=WINDOW, max_output_tokens=4_000)
POLICY = CompactionPolicy(output_reserve=4_000)
SUMMARY = "## Goal\nprocess every record\n## Progress\n" + "- step done\n" * 40


@tool(safe=True, inline=True)
def dump(n: int) -> str:
    """Dump record n.

    Args:
        n: the record number.
    """
    return f"record {n}\n" + "\n".join(f"{n:05d}:{i:04d} " + "v" * 70 for i in range(100))


def provider() -> ScriptedProvider:
    def answer(request: ModelRequest) -> Response:
        k = sum(1 for t in request.messages for _ in t.tool_results) + 1
        usage = Usage(input_tokens=estimate_tokens(request.messages), output_tokens=20)
        block = call("dump", n=k) if len(provider_.requests) <= ROUNDS else None
        if block is None:
            return Reply(blocks=(), usage=usage, stop_reason="end_turn")
        return Reply(blocks=(block,), usage=usage)

    provider_ = ScriptedProvider(answer)
    return provider_


def serialize(messages: tuple[Turn, ...]) -> bytes:
    return b"".join(
        json.dumps(turn_to_dict(t), sort_keys=True, separators=(",", ":")).encode() + b"\n"
        for t in messages
    )


def shared_prefix(prev: bytes, nxt: bytes) -> int:
    """The length of the longest common prefix of two serialized requests (binary search)."""
    lo, hi = 0, min(len(prev), len(nxt))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if prev[:mid] == nxt[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_share(prev: bytes, nxt: bytes) -> float:
    return shared_prefix(prev, nxt) / len(prev) if prev else 1.0


def run(mode: str) -> dict[str, object]:
    prov = provider()
    events: list[AgentEvent] = []
    manager = None
    if mode != "off":
        manager = AutoCompaction(
            ContextMonitor(LIMITS, POLICY),
            summarizer=ScriptedProvider(lambda r: SUMMARY),
            tail=TailPolicy(
                max_result_bytes=2_000, keep_bytes=500, keep_recent_turns=4, step_turns=4
            )
            if mode == "tail"
            else None,
        )
    with tempfile.TemporaryDirectory() as root:
        agent = Agent(
            prov,
            tools=[dump],
            root=root,
            config=AgentConfig.model_validate({"run": {"max_turns": ROUNDS + 5}}),
            host=Host(on_event=events.append),
            compaction=manager if manager is not None else False,  # off, as None was
            runtime=Runtime(new_id=iter(f"t{i}" for i in range(1, 10**6)).__next__),
        )
        asyncio.run(agent.run("Process every record with the dump tool, one per step."))
    blobs = [serialize(r.messages) for r in prov.requests]
    # which request indexes follow a compaction
    compacted_before: set[int] = set()
    req = 0
    for e in events:
        if e.type == "turn_start":
            req += 1
        elif isinstance(e, CompactionEndEvent):
            compacted_before.add(req)  # the next request (index req, 0-based) follows it
    shares_plain = [
        prefix_share(blobs[i - 1], blobs[i])
        for i in range(1, len(blobs))
        if i not in compacted_before
    ]
    ends = [e for e in events if isinstance(e, CompactionEndEvent)]
    sizes = [estimate_tokens(r.messages) for r in prov.requests]
    eff = effective_window(LIMITS, POLICY)
    trigger = POLICY.threshold * eff
    # Window fills, measured independently of the loop: replay the appended turns against an
    # ideal window that is refilled from the mean post-compaction size each time the context
    # reaches the trigger; every time it does is one fill.
    after = statistics.mean(e.tokens_after for e in ends) if ends else 0.0
    level, fills = float(sizes[0]), 0
    for t in agent.history[1:]:
        if is_marker(t) or t.id.startswith("restore"):
            continue
        if level >= trigger:
            fills += 1
            level = after
        level += estimate_tokens([t])
    growth: list[float] = [
        (ends[i + 1].tokens_before - ends[i].tokens_after) / (trigger - ends[i].tokens_after)
        for i in range(len(ends) - 1)
    ]
    turns = len(agent.history)
    return {
        "turns": turns,
        "requests": len(prov.requests),
        "compactions": len(ends),
        "fills": fills,
        "growth": growth,
        "max_request_tokens": max(sizes),
        "share_min": min(shares_plain) if shares_plain else float("nan"),
        "share_mean": statistics.mean(shares_plain) if shares_plain else float("nan"),
    }


def main() -> None:
    eff = effective_window(LIMITS, POLICY)
    off = run("off")
    auto = run("auto")
    tail = run("tail")
    print(
        f"session: {auto['turns']} turns, {auto['requests']} requests, window {WINDOW} tokens (effective {eff})"
    )
    print(
        f"baseline (compaction off): largest request {off['max_request_tokens']} tokens = "
        f"{off['max_request_tokens'] / WINDOW:.1f}x the window; prefix share min {off['share_min']:.4%}"  # type: ignore[operator]
    )
    fills = auto["fills"]
    assert isinstance(fills, int)
    growth = auto["growth"]
    assert isinstance(growth, list)
    growth = cast("list[float]", growth)
    print(
        f"auto: compactions {auto['compactions']}, window fills {fills} -> compactions per "
        f"window fill {int(auto['compactions']) / max(fills, 1):.2f} (target 1.00)"  # type: ignore[call-overload]
    )
    print(
        "auto: context growth between consecutive compactions / the room the first one freed: "
        f"mean {statistics.mean(growth):.2f}, min {min(growth):.2f}, max {max(growth):.2f} "
        "(1.00 = one compaction per fill; the excess is the tool result that crossed the trigger)"
    )
    print(
        f"auto: largest request {auto['max_request_tokens']} tokens = "
        f"{auto['max_request_tokens'] / eff:.2%} of the effective window"  # type: ignore[operator]
    )
    print(
        f"auto: prefix share of consecutive requests outside compactions: min {auto['share_min']:.4%}, "
        f"mean {auto['share_mean']:.4%} (target >= 99%)"
    )
    print(
        f"tail strategy (reference): compactions {tail['compactions']}, prefix share min "
        f"{tail['share_min']:.4%}, mean {tail['share_mean']:.4%}"
    )


if __name__ == "__main__":
    main()
