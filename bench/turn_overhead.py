"""Per-turn overhead of tether's tool loop, by the per-turn protocol of `bench/peer_protocol.py` (the protocol the peer frameworks are
measured by, kept here so the bench runs from a plain clone).

The scripted provider answers turns 1..N-1 with one `echo(text="turn k")` call and turn N with
"done"; `echo` returns 2,048 bytes; the session is persisted to a temporary JSONL file (the data folder beside the project folder,
as on a user's machine; `echo` is not declared `safe`, so checkpoints snapshot the project before
its first call and when the run ends). Prints the
protocol's `RESULT {json}` line (so it runs beside the peers in run_all.py) and a readable summary.
Each turn's 2,048-character line is over the gate's 2,000-character line cap, so the gate cuts it
and saves the raw output to a new file (case T26); the last line prints what that file save costs
on this disk (median of 1,000 saves after the run), a part of every turn's figure that depends on
the file system under `TMPDIR` (tmpfs vs ext4).

`--tracing memory` runs the loop with OpenTelemetry spans into the SDK's in-memory exporter
(the `tracing` extra), after a tracing-off baseline run in the same process, and prints the CPU
ms/turn of both and their ratio (the reported RESULT is the traced run's).

    python bench/turn_overhead.py [--turns 200] [--window 20] [--compaction on|off]
        [--tracing off|memory]
    TETHER_BENCH_TOOL=thread python bench/turn_overhead.py   # echo as a default (worker-thread) tool
    BENCH_PEERS_EXTRA="tether=$PWD/.venv/bin/python:$PWD/bench/turn_overhead.py" ... run_all.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import peer_protocol as _common  # pyright: ignore[reportMissingImports]
from tether import AgentConfig, Runtime
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits
from tether.messages import ToolCallBlock, turn_to_json
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider
from tether.tools.base import tool
from tether.tracing import NO_TRACING, Tracing

THREAD_TOOL = os.environ.get("TETHER_BENCH_TOOL") == "thread"
"""Run echo as a default sync tool (in a worker thread) instead of an `inline=True` one."""

COMPACTION_WINDOW = 200_000
"""With `--compaction on`: the context window (tokens) of the monitor, the CLI's default for a
200K-token model (`AutoCompaction(ContextMonitor(limits, CompactionPolicy()))`, as
`tether.cli.agent_setup.context_manager_for` builds it). A separate scripted summarizer writes
the summaries, so the clock ticks only for the loop's own requests."""


def _flag(name: str, default: str) -> str:
    """Take `--name value` out of argv (the peers' shared parser does not know it)."""
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == f"--{name}" and i + 1 < len(argv):
            value = argv[i + 1]
            del argv[i : i + 2]
            return value
        if a.startswith(f"--{name}="):
            del argv[i]
            return a.split("=", 1)[1]
    return default


def _compaction_flag() -> bool:
    """Take `--compaction on|off` out of argv."""
    return _flag("compaction", "off") == "on"


def _memory_tracing() -> tuple[Tracing, Callable[[], int]]:
    """Tracing into the SDK's in-memory exporter, and a count of the spans it holds."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tether.tracing.otel import OtelTracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracing(provider), lambda: len(exporter.get_finished_spans())


def _compaction() -> AutoCompaction:
    limits = ModelLimits(context_window=COMPACTION_WINDOW, max_output_tokens=8_192)
    summarizer = ScriptedProvider(lambda _r: "## Goal\ncall echo\n## Progress\n- echoed")
    return AutoCompaction(
        ContextMonitor(limits, CompactionPolicy()), summarizer=summarizer, offer_recall=True
    )


def echo(text: str) -> str:
    """Echo a 2 KB string."""
    return _common.echo_impl(text)


def _cpu_ms_per_turn(cpu: list[float]) -> float:
    return statistics.fmean((b - a) * 1e3 for a, b in itertools.pairwise(cpu))


SAVES_CPU: list[float] = []
"""This thread's CPU time spent in the gate's file saves up to each model call (s), the last
run's (see `_count_saves`)."""


