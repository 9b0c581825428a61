"""Resume speed: loading a large session file vs a bare `json.loads` per line (a script, not a test).

Writes a session of `--mb` megabytes (default 100) with `SessionWriter`: tool rounds of an
assistant turn (a text block + one tool call, with usage and provenance) and a user turn holding
its ~2 KB tool_result, the shape of a long agent session. Then, alternately (`--repeat` times,
best of each kept):

    baseline  read the bytes, split on newlines, `json.loads` each line (no validation),
              each decoded line dropped at once (the issue's baseline)
    kept      the same, every decoded line kept in a list and the cyclic GC paused while
              decoding, as a loader must keep the history and as `SessionStore.load` pauses it
    tether    `SessionStore.load(id)`: header, envelopes, typed `Turn`s, report

Prints MB/s of each and the ratios, of wall time and of CPU time (`time.process_time`, the
figure to read on a shared machine, where wall time mostly measures waiting for a core).
Goals: tether >= 200 MB/s (issue 12); load <= 0.75x the `kept` baseline (issue 38). A decoder that keeps
what it decodes writes fresh memory for every object; the dropped baseline reuses the same few
cache-hot blocks, so `kept` is the like-for-like figure.

Run: .venv/bin/python bench/session_load.py [--mb 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from tether.messages import Provenance, TextBlock, ToolCallBlock, Turn, Usage, tool_result
from tether.session import SessionStore

PROV = Provenance(provider="anthropic", api="anthropic", model="claude-sonnet-4-5")


def _round(k: int) -> tuple[Turn, Turn]:
    call = ToolCallBlock(id=f"toolu_{k:08d}", name="read", arguments={"path": f"src/file_{k}.py"})
    assistant = Turn(
        id=f"a{k}",
        role="assistant",
        content=(TextBlock(text=f"Reading file {k} to check the handler."), call),
        usage=Usage(input_tokens=1200 + k % 1000, output_tokens=80, cache_read_tokens=50_000),
        provenance=PROV,
        stop_reason="tool_use",
    )
    body = "\n".join(f"{i:4d}  def handler_{k}_{i}(x):  # line {i} of the file" for i in range(40))
    user = Turn(id=f"u{k}", role="user", content=(tool_result(call.id, body),))
    return assistant, user


def write_session(store: SessionStore, megabytes: int) -> str:
    writer = store.create(cwd="/tmp")
    target = megabytes * 1_000_000
    k = 0
    while writer.path.stat().st_size < target:
        for _ in range(500):
            a, u = _round(k)
            writer.append(a)
            writer.append(u)
            k += 1
    writer.close()
    return writer.id


def bare(path: Path) -> int:
    data = path.read_bytes()
    n = 0
    for line in data.split(b"\n"):
        if line:
            json.loads(line)
            n += 1
    return n


def kept(path: Path) -> int:
    data = path.read_bytes()
    paused = gc.isenabled()
    gc.disable()
    try:
        out = [json.loads(line) for line in data.split(b"\n") if line]
    finally:
        if paused:
            gc.enable()
    return len(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp))
        sid = write_session(store, args.mb)
        path = store.path(sid)
        size = path.stat().st_size
        best_bare = best_kept = best_load = float("inf")
        cpu_bare = cpu_kept = cpu_load = float("inf")
        turns = 0
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            lines = bare(path)
            best_bare = min(best_bare, time.perf_counter() - t0)
            cpu_bare = min(cpu_bare, time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
            kept(path)
            best_kept = min(best_kept, time.perf_counter() - t0)
            cpu_kept = min(cpu_kept, time.process_time() - c0)
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            loaded = store.load(sid)
            best_load = min(best_load, time.perf_counter() - t0)
            cpu_load = min(cpu_load, time.process_time() - c0)
            turns = len(loaded.turns)
            assert loaded.report.ok and turns == lines - 1, (turns, lines)
            del loaded
            gc.collect()
    mb = size / 1e6
    print(f"session: {mb:.1f} MB, {turns} turns")
    print(
        f"baseline json.loads per line  {mb / best_bare:7.1f} MB/s  ({best_bare:.2f} s, CPU {cpu_bare:.2f} s)"
    )
    print(
        f"baseline json.loads, kept     {mb / best_kept:7.1f} MB/s  ({best_kept:.2f} s, CPU {cpu_kept:.2f} s)"
    )
    print(
        f"tether SessionStore.load      {mb / best_load:7.1f} MB/s  ({best_load:.2f} s, CPU {cpu_load:.2f} s)"
    )
    print(
        f"RESULT load/json.loads = {best_load / best_bare:.2f}x the time "
        f"({best_load / best_kept:.2f}x json.loads kept); {mb / best_load:.0f} MB/s (goal >= 200)"
    )
    print(
        f"RESULT CPU load/json.loads kept = {cpu_load / cpu_kept:.2f}x "
        f"(goal <= 0.75x); load/json.loads = {cpu_load / cpu_bare:.2f}x"
    )


if __name__ == "__main__":
    main()
