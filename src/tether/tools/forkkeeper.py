"""The per-call part of the fork server (`tether.tools.forkserver`): the keeper a server forks
for each call, and the worker the keeper forks.

Owns: `keep` (in the forked keeper: a session of its own, child subreaper, the handshake that
lets the harness put it in the call's cgroup, the worker with the call's RLIMITs, then every
descendant SIGKILLed and the worker's status as its own).
Does not own: the server loop and the protocol's harness side (`tether.tools.forkserver`), the
worker protocol (`tether.tools.worker`).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _worker(fds: tuple[int, int, int], nproc: int, fsize: int) -> None:
    """In the forked worker: its own process group, the call's RLIMITs, its pipes as fds 0-2,
    then the worker's `main` (which ends with `os._exit`)."""
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
        from tether.tools.worker import main

        main()
    finally:
        os._exit(70)


def keep(
    fds: tuple[int, int, int],
    hand: socket.socket,
    limits: tuple[int, int],
    keep_closed: list[socket.socket],
    sel: selectors.BaseSelector,
) -> None:
    """In the forked keeper (see the module docstring): a session of its own, subreaper,
    the handshake, the worker, then every descendant killed; exits with the worker's status."""
    try:
        from tether.tools.landlock import become_subreaper, kill_descendants

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
            _worker(fds, *limits)
        worker.append(pid)
        _close_fds(*fds)
        if stopped:
            stop(signal.SIGTERM, None)
        status = 0
        while True:
            try:
                done, st = os.waitpid(pid, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if done == pid:
                status = st
                break
        kill_descendants()
        code = os.waitstatus_to_exitcode(status)
        if code < 0:  # die of the worker's signal (SIGKILL cannot be given a handler)
            with contextlib.suppress(OSError, ValueError):
                signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)
    finally:
        os._exit(70)
