"""Benchmark progressive pruning against summary-only compaction (a script, not a test).

A scripted 500-turn session (250 tool rounds: an assistant tool call + its results turn, each
result ~12,000 characters ≈ 3,000 tokens) against a 200,000-token window (effective 180,000),
driven by `ScriptedProvider` with usage consistent with the view it was sent. The first five
results each hold a needle fact ("the checksum of record n is ..."); after the last round the
user asks for them. The scripted model answers a needle when its text is in the request; else
it calls `recall` once per needle it can locate — the turn a prune stub names (a stub repeats
the call, `dump {"n": 3}`), or else the range a summary covers (`Turns covered: A…B`, read
with the tool's largest page, 100,000 characters) — and answers from what recall returned.

Two modes, same session, same summarizer (a fixed scripted summary):
    before   main's behaviour: automatic compaction, no pruning (`context.prune: false`)
    after    pruning on (`tether.compaction.prune.prune_policy()`, the default)

Prints per mode: summary calls, requests, total input tokens sent (sum of every request's
prompt: the reported usage, i.e. the view's estimate), uncached input tokens under an ideal
prefix cache (each request's tokens past the bytes it shares with the previous request as an
exact prefix), the share of each request's prefix identical to the previous request's (mean,
median, and the share of requests at >= 99 %), and the needles answered.

Run: .venv/bin/python bench/pruning.py
"""

from __future__ import annotations

import asyncio
import re
import statistics
import tempfile

from compaction import serialize, shared_prefix  # bench/compaction.py (bench/ is sys.path[0])
from tether import AgentConfig, Runtime
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, CompactionEndEvent
from tether.agent.host import Host
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits, estimate_tokens
from tether.compaction.prune import PRUNE_TAG, PrunePolicy, prune_policy
from tether.messages import TextBlock, ToolCallBlock, Turn, Usage
from tether.providers.base import ModelRequest
from tether.testing import Reply, Response, ScriptedProvider, call
from tether.tools.base import tool

ROUNDS = 250  # 500 turns
NEEDLES = 5
WINDOW = 200_000
LIMITS = ModelLimits(context_window=WINDOW, max_output_tokens=20_000)
POLICY = CompactionPolicy()
SUMMARY = "## Goal\nprocess every record\n## Progress\n" + "- step done\n" * 40
QUESTION = "What were the checksums of records 1 to 5? Answer with each one."


def checksum(n: int) -> str:
    return f"{(n * 2_654_435_761) % 16**8:08x}"


def needle(n: int) -> str:
    return f"the checksum of record {n} is {checksum(n)}"


@tool(safe=True, inline=True)
def dump(n: int) -> str:
    """Dump record n.

    Args:
        n: the record number.
    """
    rows = [f"{n:05d}:{i:04d} " + "v" * 110 for i in range(100)]
    if n <= NEEDLES:
        rows.insert(37, needle(n))
    return f"record {n}\n" + "\n".join(rows)


def texts(messages: tuple[Turn, ...]) -> str:
    out: list[str] = []
    for t in messages:
        for b in t.content:
            if isinstance(b, TextBlock):
                out.append(b.text)
        for r in t.tool_results:
            out.append(r.text)
    return "\n".join(out)


def model() -> ScriptedProvider:
    state = {"asked": False, "recalled": False, "dumps": 0}

    def answer(request: ModelRequest) -> Response:
        usage = Usage(input_tokens=estimate_tokens(request.messages), output_tokens=20)
        seen = texts(request.messages)
        last = request.messages[-1]
        if last.role == "user" and QUESTION in last.text:
            state["asked"] = True
        if not state["asked"]:
            if state["dumps"] < ROUNDS:
                state["dumps"] += 1
                return Reply(blocks=(call("dump", n=state["dumps"]),), usage=usage)
            return Reply(blocks=(TextBlock(text="all records processed"),), usage=usage)
        found = {n for n in range(1, NEEDLES + 1) if needle(n) in seen}
        missing = [n for n in range(1, NEEDLES + 1) if n not in found]
        if missing and not state["recalled"]:
            state["recalled"] = True
            calls: list[ToolCallBlock] = []
            for n in missing:
                m = re.search(
                    re.escape(PRUNE_TAG) + r' dump \{"n": ' + str(n) + r"\}[^\]]*recall turn (\S+)",
                    seen,
                )
                if m:
                    calls.append(call("recall", turn_id=m.group(1)))
            if not calls:
                m = re.search(r"Turns covered: (\S+)…(\S+) \(use the recall tool\)", seen)
                if m:
                    calls.append(
                        call("recall", turn_id=m.group(1), last_turn_id=m.group(2), limit=100_000)
                    )
            if calls:
                return Reply(blocks=tuple(calls), usage=usage)
        reply = "; ".join(needle(n) for n in sorted(found)) or "I do not know"
        return Reply(blocks=(TextBlock(text=reply),), usage=usage)

    prov = ScriptedProvider(answer)
    return prov


