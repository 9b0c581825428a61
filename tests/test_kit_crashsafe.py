"""`kit.crashsafe`: a test that kills its own xdist worker fails with the signal named, and the
run goes on to its summary line (exit 1), under the suite's own `-n 2 --dist loadgroup`. Without
the scheduler, xdist 3.8 hangs or stops with an INTERNALERROR (exit 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

KIT = Path(__file__).parent

SUITE = '''
import os, signal, time
import pytest

def _die():
    os.kill(os.getpid(), signal.SIGSEGV)

@pytest.mark.parametrize("i", range(6))
def test_before(i):
    pass

def test_segfault():
    _die()

@pytest.mark.xdist_group("g")
def test_group_first():
    pass

@pytest.mark.xdist_group("g")
def test_group_crash():
    _die()

@pytest.mark.xdist_group("g")
def test_group_after():
    pass

@pytest.mark.parametrize("i", range(6))
def test_after(i):
    pass

def test_last_crash_after_a_pause():
    time.sleep(1.0)  # the other worker has finished and shut down by now
    _die()
'''


def _run(folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "test_dies.py").write_text(SUITE)
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(KIT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "kit.crashsafe",
         "-p", "no:cacheprovider", "-q", "test_dies.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_a_worker_killed_by_its_test_fails_that_test_and_the_run_finishes(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = run.stdout + run.stderr
    assert "INTERNALERROR" not in out
    assert run.returncode == 1, out[-3000:]
    assert "3 failed, 14 passed" in out, out[-3000:]
    for name in ("test_segfault", "test_group_crash@g", "test_last_crash_after_a_pause"):
        assert f"crashed while running 'test_dies.py::{name}' (the worker died of SIGSEGV)" in out