def _count_saves() -> Callable[[], float]:
    """Wrap the output gate's `write_atomic` to add up this thread's CPU time in it: the
    disk's share of each turn, which on this VM's ext4 swings from 0.02 to over 1 ms a file
    (creating the inode) between folders and minutes, whatever the loop does."""
    from tether.tools.exec import persist

    spent = [0.0]
    real = persist.write_atomic

    def timed(*args: Any, **kwargs: Any) -> None:
        t0 = time.thread_time()
        try:
            real(*args, **kwargs)
        finally:
            spent[0] += time.thread_time() - t0

    persist.write_atomic = timed
    return lambda: spent[0]


_saves_so_far = _count_saves()


def _run(turns: int, compaction: bool, tracing: Tracing, tmp: str):
    """One run of the benchmark loop: (clock, CPU time at each model call, agent, writer)."""
    clock = _common.Clock(turns)
    cpu: list[float] = []  # this thread's CPU time at each model call: robust to a loaded machine
    SAVES_CPU.clear()

    def model(_request: ModelRequest) -> Response:
        cpu.append(time.thread_time())
        SAVES_CPU.append(_saves_so_far())
        k = clock.tick()
        if clock.is_last(k):
            return _common.FINAL_TEXT
        return ToolCallBlock(id=f"call_{k}", name="echo", arguments={"text": f"turn {k}"})

    # As on a user's machine: the project in one folder, tether's data (sessions, and the
    # checkpoints' shadow repository beside them) in another, both inside `tmp` (the shadow
    # repository went to `<tmp>/../checkpoints` and outlived the run).
    project, data = Path(tmp) / "project", Path(tmp) / "data"
    project.mkdir()
    (project / "README.md").write_text("a project\n")
    store = SessionStore(data / "sessions")
    writer = store.create(cwd=str(project))
    agent = Agent(
        ScriptedProvider(model),
        tools=[tool(echo, inline=not THREAD_TOOL)],
        root=str(project),
        session=AgentSession(sink=writer),
        config=AgentConfig.model_validate({"run": {"max_turns": turns + 1}}),
        compaction=_compaction() if compaction else False,
        runtime=Runtime(tracing=tracing),
    )
    clock.start()
    result = asyncio.run(agent.run("Call echo until told otherwise."))
    clock.stop()
    writer.close()
    assert result.text == _common.FINAL_TEXT, result.text
    return clock, cpu, agent, writer


