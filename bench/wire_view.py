"""Benchmark the wire view of a long session (a script, not a test).

Builds a 10,000-turn session of ~4M characters (~1M tokens): every assistant turn holds signed
thinking, text and a tool call, every user turn its result; three compaction markers. Then:

1. full build: `build_view` of the whole session for Anthropic, against JSON-encoding that same
   view (pydantic `dump_json` of the tuple, and `json.dumps` of `turn_to_dict`s) — target:
   building <= 1x encoding;
2. incremental: `ViewBuilder.view()` called once per request (two new turns each) as the session
   grows, per-request cost early vs late — target: flat.

Run: .venv/bin/python bench/wire_view.py
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable

from pydantic import TypeAdapter

from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    tool_result,
    turn_to_dict,
)
from tether.wire import ViewBuilder, build_view

N_TURNS = 10_000
ROUTE = Provenance(provider="anthropic", api="anthropic", model="claude-x")
MARKER_AT = {3_001: 1_000, 6_001: 2_000, 9_001: 3_000}  # marker position -> last replaced turn


def make_session(n_turns: int = N_TURNS) -> tuple[Turn, ...]:
    turns: list[Turn] = [
        Turn(id="t0", role="user", content=(TextBlock(text="Fix the build. " * 20),))
    ]
    call = 0
    first_kept = 1
    prev_marker: int | None = None
    i = 1
    while len(turns) < n_turns:
        if i in MARKER_AT:
            last = MARKER_AT[i]
            ids = tuple(f"t{k}" for k in range(first_kept, last + 1))
            if prev_marker is not None:
                ids = (f"t{prev_marker}", *ids)  # the newer marker subsumes the older one
            prev_marker = i
            first_kept = last + 1
            summary = CompactSummaryBlock(
                summary="Summary of the work so far. " * 40, replaces_turn_ids=ids
            )
            turns.append(Turn(id=f"t{i}", role="user", content=(summary,)))
            i += 1
            continue
        if turns[-1].role == "user":
            call += 1
            content = (
                ThinkingBlock(
                    text="Let me think about the next step. " * 2,
                    signature="S" * 60,
                    producer="anthropic",
                    model="claude-x",
                ),
                TextBlock(text="Running the next command to check the state of the build."),
                ToolCallBlock(
                    id=f"toolu_{call:08d}",
                    name="bash",
                    arguments={"cmd": f"pytest -q tests/test_{call}.py", "timeout_s": 60},
                ),
            )
            turns.append(
                Turn(
                    id=f"t{i}",
                    role="assistant",
                    content=content,
                    provenance=ROUTE,
                    stop_reason="tool_use",
                )
            )
        else:
            out = f"test_{call}.py ....F..  [{call}]\n" + "ok line of test output\n" * 6
            turns.append(
                Turn(id=f"t{i}", role="user", content=(tool_result(f"toolu_{call:08d}", out),))
            )
        i += 1
    return tuple(turns)


def chars(turns: tuple[Turn, ...]) -> int:
    return sum(len(json.dumps(turn_to_dict(t))) for t in turns)


def best(fn: Callable[[], object], repeat: int = 11) -> float:
    """The best of `repeat` timings, with the cyclic GC paused (as `timeit` does)."""
    assert callable(fn)
    times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    finally:
        gc.enable()
    return min(times)


def main() -> None:
    session = make_session()
    view = build_view(session, "anthropic", route=ROUTE)
    print(
        f"session: {len(session)} turns, {chars(session) / 1e6:.2f}M chars JSON; "
        f"view: {len(view)} turns, {chars(view) / 1e6:.2f}M chars JSON"
    )
    codec = TypeAdapter(tuple[Turn, ...])
    t_build = best(lambda: build_view(session, "anthropic", route=ROUTE))
    t_json_rust = best(lambda: codec.dump_json(view))
    t_json_py = best(lambda: json.dumps([turn_to_dict(t) for t in view]), repeat=5)
    print(f"build_view (full, anthropic):            {t_build * 1e3:8.2f} ms")
    print(
        f"encode view, pydantic dump_json(tuple):   {t_json_rust * 1e3:8.2f} ms   "
        f"ratio build/encode = {t_build / t_json_rust:.2f}"
    )
    print(
        f"encode view, json.dumps(turn_to_dict):    {t_json_py * 1e3:8.2f} ms   "
        f"ratio build/encode = {t_build / t_json_py:.2f}"
    )
    targets: tuple[Target, ...] = ("openai-chat", "openai-responses", "google", "ollama")
    for target in targets:
        t = best(lambda target=target: build_view(session, target), repeat=5)
        print(f"build_view (full, {target}):{' ' * (22 - len(target))}{t * 1e3:8.2f} ms")

    for check_prefix in (True, False):
        vb = ViewBuilder("anthropic", route=ROUTE, check_prefix=check_prefix)
        per_call: list[tuple[int, float]] = []
        n = 1
        while n <= len(session):
            prefix = session[:n]
            t0 = time.perf_counter()
            vb.view(prefix)
            per_call.append((n, time.perf_counter() - t0))
            n += 2  # one request per (assistant, results) pair
        print(
            f"\nViewBuilder, one request per 2 new turns, check_prefix={check_prefix} "
            f"(full builds: {vb.full_builds}, at the markers):"
        )
        marker_calls = {n for n, _ in per_call if any(n - 2 < m + 1 <= n for m in MARKER_AT)}
        for lo, hi in ((1, 1_000), (2_000, 3_000), (4_500, 5_500), (7_000, 8_000), (9_000, 10_000)):
            xs = [dt for n, dt in per_call if lo <= n <= hi and n not in marker_calls]
            print(
                f"  session length {lo:>5}-{hi:>5}: median {statistics.median(xs) * 1e6:7.1f} us "
                f"per request, p90 {statistics.quantiles(xs, n=10)[-1] * 1e6:7.1f} us"
            )
        full = [dt for n, dt in per_call if n in marker_calls]
        print(
            "  requests right after a new marker (full rebuild): "
            + ", ".join(f"{dt * 1e3:.1f} ms" for dt in full)
        )
        assert vb.view(session) == build_view(session, "anthropic", route=ROUTE)


if __name__ == "__main__":
    main()
