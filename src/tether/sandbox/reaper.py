"""The one process reaper: run a command as a child, then end everything it left behind.

Owns: `die_with_parent`, `become_subreaper`, `run_reaped` (fork + exec + reap, with hooks on each side of the
fork), `wait_reaped` and `kill_descendants`. The sandbox launcher (`tether.sandbox.launcher`)
and the fork keeper (`tether.tools.exec.forkkeeper`) both use it.
Does not own: confinement (`tether.sandbox.landlock`, `tether.sandbox.unixguard`).

Standard library only (the launcher runs with `python -I -S`).
"""

from __future__ import annotations

import ctypes
import os
import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the launcher ~8 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel SIGKILL this process when its parent dies (`PR_SET_PDEATHSIG`).

    The setting only covers a parent alive when it is made: one that died before (this process
    already re-parented) never signals. Given `parent` (the pid this process was forked by),
    a process whose parent is already another one SIGKILLs itself instead. Safe in a forked
    child before its exec (a subprocess `preexec_fn`): two syscalls, nothing imported; the
    setting survives the exec of a program that is not set-user-ID."""
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), 9)


def become_subreaper() -> None:
    """Make this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): orphaned descendants
    are re-parented to it, so `kill_descendants` reaches them all."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_reaped(
    command: Sequence[str],
    *,
    in_child: Callable[[], None] | None = None,
    in_parent: Callable[[int], None] | None = None,
    serve: Callable[[int], None] | None = None,
    name: str = "tether sandbox",
) -> int:
    """Run `command` as a child with this process as its subreaper; when it exits, SIGKILL
    and reap every process it left behind (nohup, setsid, double fork: all re-parented here),
    then return its status (re-raising a fatal signal on this process). In a PID namespace
    made by `confine(pid_ns=True)` the child is its init, so the kernel also ends the rest
    when it exits, and when this launcher is killed (the child has PR_SET_PDEATHSIG).

    Args:
        command: the argv to exec (looked up on PATH).
        in_child: runs in the child just before the exec (an OSError there: exit 126, nothing
            runs).
        in_parent: runs in the parent right after the fork, with the child's pid.
        serve: runs in the parent next, with the child's pid, until the child has exited
            (without reaping it); then the reaping starts.
        name: how error lines on stderr start.
    """
    import signal

    become_subreaper()
    pid = os.fork()
    if pid == 0:
        try:
            die_with_parent()
            # Python ignores these; an ignored signal stays ignored across exec (a write past
            # RLIMIT_FSIZE must kill the writer, a closed pipe end a producer)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            if in_child is not None:
                in_child()
            os.execvp(command[0], list(command))
        except OSError as e:
            sys.stderr.write(f"{name}: {command[0]}: {e.strerror}\n")
            os._exit(127 if isinstance(e, FileNotFoundError) else 126)
    if in_parent is not None:
        in_parent(pid)
    if serve is not None:
        serve(pid)
    status = wait_reaped(pid)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def wait_reaped(pid: int) -> int:
    """The one reaper (the launcher's and the fork keeper's): reap children until `pid` exits,
    then SIGKILL and reap every descendant left; `pid`'s wait status (0: reaped elsewhere)."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
        if done == pid:
            break
    kill_descendants()
    return status


def _children() -> list[int]:
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        pass
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            out.append(int(name))
    return out


def kill_descendants() -> None:
    """SIGKILL every child of this process until none is left, reaping them; with this
    process a subreaper, that is every descendant (each killed one's children come here)."""
    import time

    while True:
        for child in _children():
            try:  # noqa: SIM105
                os.kill(child, 9)
            except OSError:
                pass
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if done == 0:
            time.sleep(0.001)