def main() -> None:
    compaction = _compaction_flag()
    tracing_mode = _flag("tracing", "off")
    if tracing_mode not in ("off", "memory"):
        sys.exit(f"--tracing {tracing_mode!r}: off or memory")
    args = _common.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tracing: Tracing = NO_TRACING
        if tracing_mode == "memory":
            tracing, spans = _memory_tracing()
            baseline: list[float] = []
            traced: list[float] = []
            for _round in range(2):  # interleaved: off, memory, off, memory
                with tempfile.TemporaryDirectory() as t1:
                    baseline.append(
                        _cpu_ms_per_turn(_run(args.turns, compaction, NO_TRACING, t1)[1])
                    )
                with tempfile.TemporaryDirectory() as t2:
                    traced.append(_cpu_ms_per_turn(_run(args.turns, compaction, tracing, t2)[1]))
            off_ms, on_ms = min(baseline), min(traced)
            print(
                f"tracing: CPU ms/turn off {off_ms:.3f}, memory exporter {on_ms:.3f} "
                f"(best of 2 interleaved runs of {args.turns} turns each); ratio on/off "
                f"{on_ms / off_ms:.2f}x; {spans()} spans exported over the traced runs"
            )
        clock, cpu, agent, writer = _run(args.turns, compaction, tracing, tmp)
        history = agent.history
        json_bytes = sum(len(turn_to_json(t)) for t in history)
        _common.report(
            "tether",
            "0.1.0",
            clock,
            history,
            len(history),
            json_bytes,
            args.window,
            notes=f"scripted provider, {'worker-thread' if THREAD_TOOL else 'inline'} sync echo "
            f"tool, session persisted to JSONL, tracing {tracing_mode}",
        )
        ivals = [(b - a) * 1e3 for a, b in zip(clock.calls, clock.calls[1:], strict=False)]
        w: int = args.window
        early = sorted(ivals[:w])[len(ivals[:w]) // 2]
        late = sorted(ivals[-w:])[len(ivals[-w:]) // 2]
        size_kib = writer.path.stat().st_size // 1024
        at100 = sorted(ivals[100 - w : 100])[w // 2] if len(ivals) >= 100 else early
        compactions = agent.compaction.compactions if agent.compaction is not None else 0
        print(
            f"tether turn overhead (compaction {'on' if compaction else 'off'}, "
            f"{compactions} compactions): {len(clock.calls)} turns; median ms/turn "
            f"turns 1-{w}: {early:.3f}, turns {101 - w}-100: {at100:.3f}, "
            f"turns {len(ivals) - w + 1}-{len(ivals)}: {late:.3f} "
            f"(late/turn-100 {late / at100:.2f}x); mean {statistics.fmean(ivals):.3f}; "
            f"session file {size_kib} KiB"
        )
        cms = [(b - a) * 1e3 for a, b in itertools.pairwise(cpu)]
        blocks = [statistics.fmean(cms[i : i + 1000]) for i in range(0, len(cms), 1000)]
        print(
            f"CPU ms/turn (this thread; compactions included), mean of turns 1-100: "
            f"{statistics.fmean(cms[:100]):.3f}; per 1000-turn block: "
            + ", ".join(f"{b:.3f}" for b in blocks)
            + f"; last block / turns 1-100: {blocks[-1] / statistics.fmean(cms[:100]):.2f}x"
        )
        own = [c - (b - a) * 1e3 for c, (a, b) in zip(cms, itertools.pairwise(SAVES_CPU), strict=True)]
        late_saves = statistics.fmean(
            (b - a) * 1e3 for a, b in itertools.pairwise(SAVES_CPU[-1001:])
        )
        print(
            f"the same without the file saves (this thread's CPU in the gate's write_atomic, "
            f"counted in the run): mean of turns 1-100: {statistics.fmean(own[:100]):.3f}, "
            f"last 1000-turn block: {statistics.fmean(own[-1000:]):.3f}; the saves' share of "
            f"that block: {late_saves:.3f} ms/turn"
        )
        saves = _saved_output_cost(tmp)
        print(
            f"the disk's share: each turn saves its cut 2 KB echo output (case T26); "
            f"write_atomic of 2 KB into a new file under {tempfile.gettempdir()}: median {saves[0]:.3f} ms wall, "
            f"{saves[1]:.3f} ms CPU (1,000 files, measured after the run)"
        )


def _saved_output_cost(tmp: str, n: int = 1000) -> tuple[float, float]:
    """Median wall and mean CPU ms of the gate's file save (`tether.atomic.write_atomic`, no fsync, as the gate calls it) of a
    2 KB output into a fresh folder beside the session: on some disks creating a file costs
    more than the rest of a turn, which the per-turn figures include."""
    from tether.atomic import write_atomic

    folder = Path(tmp) / "save-cost"
    data = b"x" * 2048
    walls: list[float] = []
    c0 = time.thread_time()
    for k in range(n):
        t0 = time.perf_counter()
        write_atomic(folder / f"call_{k}.txt", data, durable=False, mode=0o600, folder_mode=0o700)
        walls.append(time.perf_counter() - t0)
    cpu = (time.thread_time() - c0) / n
    return statistics.median(walls) * 1e3, cpu * 1e3


if __name__ == "__main__":
    main()
