"""Kinds 3, 4, 7 and 8 of issue 11 under both sandboxes: no service socket in /run is reachable
and /dev/shm keeps nothing; nothing a `bash` call or a folder tool's worker starts (nohup, setsid,
double fork) outlives the call; a worker cannot signal tether; a fork bomb and an oversized
write hit limits reported as is_error results; a private temp folder left by a killed tether is
removed at the next start."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kit.sandbox import bash, context, sandbox_for, tool_folder, worker_sh
from tether.sandbox.config import tmp_parent
from tether.sandbox.limits import ResourceLimits

DAEMONS = {
    "nohup": "nohup sleep {t} > /dev/null 2>&1 &",
    "setsid": "setsid sleep {t} > /dev/null 2>&1 < /dev/null &",
    "double-fork": "( ( sleep {t} > /dev/null 2>&1 & ) & )",
}


def alive(marker: str) -> list[int]:
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"sleep {marker}" in cmd:
            stat = Path(f"/proc/{name}/stat").read_text()
            if ") Z" not in stat:
                out.append(int(name))
    return out


def settle(marker: str) -> list[int]:
    left: list[int] = []
    for _ in range(40):
        left = alive(marker)
        if not left:
            return []
        time.sleep(0.05)
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # do not leak them into the rest of the suite
    return left


@pytest.mark.parametrize("how", sorted(DAEMONS))
async def test_bash_leaves_no_process_behind(root: Path, kind: str, how: str) -> None:
    marker = f"{os.getpid() % 1000 + 1}{hash((kind, how)) % 1000 + 1000}"
    r = await bash(context(root, kind), DAEMONS[how].format(t=marker) + " echo started")
    assert "started" in r.text
    assert settle(marker) == [], f"{how} outlived the call under {kind}"


@pytest.mark.parametrize("how", sorted(DAEMONS))
async def test_a_worker_leaves_no_process_behind(
    root: Path, kind: str, how: str, tmp_path: Path
) -> None:
    marker = f"{os.getpid() % 1000 + 1}{hash((kind, how, 'w')) % 1000 + 2000}"
    folder = tool_folder(tmp_path / "tools")
    r = await worker_sh(context(root, kind), folder, DAEMONS[how].format(t=marker) + " echo up")
    assert "up" in r.text, r.text
    assert settle(marker) == [], f"{how} from a worker outlived the call under {kind}"


async def test_a_worker_cannot_signal_tether(root: Path, kind: str, tmp_path: Path) -> None:
    folder = tool_folder(tmp_path / "tools")
    r = await worker_sh(context(root, kind), folder, f"kill -0 {os.getpid()} && echo REACHED")
    assert "REACHED" not in r.text, r.text


async def test_bash_cannot_signal_tether(root: Path, kind: str) -> None:
    r = await bash(context(root, kind), f"kill -0 {os.getpid()} && echo REACHED")
    assert "REACHED" not in r.text, r.text


async def test_no_service_socket_in_run_is_reachable(root: Path, kind: str) -> None:
    sandbox_for(kind)
    if not os.access("/run", os.W_OK):
        pytest.skip("needs a writable /run to place a test socket (root)")
    path = f"/run/tether-escape-{os.getpid()}-{kind}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(5)
    accepted: list[bool] = []

    def serve() -> None:
        try:
            server.accept()[0].close()
            accepted.append(True)
        except OSError:
            pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    py = f"import socket; s=socket.socket(socket.AF_UNIX); s.connect({path!r}); print('CONNECTED')"
    try:
        r = await bash(context(root, kind), f'{sys.executable} -c "{py}"')
    finally:
        server.close()
        os.unlink(path)
    assert "CONNECTED" not in r.text and not accepted, r.text


async def test_dev_shm_keeps_nothing(root: Path, kind: str) -> None:
    name = f"tether-shm-{os.getpid()}-{kind}"
    await bash(context(root, kind), f"echo x > /dev/shm/{name}")
    try:
        assert not Path("/dev/shm", name).exists()
    finally:
        Path("/dev/shm", name).unlink(missing_ok=True)


async def test_a_fork_bomb_hits_the_process_limit(root: Path, kind: str) -> None:
    if os.geteuid() == 0 and not Path("/sys/fs/cgroup/pids/cgroup.procs").exists():
        pytest.skip("root is exempt from RLIMIT_NPROC and no pids cgroup (v1) is available")
    ctx = context(root, kind, limits=ResourceLimits(max_processes=20))
    r = await bash(ctx, "for i in $(seq 40); do sleep 1 & done; wait; echo finished")
    assert r.is_error and "process limit" in r.text, r.text


async def test_an_oversized_write_hits_the_file_size_limit(root: Path, kind: str) -> None:
    ctx = context(root, kind, limits=ResourceLimits(max_file_size_bytes=1 << 20))
    r = await bash(ctx, "head -c 8M /dev/zero > big.bin; echo after")
    assert r.is_error and "file-size limit" in r.text, r.text
    assert (root / "big.bin").stat().st_size <= 1 << 20


async def test_within_limits_nothing_is_reported(root: Path, kind: str) -> None:
    ctx = context(root, kind, limits=ResourceLimits(max_processes=64, max_file_size_bytes=1 << 20))
    r = await bash(ctx, "head -c 1000 /dev/zero > ok.bin; sleep 0 & wait; echo fine")
    assert not r.is_error and r.text == "fine", r.text


def test_a_killed_sessions_private_tmp_is_removed_at_the_next_start(kind: str) -> None:
    sb = sandbox_for(kind)
    assert sb is not None
    mine = sb.tmp_dir
    code = (
        "import sys; from tether.sandbox.detect import available; "
        f"sb = available({kind!r}); print(sb.tmp_dir, flush=True); sys.stdin.read()"
    )
    # The folder is checked while its owner lives: once the owner is dead, any sandbox started
    # by a test on the other xdist worker may sweep it first (a clean-clone CI run saw that).
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdin is not None
    left = Path(proc.stdout.readline().strip())
    assert left.is_dir() and left.parent == tmp_parent()
    proc.kill()
    assert proc.wait() == -9
    proc.stdin.close()
    proc.stdout.close()
    fresh = type(sb)() if kind == "bwrap" else type(sb)(sb.abi)  # type: ignore[call-arg,attr-defined]
    assert fresh.tmp_dir.is_dir()
    assert not left.exists()
    assert mine.is_dir()  # a live session's folder is kept