def run(prune: bool, policy: PrunePolicy | None = None) -> dict[str, float]:
    prov = model()
    events: list[AgentEvent] = []
    summarizer = ScriptedProvider(lambda r: SUMMARY)
    manager = AutoCompaction(
        ContextMonitor(LIMITS, POLICY),
        summarizer=summarizer,
        prune=(policy or prune_policy(POLICY.threshold)) if prune else None,
    )
    with tempfile.TemporaryDirectory() as root:
        agent = Agent(
            prov,
            tools=[dump],
            root=root,
            config=AgentConfig.model_validate({"run": {"max_turns": ROUNDS + 10}}),
            host=Host(on_event=events.append),
            compaction=manager,
            runtime=Runtime(new_id=iter(f"t{i}" for i in range(1, 10**6)).__next__),
        )
        asyncio.run(agent.run("Process every record with the dump tool, one per step."))
        asyncio.run(agent.run(QUESTION))
        final = agent.history[-1].text
    answered = sum(1 for n in range(1, NEEDLES + 1) if needle(n) in final)
    blobs = [serialize(r.messages) for r in prov.requests]
    tokens = [estimate_tokens(r.messages) for r in prov.requests]
    shares: list[float] = []
    uncached = tokens[0]
    cached = 0
    for i in range(1, len(blobs)):
        common = shared_prefix(blobs[i - 1], blobs[i])
        shares.append(common / len(blobs[i - 1]))
        hit = min(tokens[i], common * tokens[i] // max(1, len(blobs[i])))
        cached += hit
        uncached += tokens[i] - hit
    ends = [e for e in events if isinstance(e, CompactionEndEvent)]
    summary_tokens = sum(estimate_tokens(r.messages) for r in summarizer.requests)
    return {
        "turns": len(agent.history),
        "requests": len(prov.requests),
        "summary_calls": len(summarizer.requests),
        "compactions": len(ends),
        "input_tokens": sum(tokens) + summary_tokens,
        "uncached_tokens": uncached + summary_tokens,
        # Anthropic's prices relative to input: a cache write 1.25, a cache read 0.1
        "priced_tokens": 1.25 * uncached + 0.1 * cached + summary_tokens,
        "share_mean": statistics.mean(shares),
        "share_median": statistics.median(shares),
        "share_ge99": sum(1 for s in shares if s >= 0.99) / len(shares),
        "share_min": min(shares),
        "max_request": max(tokens),
        "needles": answered,
    }


def main() -> None:
    before = run(prune=False)
    after = run(prune=True)
    print(
        f"session: {after['turns']:.0f} turns stored, window {WINDOW:,} tokens, "
        f"{ROUNDS} tool results of ~3,000 tokens, {NEEDLES} needles in the first results"
    )
    rows = [
        ("summary calls", "summary_calls", "{:.0f}"),
        ("requests (model)", "requests", "{:.0f}"),
        ("input tokens sent (incl. summary calls)", "input_tokens", "{:,.0f}"),
        ("uncached input tokens (ideal prefix cache)", "uncached_tokens", "{:,.0f}"),
        ("priced input (write 1.25x, read 0.1x)", "priced_tokens", "{:,.0f}"),
        ("largest request (tokens)", "max_request", "{:,.0f}"),
        ("prefix share vs previous request: mean", "share_mean", "{:.2%}"),
        ("prefix share: median", "share_median", "{:.2%}"),
        ("requests with >= 99 % prefix share", "share_ge99", "{:.2%}"),
        ("prefix share: min", "share_min", "{:.2%}"),
        (f"needles answered (of {NEEDLES})", "needles", "{:.0f}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'before (main)':>16}  {'after (pruning)':>16}")
    for label, key, fmt in rows:
        print(f"{label:{width}}  {fmt.format(before[key]):>16}  {fmt.format(after[key]):>16}")


if __name__ == "__main__":
    main()
