"""`tether sessions timeline` on a long session: computing the series, drawing the chart and
writing the SVG, each against loading the same session file (the baseline: the command does
that first), measured in the same run.

    load        SessionStore.load of a session of `--turns` turns (half of them requests with
                usage, a compaction marker every `--every` turns, a persisted output and a
                model switch now and then)
    series      session_timeline(turns)
    chart       chart_lines(...) at 120 x 24 (plotext)
    svg         timeline_svg(...) (rich Console.export_svg)

Run: .venv/bin/python bench/timeline.py [--turns 10000] [--every 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    TextBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.session import SessionStore
from tether.session.timeline import session_timeline
from tether.tools.exec.normalize import render_stub
from tether.tui.chart import chart_lines, timeline_svg


def build(store: SessionStore, turns: int, every: int) -> str:
    with store.create("bench", cwd="/tmp") as w:
        replaced: list[str] = []
        for i in range(turns // 2):
            uid, aid = f"u{i}", f"a{i}"
            if i % 7 == 3:
                stub = render_stub("x" * 4000, path=f"/r/c{i}.txt", size_bytes=70_000, lines=900)
                w.append(Turn(id=uid, role="user", content=(tool_result(f"c{i - 1}", stub),)))
            else:
                w.append(text_turn(uid, "user", "please continue with the next step " * 4))
            model = "gpt-a" if (i // 1000) % 2 == 0 else "gpt-b"
            call = (ToolCallBlock(id=f"c{i}", name="read", arguments={"path": "x"}),)
            w.append(
                Turn(
                    id=aid,
                    role="assistant",
                    content=(TextBlock(text="working on it " * 10), *call),
                    usage=Usage(input_tokens=1000 + 37 * (i % every), output_tokens=200),
                    provenance=Provenance(provider="openai", api="chat", model=model),
                )
            )
            replaced += [uid, aid]
            if (2 * i) % every == every - 2:
                block = CompactSummaryBlock(
                    summary="so far " * 50, replaces_turn_ids=tuple(replaced)
                )
                w.append(Turn(id=f"m{i}", role="user", content=(block,)))
    return "bench"


def best(fn: Callable[[], Any], repeat: int) -> float:
    times: list[float] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp) / "sessions")
        sid = build(store, args.turns, args.every)
        loaded = store.load(sid)
        tl = session_timeline(loaded.turns)
        load = best(lambda: store.load(sid), args.repeat)
        series = best(lambda: session_timeline(loaded.turns), args.repeat)
        chart = best(lambda: chart_lines(tl, width=120, height=24, color=True), args.repeat)
        svg = best(lambda: timeline_svg(tl, title="bench", width=120, height=24), args.repeat)
    print(
        f"{len(loaded.turns)} turns, {len(tl.points)} requests, "
        f"{len(tl.marks_of('compaction'))} compactions, {len(tl.marks_of('persisted'))} "
        f"persisted, {len(tl.marks_of('model'))} model switches"
    )
    print(f"load   {load * 1000:8.1f} ms  (baseline 1.00x)")
    for name, t in (("series", series), ("chart", chart), ("svg", svg)):
        print(f"{name:<6} {t * 1000:8.1f} ms  ({t / load:.2f}x load)")


if __name__ == "__main__":
    main()
