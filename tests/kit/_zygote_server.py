"""The warmed interpreter behind `kit.zygote` (run as a script, not imported by tests).

It imports what a `tether jobs` command imports, then waits on the control socket whose file
descriptor is its first argument. Each request is a message with four descriptors (a status
socket, then the child's stdin, stdout and stderr), then the request itself on the status
socket (8 bytes of length, then JSON: arguments, environment, working folder, new session).
The server forks; the child takes the request's arguments, environment, working folder and
standard streams and runs `python -m tether.cli ARGS` as the interpreter would (`runpy`,
`sys.path[0]` the working folder, Python's own SIGINT handler), then exits the way an
interpreter does (threads joined, `atexit`, streams flushed). The child writes `pid N` on the
status socket once it is set up, with a pidfd of itself (`errno message` instead if it cannot
be set up); the server writes `exit CODE` when it reaps the child (`CODE` as `subprocess`
gives it: negative for a signal). The server ignores SIGINT (a Ctrl-C at the terminal reaches
the whole process group: the test process handles it) and exits when the control socket
closes (the test process is gone).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
from types import FrameType
from typing import Any

WARM = (
    "tether.cli.entry",
    "tether.cli.main",
    "tether.jobs.engine",
    "tether.jobs.runner",
    "tether.jobs.warm",
    "tether.jobs.pull",
    "tether.jobs.liveness",
    "tether.providers.openai_chat",
    "tether.tools.builtin.toolset",
    "tether.session.dbstore",
    "dbos._sys_db_sqlite",
    "dbos._sys_db_postgres",
    "sqlalchemy.dialects.sqlite",
    "sqlalchemy.dialects.postgresql",
    "psycopg",
    "keyring",
)
"""The modules imported once here (a child imports anything else itself)."""


def _warm() -> None:
    for name in WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    # a fork copies only the calling thread: the imports must have started none
    assert threading.active_count() == 1, [t.name for t in threading.enumerate()]


def _wake(_signum: int, _frame: FrameType | None) -> None:
    """SIGCHLD's handler: nothing; its byte on the wakeup fd wakes the server's select."""


def _serve(
    ctl: socket.socket,
) -> tuple[dict[str, Any], socket.socket, list[int]] | None:
    """Serve requests; returns in a child (its request, status socket and standard streams),
    or None in the server when the control socket closes."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, _wake)
    signal.set_wakeup_fd(wake_w)
    pending: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 512):
                    pass
        while pending:
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = pending.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(f"exit {os.waitstatus_to_exitcode(code)}\n".encode())
                conn.close()
        if ctl not in ready:
            continue
        msg, fds, _, _ = socket.recv_fds(ctl, 64, 4)
        if not msg:
            return None
        status = socket.socket(fileno=fds[0])
        try:
            request = json.loads(_read_request(status))
        except (OSError, ValueError):  # the test process went away mid-request
            status.close()  # owns fds[0]
            for fd in fds[1:]:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for conn in (ctl, *pending.values()):
                conn.close()
            os.close(wake_r)
            os.close(wake_w)
            return request, status, fds[1:]
        for fd in fds[1:]:
            os.close(fd)
        pending[pid] = status


def _read_request(status: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        got = b""
        while len(got) < n:
            chunk = status.recv(n - len(got))
            if not chunk:
                raise OSError("the request was cut")
            got += chunk
        return got

    return exactly(int.from_bytes(exactly(8), "big"))


def _child(request: dict[str, Any], status: socket.socket, stdio: list[int]) -> None:
    """Become `python -m tether.cli ARGS` with the request's streams, environment and folder;
    `pid N` and a pidfd go on the status socket once the child is set up (as `Popen` returns
    once the child has exec'd), `errno message` instead if it cannot be."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a fresh interpreter has it
    try:
        if request["new_session"]:
            os.setsid()
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
    except OSError as exc:
        status.sendall(f"{exc.errno or 0} {exc.strerror or exc}\n".encode())
        os._exit(127)
    pidfd = os.pidfd_open(os.getpid())
    socket.send_fds(status, [f"pid {os.getpid()}\n".encode()], [pidfd])
    os.close(pidfd)
    status.close()
    sys.path.insert(0, os.getcwd())  # `python -m`: the working folder first
    sys.argv = ["tether", *request["args"]]
    runpy.run_module("tether.cli", run_name="__main__", alter_sys=True)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # this script's folder (tests/kit, with its own `mcp.py` and `acp.py`) must not shadow
    # the packages of those names for the imports here and in the children
    del sys.path[0]
    ctl = socket.socket(fileno=int(sys.argv[1]))
    _warm()
    ctl.send(b"ready")
    got = _serve(ctl)
    if got is None:
        return
    _child(*got)


if __name__ == "__main__":
    main()
