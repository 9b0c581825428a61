"""Crash safety of persisted outputs: a process SIGKILLed while writing one leaves the final
path absent (or its previous complete version), never a half-written file; both ways of
writing (an unnamed file linked into place, and the named temp file the host falls back to)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tether import atomic
from tether.atomic import WRITE_CHUNK_BYTES
from tether.tools.exec.persist import TOOL_RESULTS_DIR

SRC = Path(__file__).resolve().parents[2] / "src"
SIZE_CHUNKS = 12

WRITER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from tether.messages import TextBlock, ToolResultBlock
from tether import atomic
from tether.tools.exec import persist

def pause(written):
    print(written, flush=True)
    if sys.argv[3] == "slow":
        time.sleep(0.5)

atomic._after_chunk = pause
atomic.unnamed_files = atomic.unnamed_files and sys.argv[5] == "unnamed"
line = "0123456789abcdef" * 63 + "\\n"  # 1009 chars
text = line * ((atomic.WRITE_CHUNK_BYTES * int(sys.argv[4])) // len(line))
r = ToolResultBlock(tool_call_id="call_big", content=(TextBlock(text=text),))
out = persist.persist_tool_result(r, Path(sys.argv[2]))
print("DONE", out.text[:40], flush=True)
"""


def _expected(chunks: int) -> bytes:
    line = "0123456789abcdef" * 63 + "\n"
    return (line * ((WRITE_CHUNK_BYTES * chunks) // len(line))).encode()


def _spawn(session_dir: Path, mode: str, chunks: int, how: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(SRC), str(session_dir), mode, str(chunks), how],
        stdout=subprocess.PIPE,
        text=True,
    )


def _kill_after(proc: subprocess.Popen[str], chunks_seen: int) -> None:
    assert proc.stdout is not None
    for _ in range(chunks_seen):
        line = proc.stdout.readline()
        assert line.strip().isdigit(), line
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    proc.stdout.close()


@pytest.mark.parametrize("how", ["unnamed", "named"])
def test_sigkill_mid_write_leaves_no_half_file(tmp_path: Path, how: str) -> None:
    if how == "unnamed" and not atomic.unnamed_files:
        pytest.skip("this host cannot write unnamed files (O_TMPFILE)")
    final = tmp_path / TOOL_RESULTS_DIR / "call_big.txt"
    proc = _spawn(tmp_path, "slow", SIZE_CHUNKS, how)
    _kill_after(proc, 3)
    # killed mid-write: the final path is absent; the bytes written so far sit in a temp file
    # (named) or in an unnamed file the kernel frees with the process (unnamed)
    assert not final.exists()
    temps = [p for p in final.parent.iterdir() if p.name.endswith(".tmp")]
    if how == "named":
        assert len(temps) == 1 and 0 < temps[0].stat().st_size < len(_expected(SIZE_CHUNKS))
    else:
        assert temps == []
    # a complete run afterwards writes the whole output
    done = _spawn(tmp_path, "fast", SIZE_CHUNKS, how)
    out, _ = done.communicate(timeout=120)
    assert done.returncode == 0 and "DONE <persisted-output" in out
    want = _expected(SIZE_CHUNKS)
    assert final.stat().st_size == len(want)
    assert hashlib.sha256(final.read_bytes()).digest() == hashlib.sha256(want).digest()
    # killed while replacing it with a bigger one: the previous complete version stays
    again = _spawn(tmp_path, "slow", SIZE_CHUNKS * 2, how)
    _kill_after(again, 4)
    assert final.read_bytes() == want
