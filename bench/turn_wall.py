"""Where a short run's wall time goes beyond its CPU time: one 200-turn run of
`bench/turn_overhead.py`'s loop (the peers' 32-line payload, checkpoints on, the session stored)
in this process, printed as one JSON line: the run's wall time, tether's CPU time and git's
(child processes), how many processes were spawned (`subprocess.run` calls: git, and the
sandbox's probe), turn 1 (the snapshot before the first call of a tool not marked `safe`), the
time after the last turn (the run's closing snapshot), and turns 180-199's median interval
beside their median CPU time.

    .venv/bin/python bench/turn_wall.py [--turns 200]
    # against another commit, the same file: PYTHONPATH=/path/to/other/src .venv/bin/python bench/turn_wall.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_PAYLOAD", "lines")

import itertools
import json
import resource
import statistics
import subprocess
import tempfile
import time
from typing import Any

import turn_overhead  # pyright: ignore[reportMissingImports]
from tether.tracing import NO_TRACING


def main() -> None:
    turns = int(sys.argv[sys.argv.index("--turns") + 1]) if "--turns" in sys.argv else 200
    spawned = [0]
    real_run = subprocess.run

    def counting_run(*args: Any, **kwargs: Any) -> Any:
        spawned[0] += 1
        return real_run(*args, **kwargs)  # pyright: ignore[reportUnknownVariableType]

    subprocess.run = counting_run
    with tempfile.TemporaryDirectory() as tmp:
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p0 = time.process_time()
        clock, cpu, _agent, _writer = turn_overhead._run(turns, False, NO_TRACING, tmp)  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType, reportUnknownVariableType]
        p1 = time.process_time()
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    calls: list[float] = clock.calls  # pyright: ignore[reportUnknownMemberType]
    ivals = [(b - a) * 1e3 for a, b in itertools.pairwise(calls)]
    cpus = [(b - a) * 1e3 for a, b in itertools.pairwise(cpu)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    child = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    print(
        json.dumps(
            {
                "total_ms": (clock.t1 - clock.t0) * 1e3,  # pyright: ignore[reportUnknownMemberType]
                "tether_cpu_ms": (p1 - p0) * 1e3,
                "git_cpu_ms": child * 1e3,
                "spawned": spawned[0],
                "turn1_ms": ivals[0],
                "after_last_ms": (clock.t1 - calls[-1]) * 1e3,  # pyright: ignore[reportUnknownMemberType]
                "late_interval_ms": statistics.median(ivals[-20:]),
                "late_cpu_ms": statistics.median(cpus[-20:]),  # pyright: ignore[reportUnknownArgumentType]
                "load": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
