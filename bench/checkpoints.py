"""Checkpoint snapshots on a 10,000-file project: first, incremental, unchanged; disk used.

Builds a project of `--files` files (default 10,000; source-sized, 1-4 KB each, in 100
folders) in a temporary folder, then times, with the shadow repository of
`tether.checkpoint.shadow`:
    first        the first snapshot (every file hashed)
    incremental  a snapshot after 5 files changed, 1 created, 1 deleted (the usual turn)
    unchanged    a snapshot with nothing changed
    rewind       restoring the first snapshot after those changes
Baseline measured in the same run: `git status --porcelain` on the same tree (git's own scan
of the working folder, which every snapshot includes). Disk: the shadow repository's size
against the project's size. Goal: incremental <= 100 ms.

Run: .venv/bin/python bench/checkpoints.py [--files 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tether.checkpoint.restore import restore
from tether.checkpoint.shadow import ShadowRepo


def make_project(root: Path, n: int, rng: random.Random) -> int:
    total = 0
    for i in range(n):
        folder = root / f"pkg{i % 100:03d}"
        folder.mkdir(exist_ok=True)
        body = "".join(
            f"line {j} of module {i}: {rng.random()}\n" for j in range(rng.randint(25, 100))
        )
        (folder / f"mod{i}.py").write_text(body)
        total += len(body)
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    return total


def cpu() -> float:
    """CPU seconds of this process's children so far (git): a figure the machine's load
    does not inflate, unlike wall time."""
    t = os.times()
    return t.children_user + t.children_system


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root, store = Path(tmp) / "project", Path(tmp) / "store"
        root.mkdir()
        size = make_project(root, args.files, rng)
        repo = ShadowRepo(root, store=store)
        c0 = cpu()
        first = repo.snapshot("first")
        first_cpu = cpu() - c0
        disk_first = du(repo.git_dir)
        files = sorted(root.rglob("*.py"))
        incremental: list[float] = []
        incremental_cpu: list[float] = []
        unchanged: list[float] = []
        rewinds: list[float] = []
        baseline: list[float] = []
        env = {**os.environ, "GIT_DIR": str(repo.git_dir), "GIT_WORK_TREE": str(root)}
        for r in range(args.repeat):
            for f in rng.sample(files, 5):
                f.write_text(f.read_text() + f"# edit {r}\n")
            (root / f"new{r}.py").write_text("print('new')\n")
            victim = files.pop(rng.randrange(len(files)))
            victim.unlink()
            t0, c0 = time.perf_counter(), cpu()
            snap = repo.snapshot("turn")
            incremental.append(time.perf_counter() - t0)
            incremental_cpu.append(cpu() - c0)
            t0 = time.perf_counter()
            repo.snapshot("unchanged")
            unchanged.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=all"],
                env=env,
                cwd=root,
                capture_output=True,
                check=True,
            )
            baseline.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            restore(repo, snap.commit, first.commit)
            rewinds.append(time.perf_counter() - t0)
            files = sorted(root.rglob("*.py"))
            repo.snapshot("after rewind")
        disk_after = du(repo.git_dir)
        med = statistics.median
        base = med(baseline)
        print(f"project: {args.files} files, {size / 1e6:.1f} MB of text")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(
            f"first snapshot:       {first.seconds * 1e3:8.1f} ms  (git CPU {first_cpu * 1e3:.0f} ms)"
        )
        print(
            f"incremental snapshot: {med(incremental) * 1e3:8.1f} ms  ({med(incremental) / base:.1f}x "
            f"`git status`; git CPU {med(incremental_cpu) * 1e3:.0f} ms)"
        )
        print(
            f"unchanged snapshot:   {med(unchanged) * 1e3:8.1f} ms  ({med(unchanged) / base:.1f}x `git status`)"
        )
        print(f"rewind (7 paths):     {med(rewinds) * 1e3:8.1f} ms")
        print(f"baseline git status:  {base * 1e3:8.1f} ms")
        print(
            f"disk: first {disk_first / 1e6:.1f} MB ({disk_first / size:.2f}x the project), "
            f"after {args.repeat} turns + rewinds {disk_after / 1e6:.1f} MB"
        )
        ok = med(incremental) <= 0.100
        print(
            f"RESULT incremental_ms={med(incremental) * 1e3:.1f} goal<=100 {'met' if ok else 'MISSED'}"
        )


if __name__ == "__main__":
    main()
