"""The per-turn measuring protocol shared with the peer-framework benchmarks (stdlib only).

A copy of the protocol module the peer scripts use (the project's peer-benchmark folder,
`_common.py`), so `bench/turn_overhead.py` measures tether by the same rules from a plain clone.

Protocol every peer script follows:
  * the fake model is called once per turn; it calls ``clock.tick()`` first thing,
    which returns the 1-based turn number k;
  * for k < N it answers with ONE tool call ``echo(text="turn k")``; for k == N it
    gives the final answer (text "done", or the framework's own final-answer mechanism);
  * ``echo`` returns a 2048-byte string (``echo_impl``);
  * the interval between model call k and model call k+1 is "turn k": it covers the
    framework handling response k, running the tool, growing the history and building
    request k+1. That is the per-turn overhead we compare.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import time
import types
from collections.abc import Iterable
from typing import Any, cast

T_PROCESS = time.perf_counter()  # taken before the framework is imported
PAYLOAD_BYTES = 2048
FINAL_TEXT = "done"


PAYLOAD_SHAPE = os.environ.get("BENCH_PAYLOAD", "line")  # "line": one 2 KB line; "lines": 32 x 64 B


def echo_impl(text: str) -> str:
    """The trivial tool: returns a 2 KB string that starts with ``text``: one line, or with
    ``BENCH_PAYLOAD=lines`` 32 lines of 64 bytes (a realistic command output's shape)."""
    if PAYLOAD_SHAPE == "lines":
        row = "x" * 63 + "\n"
        return ((text + "\n") + row * 32)[:PAYLOAD_BYTES]
    return (text + " ").ljust(PAYLOAD_BYTES, "x")[:PAYLOAD_BYTES]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--turns", type=int, default=int(os.environ.get("BENCH_TURNS", 200)))
    p.add_argument("--window", type=int, default=20, help="turns in the early/late windows")
    p.add_argument("--serialize", action="store_true",
                   help="baseline only: json.dumps the whole history on every model call")
    return p.parse_args()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Clock:
    """Timestamps each fake-model call; start()/stop() bracket the agent run.
    Create it after the framework imports (that instant is the end of import time)."""

    def __init__(self, turns: int):
        self.t_import = time.perf_counter()
        self.turns = turns
        self.calls: list[float] = []

    def start(self) -> None:
        self.rss_before = rss_now_mb()
        self.t0 = time.perf_counter()

    def stop(self) -> None:
        self.t1 = time.perf_counter()
        self.peak_rss = peak_rss_mb()  # before any post-run serialisation

    def tick(self) -> int:
        self.calls.append(time.perf_counter())
        return len(self.calls)

    def is_last(self, k: int) -> bool:
        return k >= self.turns


def rss_now_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def deep_size(obj: object, _seen: set[int] | None = None) -> int:
    """Rough recursive sys.getsizeof over containers, __dict__ and __slots__ (types, modules,
    functions are not followed). Shared objects are counted once."""
    seen: set[int] = set() if _seen is None else _seen
    stack: list[Any] = [obj]
    total = 0
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, skip):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o, 0)
        if isinstance(o, dict):
            stack.extend(cast("dict[Any, Any]", o).keys())
            stack.extend(cast("dict[Any, Any]", o).values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(cast("Iterable[Any]", o))
        elif not isinstance(o, (str, bytes, bytearray, int, float, bool)) and o is not None:
            d: object = getattr(o, "__dict__", None)
            if isinstance(d, dict):
                stack.append(d)
            for cls in type(o).__mro__:
                for s in getattr(cls, "__slots__", ()):
                    if s not in ("__dict__", "__weakref__") and hasattr(o, s):
                        stack.append(getattr(o, s))
    return total


def report(
    name: str,
    version: str,
    clock: Clock,
    history_obj: object,
    history_items: int,
    history_json_bytes: int,
    window: int,
    notes: str = "",
) -> None:
    """Print one JSON line with every measurement (the driver parses it)."""
    t_run_start, t_run_end = clock.t0, clock.t1
    n = len(clock.calls)
    ivals = [(b - a) * 1e3 for a, b in zip(clock.calls, clock.calls[1:])]  # ms, n-1 values  # noqa: B905
    early, late = ivals[:window], ivals[-window:]
    gc.collect()
    out = {
        "peer": name,
        "version": version,
        "turns": n,
        "import_s": clock.t_import - T_PROCESS,
        "total_s": t_run_end - t_run_start,
        "ms_per_turn": (t_run_end - t_run_start) * 1e3 / max(n, 1),
        "first_call_ms": (clock.calls[0] - t_run_start) * 1e3 if n else None,
        "after_last_ms": (t_run_end - clock.calls[-1]) * 1e3 if n else None,
        "early_ms_median": statistics.median(early) if early else None,
        "late_ms_median": statistics.median(late) if late else None,
        "early_ms_mean": statistics.fmean(early) if early else None,
        "late_ms_mean": statistics.fmean(late) if late else None,
        "early_window": f"1-{len(early)}",
        "late_window": f"{len(ivals) - len(late) + 1}-{len(ivals)}",
        # growth curve: median interval of each consecutive block of `window` turns
        "bucket_ms": [statistics.median(ivals[i:i + window]) for i in range(0, len(ivals), window)],
        "rss_before_mb": clock.rss_before,
        "peak_rss_mb": clock.peak_rss,
        "history_items": history_items,
        "history_json_kb": history_json_bytes / 1024,
        "history_deep_kb": deep_size(history_obj) / 1024,
        "notes": notes,
    }
    print("RESULT " + json.dumps(out), flush=True)
