"""Resource limits of tool subprocesses: a process count and a file size.

Owns: `ResourceLimits` (the settings `tools.max_processes`, `tools.max_file_size`),
`LimitGuard` (one call's enforcement: a child-side `preexec` and a `finish` that says whether a
limit was hit) and the texts reporting a hit.
Does not own: starting processes (`tether.sandbox.proc.spawn_confined` and the tool worker pass
`preexec`).

How each limit is enforced:
    * file size: `RLIMIT_FSIZE` on the command: a write past it fails (EFBIG) or the writer is
      killed by SIGXFSZ (bash reports exit code 153, "File size limit exceeded").
    * process count: a pids cgroup (`pids.max`) when this process may make one (root with the
      cgroup v1 pids hierarchy at `/sys/fs/cgroup/pids`); the cgroup also lets `finish` kill
      whatever the call left behind. Otherwise `RLIMIT_NPROC`, which the kernel counts per user
      (per user namespace: bwrap makes one for non-root users) and never applies to root.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CGROUP_V1_PIDS = Path("/sys/fs/cgroup/pids")
DEFAULT_MAX_PROCESSES = 1024
DEFAULT_MAX_FILE_SIZE_BYTES = 512 * 1024 * 1024
FSIZE_EXIT = 128 + signal.SIGXFSZ
"""bash's exit code for a command killed by SIGXFSZ (153)."""

_seq = itertools.count()


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLimits:
    """Limits on every tool subprocess tree (one `bash` call, one worker call).

    Attributes:
        max_processes: processes (and threads) at once; None: no limit.
        max_file_size_bytes: the largest file a command may write (bytes); None: no limit.
    """

    max_processes: int | None = DEFAULT_MAX_PROCESSES
    max_file_size_bytes: int | None = DEFAULT_MAX_FILE_SIZE_BYTES

    def start(self) -> LimitGuard:
        """A guard for one call (makes its cgroup when possible)."""
        return LimitGuard(self)


def _cgroup_v1(limit: int) -> Path | None:
    if os.geteuid() != 0 or not (CGROUP_V1_PIDS / "cgroup.procs").exists():
        return None
    path = CGROUP_V1_PIDS / f"tether-{os.getpid()}-{next(_seq)}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _within_hard(which: int, value: int | None) -> int | None:
    """`value` lowered to this process's hard limit `which` where that is lower: a process
    cannot raise its hard limit, and a `setrlimit` above it fails in the forked child, which
    made every command fail to start under a host's lower limit (`ulimit -Hf`, a container's
    `nofile`-style caps)."""
    if value is None:
        return None
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


class LimitGuard:
    """The limits of one call: pass `preexec` to the subprocess, call `finish` after it.

    Args:
        limits: what to enforce.
    """

    def __init__(self, limits: ResourceLimits) -> None:
        self.limits = limits
        self.cgroup = None if limits.max_processes is None else _cgroup_v1(limits.max_processes)
        procs = None if self.cgroup is None else os.fsencode(self.cgroup / "cgroup.procs")
        nproc = _within_hard(
            resource.RLIMIT_NPROC, limits.max_processes if self.cgroup is None else None
        )
        fsize = _within_hard(resource.RLIMIT_FSIZE, limits.max_file_size_bytes)
        self.nproc: int | None = nproc
        """RLIMIT_NPROC to set in the call's process (None: not set; the cgroup counts)."""
        self.fsize: int | None = fsize
        """RLIMIT_FSIZE to set in the call's process (None: not set)."""

        def preexec() -> None:
            # the forked child, before exec: only syscalls (no imports, no locks)
            if procs is not None:
                fd = os.open(procs, os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        self.preexec: Callable[[], None] = preexec

    def enter(self, pid: int) -> None:
        """Move process `pid` (this process's PID namespace) into the call's cgroup, if any:
        for a process started elsewhere (a fork server's per-call keeper), before it forks
        the call's processes.

        Raises:
            OSError: the cgroup refused it.
        """
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text(str(pid))

    def finish(self) -> bool:
        """Kill what is left in the call's cgroup, remove it, and say whether the process
        limit was hit (always False without a cgroup: see `nproc_hit_in`)."""
        if self.cgroup is None:
            return False
        hit = False
        with contextlib.suppress(OSError, ValueError):
            for line in (self.cgroup / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                hit = hit or (key == "max" and int(value) > 0)
        for _ in range(200):
            try:
                pids = [int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            import time

            time.sleep(0.005)  # their parents (bwrap, the launcher, this loop's watcher) reap
        for _ in range(50):
            try:
                self.cgroup.rmdir()
                break
            except OSError:
                import time

                time.sleep(0.01)
        return hit


def nproc_hit_in(text: str) -> bool:
    """True when command output shows a fork refused for the process limit."""
    return "fork: Resource temporarily unavailable" in text or (
        "fork: retry" in text and "Resource temporarily unavailable" in text
    )


def limit_note(limits: ResourceLimits, *, nproc: bool, fsize: bool) -> str:
    """The note appended to an is_error result when a limit was hit."""
    parts: list[str] = []
    if nproc:
        parts.append(
            f"the process limit ({limits.max_processes} processes, tools.max_processes) was "
            "hit: new processes were refused"
        )
    if fsize:
        parts.append(
            f"the file-size limit ({limits.max_file_size_bytes} bytes, tools.max_file_size) "
            "was hit: the write was stopped"
        )
    return "(" + "; ".join(parts) + ")"
