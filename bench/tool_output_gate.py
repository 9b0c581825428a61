"""Micro benchmark: the tool-output gate (`persist_tool_result`) vs encoding the same result for
the session file, which every result pays anyway.

Usage: python bench/tool_output_gate.py [--rounds 5]

For each result size, prints microseconds per call (best round's mean) and the ratio:
    encode      `turn_to_json` of a user turn holding the result (the baseline)
    gate        `persist_tool_result(result, None)` on clean text (the common case)
    gate+cr     the same text with `\\r` progress rewrites on every line
and, once, the cost of persisting a 2.3 MB listing (T25) to a temp session folder.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.messages import TextBlock, ToolResultBlock, Turn, turn_to_json
from tether.tools.exec.persist import persist_tool_result


def best_us(fn: Callable[[], object], n: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(
        f"{'chars':>8} {'encode us':>10} {'gate us':>9} {'ratio':>6} {'gate+cr us':>11} {'ratio':>6}"
    )
    for size in (200, 2_000, 20_000, 45_000):
        text = ("drwxr-xr-x  2 user staff 4096 Nov 30 06:00 some_file.txt\n" * (size // 57 + 1))[
            :size
        ]
        cr = text.replace("\n", "\r 99%\n")
        r = ToolResultBlock(tool_call_id="c", content=(TextBlock(text=text),))
        r_cr = ToolResultBlock(tool_call_id="c", content=(TextBlock(text=cr),))
        turn = Turn(id="t", role="user", content=(r,))
        n = max(20, 200_000 // size)
        enc = best_us(lambda turn=turn: turn_to_json(turn), n, args.rounds)
        gate = best_us(lambda r=r: persist_tool_result(r, None), n, args.rounds)
        gate_cr = best_us(lambda r=r_cr: persist_tool_result(r, None), n, args.rounds)
        print(
            f"{size:>8} {enc:>10.1f} {gate:>9.1f} {gate / enc:>6.2f} {gate_cr:>11.1f} "
            f"{gate_cr / enc:>6.2f}"
        )
    listing = "-rw-r--r--  1 user staff 1234 Nov 30 06:00 file.txt" + " " * 200 + "\n"
    big = ToolResultBlock(tool_call_id="c", content=(TextBlock(text=listing * 8921),))
    big_turn = Turn(id="t", role="user", content=(big,))
    with tempfile.TemporaryDirectory() as d:
        persist = best_us(lambda: persist_tool_result(big, Path(d)), 3, args.rounds)
    enc_big = best_us(lambda: turn_to_json(big_turn), 3, args.rounds)
    print(
        f"T25 2.3 MB listing: persist (normalize + fsync'd write + stub) {persist / 1e3:.1f} ms, "
        f"encoding it for the session instead {enc_big / 1e3:.1f} ms, ratio {persist / enc_big:.2f}"
    )


if __name__ == "__main__":
    main()
