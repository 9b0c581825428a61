"""CLI start-up: `tether --help` and `tether sessions list` (1,000 sessions) vs `python -c pass`.

Each command is run `--repeat` times as a fresh process (`python -m tether.cli ...`, the same
interpreter as the `tether` script) with `TETHER_HOME` pointing at a temporary folder holding
`--sessions` session files (default 1,000; each a tool session of `--turns` turns, ~100 KB);
the best wall time of each is kept. `sessions list` is timed twice: cold (first listing after
the files were written) and warm (later listings). Also prints how many modules `--help`
imports.

Goals (issue 12): `--help` <= 0.3 s, `sessions list` <= 0.5 s.

Run: .venv/bin/python bench/startup.py [--sessions 1000] [--turns 40] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tether.messages import TextBlock, ToolCallBlock, Turn, text_turn, tool_result
from tether.session import SessionStore


def _time(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, bytes]:
    best = float("inf")
    out = b""
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, check=True)
        best = min(best, time.perf_counter() - t0)
        out = done.stdout
    return best, out


def write_sessions(root: Path, n: int, turns: int) -> None:
    store = SessionStore(root)
    body = "x" * 2_000
    for s in range(n):
        w = store.create(cwd=f"/work/project{s % 7}")
        w.append(text_turn(f"p{s}", "user", f"task number {s}: fix the failing test"))
        for k in range((turns - 1) // 2):
            call = ToolCallBlock(id=f"c{s}_{k}", name="read", arguments={"path": f"f{k}.py"})
            w.append(Turn(id=f"a{s}_{k}", role="assistant", content=(TextBlock(text="ok"), call)))
            w.append(Turn(id=f"u{s}_{k}", role="user", content=(tool_result(call.id, body),)))
        w.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=41)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TETHER_HOME": tmp}
        sessions = Path(tmp) / "sessions"
        write_sessions(sessions, args.sessions, args.turns)
        mb = sum(p.stat().st_size for p in sessions.glob("*.jsonl")) / 1e6
        base, _ = _time([py, "-c", "pass"], env, args.repeat)
        helped, _ = _time([py, "-m", "tether.cli", "--help"], env, args.repeat)
        cold, _ = _time([py, "-m", "tether.cli", "sessions", "list", "--all"], env, 1)
        warm, out = _time([py, "-m", "tether.cli", "sessions", "list", "--all"], env, args.repeat)
        rows = out.count(b"\n")
        count = subprocess.run(
            [py, "-X", "importtime", "-m", "tether.cli", "--help"],
            env=env, capture_output=True, check=True,
        ).stderr.count(b"import time:") - 1  # fmt: skip
    assert rows == args.sessions, rows
    print(f"python -c pass                 {base:6.3f} s")
    print(
        f"tether --help                  {helped:6.3f} s  ({helped / base:4.1f}x; "
        f"{count} modules imported)"
    )
    print(
        f"tether sessions list (cold)    {cold:6.3f} s  ({cold / base:4.1f}x; "
        f"{args.sessions} sessions, {mb:.0f} MB)"
    )
    print(f"tether sessions list (warm)    {warm:6.3f} s  ({warm / base:4.1f}x)")
    print(f"RESULT --help {helped:.3f} s (goal <= 0.3), sessions list {warm:.3f} s (goal <= 0.5)")


if __name__ == "__main__":
    main()
