"""Micro benchmark: `SessionWriter.append` of a ~2 KB turn vs a raw `os.write` of the same bytes.

Usage: python bench/session_append.py [--n 5000] [--rounds 7] [--dir PATH]

Prints microseconds per operation (the best round's mean; rounds alternate between the
variants so both see the same machine state):
    raw os.write     one write(2) of the encoded entry line to an O_APPEND fd (the floor)
    encode only      `turn_to_json(turn)` alone (the pydantic codec)
    append           `SessionWriter.append(turn)`: encode + envelope + one write(2)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.messages import (
    Provenance,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    Usage,
    turn_to_json,
)
from tether.session import SessionStore


def make_turn(turn_id: str, size_bytes: int = 2048) -> Turn:
    """An assistant turn whose entry line is about `size_bytes` long."""
    base = Turn(
        id=turn_id,
        role="assistant",
        content=(
            ThinkingBlock(text="Let me look at the parser first.", signature="c2ln" * 8),
            TextBlock(text=""),
            ToolCallBlock(id="toolu_01", name="read_file", arguments={"path": "src/parser.py"}),
        ),
        usage=Usage(input_tokens=5231, output_tokens=312, cache_read_tokens=4096),
        provenance=Provenance(provider="anthropic", api="anthropic", model="claude-sonnet-4"),
        stop_reason="tool_use",
    )
    pad = max(0, size_bytes - len(turn_to_json(base)) - 80)
    text = ("The parser handles nested blocks; the bug is in the tokenizer. " * 40)[:pad]
    content = (base.content[0], TextBlock(text=text), base.content[2])
    return Turn(
        id=turn_id,
        role="assistant",
        content=content,
        usage=base.usage,
        provenance=base.provenance,
        stop_reason=base.stop_reason,
    )


def time_per_op_us(fn: Callable[[], None], n: int) -> float:
    """Mean microseconds per call over `n` calls."""
    start = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - start) / n / 1000


def main() -> None:
    """Run the benchmark and print one line per variant."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="operations per round")
    ap.add_argument("--rounds", type=int, default=7, help="rounds; the best one is reported")
    ap.add_argument("--dir", type=Path, default=None, help="folder for the files (default: temp)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        turn = make_turn("a1")
        store = SessionStore(root / "sessions")
        writer = store.create("bench", cwd=str(root))
        writer.append(turn)
        line = store.path("bench").read_bytes().split(b"\n")[1] + b"\n"
        raw_fd = os.open(root / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

        def raw_write() -> None:
            os.write(raw_fd, line)

        def encode_only() -> None:
            turn_to_json(turn)

        variants: dict[str, Callable[[], None]] = {
            "raw os.write": raw_write,
            "encode only": encode_only,
            "append": lambda: writer.append(turn),
        }
        best = dict.fromkeys(variants, float("inf"))
        for _ in range(args.rounds):
            for name, fn in variants.items():
                best[name] = min(best[name], time_per_op_us(fn, args.n))
        os.close(raw_fd)
        writer.close()

    where = tempfile.gettempdir() if args.dir is None else args.dir
    print(f"entry line: {len(line)} bytes; n={args.n} x {args.rounds} rounds (best); dir {where}")
    for name, us in best.items():
        print(f"{name:<14} {us:7.2f} µs/op")
    print(f"append overhead over raw write: {best['append'] - best['raw os.write']:.2f} µs")


if __name__ == "__main__":
    main()
