"""The per-call part of the fork server (`tether.tools.exec.forkserver`): the keeper a server
forks for each call, and the worker the keeper forks (its entry point passed in by the server).

Owns: `keep` (in the forked keeper: a session of its own, child subreaper, the handshake that
lets the harness put it in the call's cgroup, the worker with the call's RLIMITs, then every
descendant SIGKILLed and the worker's status as its own).
Does not own: the server loop and the protocol's harness side (`tether.tools.exec.forkserver`),
the worker protocol (`tether.tools.exec.worker`), reaping (`tether.sandbox.landlock`'s reaper,
shared with the Landlock launcher).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
from collections.abc import Callable


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _worker(fds: tuple[int, int, int], nproc: int, fsize: int, entry: Callable[[], None]) -> None:
    """In the forked worker: its own process group, the call's RLIMITs, its pipes as fds 0-2,
    then the worker's `entry` (which ends with `os._exit`)."""
    try:
        import resource

        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setpgid(0, 0)  # its own process group, as a fresh worker (inside the keeper's session)
        if nproc >= 0:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if fsize >= 0:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        entry()
    finally:
        os._exit(70)


def keep(
    fds: tuple[int, int, int],
    hand: socket.socket,
    limits: tuple[int, int],
    keep_closed: list[socket.socket],
    sel: selectors.BaseSelector,
    entry: Callable[[], None],
) -> None:
    """In the forked keeper (see the module docstring): a session of its own, subreaper,
    the handshake, the worker (`entry` in a forked child), then every descendant killed; exits
    with the worker's status."""
    try:
        from tether.sandbox.reaper import become_subreaper, wait_reaped

        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        worker: list[int] = []  # the worker's pid once forked
        stopped: list[bool] = []

        def stop(_sig: int, _frame: object) -> None:
            stopped.append(True)
            for pid in worker:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

        signal.signal(signal.SIGTERM, stop)
        os.setsid()
        sel.close()
        for s in keep_closed:
            s.close()
        become_subreaper()
        hand.send(b"keeper")
        if hand.recv(16) != b"go" or stopped:
            os._exit(70)
        hand.close()
        pid = os.fork()
        if pid == 0:
            _worker(fds, *limits, entry)
        worker.append(pid)
        _close_fds(*fds)
        if stopped:
            stop(signal.SIGTERM, None)
        code = os.waitstatus_to_exitcode(wait_reaped(pid))
        if code < 0:  # die of the worker's signal (SIGKILL cannot be given a handler)
            with contextlib.suppress(OSError, ValueError):
                signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)
    finally:
        os._exit(70)
