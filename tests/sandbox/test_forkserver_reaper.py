"""Issue 12: the fork server keeps a fresh worker's guarantees under both sandboxes. Each call
is forked under a per-call keeper (a subreaper) that kills whatever the worker left behind, and
the call's resource limits apply to the forked worker (its cgroup, its RLIMITs), per call, on
one shared server. Each test fails with a server that forks workers directly."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_processes import DAEMONS

from kit.procs import left, marker
from kit.sandbox import context, tool_folder, worker_sh
from tether.sandbox.limits import ResourceLimits
from tether.tools.exec import forkserver


@pytest.fixture(autouse=True)
def fork_server() -> Iterator[None]:
    was = forkserver.enabled
    forkserver.shutdown()
    forkserver.enabled = True
    yield
    forkserver.shutdown()
    forkserver.enabled = was


@pytest.mark.parametrize("how", sorted(DAEMONS))
async def test_nothing_a_forked_worker_starts_outlives_the_call(
    root: Path, kind: str, how: str, tmp_path: Path
) -> None:
    mark = marker()
    folder = tool_folder(tmp_path / "tools")
    ctx = context(root, kind)
    r = await worker_sh(ctx, folder, DAEMONS[how].format(t=mark) + " echo up")
    assert "up" in r.text, r.text
    assert forkserver.servers() == 1  # the call went through the fork server
    assert left(f"sleep {mark}", wait_s=2.0) == [], (
        f"{how} from a forked worker outlived the call under {kind}"
    )
    # the server is still up (it is not its exit that ended the daemon) and serves again
    r = await worker_sh(ctx, folder, "echo again")
    assert "again" in r.text and forkserver.servers() == 1, r.text


async def test_file_size_limit_applies_per_call_on_one_server(
    root: Path, kind: str, tmp_path: Path
) -> None:
    folder = tool_folder(tmp_path / "tools")
    env = dict(context(root, kind).env)
    small = context(root, kind, env=env, limits=ResourceLimits(max_file_size_bytes=1 << 20))
    large = context(root, kind, env=env, limits=ResourceLimits(max_file_size_bytes=16 << 20))
    await worker_sh(small, folder, "head -c 8M /dev/zero > small.bin; echo done")
    await worker_sh(large, folder, "head -c 8M /dev/zero > large.bin; echo done")
    assert forkserver.servers() == 1  # both calls were forked by the same server
    assert (root / "small.bin").stat().st_size <= 1 << 20
    assert (root / "large.bin").stat().st_size == 8 << 20


async def test_process_limit_applies_to_a_forked_worker(
    root: Path, kind: str, tmp_path: Path
) -> None:
    if os.geteuid() == 0 and not Path("/sys/fs/cgroup/pids/cgroup.procs").exists():
        pytest.skip("root is exempt from RLIMIT_NPROC and no pids cgroup (v1) is available")
    folder = tool_folder(tmp_path / "tools")
    code = (
        "import os, time\n"
        "for i in range(60):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as e:\n"
        "        print('HIT', i); break\n"
        "    if pid == 0:\n"
        "        time.sleep(3); os._exit(0)\n"
        "else:\n"
        "    print('NO LIMIT')\n"
    )
    (root / "bomb.py").write_text(code)
    ctx = context(root, kind, limits=ResourceLimits(max_processes=20))
    r = await worker_sh(ctx, folder, f"{sys.executable} bomb.py")
    assert forkserver.servers() == 1
    assert "HIT" in r.text and "NO LIMIT" not in r.text, r.text
