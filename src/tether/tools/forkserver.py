"""The tool worker's fork server: one pre-started, sandboxed interpreter that forks a worker per
call, so a folder-tool call costs a fork instead of an interpreter start and its imports.

Owns: both ends of the fork-server protocol — `spawn_worker` (the harness side: start or reuse
a server, hand it one call's pipes, learn the worker's pid and exit status, kill it) and
`serve` (`python -m tether.tools.forkserver FD`: the server side).
Does not own: the worker protocol spoken over the call's pipes (`tether.tools.worker`).

Sandbox: a server is started exactly as a worker is (`ToolContext.wrap_argv` with the tool's
folder readable, the context's scrubbed environment, the working folder as cwd, a session of
its own), so each forked worker runs in the same sandbox, with the same visibility and
environment, as a freshly started worker; it still imports the tool file afresh per call. One
server serves one such start (argv, cwd, environment). Calls under a custom `ToolContext.wrap`
hook do not use a server: the hook may do anything per call, so they start a fresh worker.

Protocol (an AF_UNIX SOCK_SEQPACKET control socket; one message per call):
    server → harness, once: b"ready" (its imports are done).
    harness → server: b"call" with 4 fds: the call socket, the worker's stdin, stdout, stderr.
    server → harness on the call socket: b"pid N" once the worker is forked, then b"exit C"
        when it has been reaped (C as `os.waitstatus_to_exitcode`: < 0 for a signal).
    harness → server on the call socket: b"kill" SIGKILLs the worker's process group (the
        worker is a session leader); closing the call socket does too.
The server exits when the control socket closes (the harness process ended) and its workers
are reaped; under bwrap, `--die-with-parent` also ends it on a kill -9 of the harness.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.tools.base import ToolContext

START_TIMEOUT_S = 15.0
"""How long a server may take to come up before the call starts a fresh worker instead (s)."""
MAX_SERVERS = 8
"""Servers kept at most (least recently used closed first): one per tool folder and context."""
enabled = False
"""Whether folder-tool calls use fork servers. Off by default: a forked worker shares its
server's sandbox (and PID namespace) across calls, so a process it detaches with `setsid`
outlives the call, and the per-call resource limits (`tether.tools.limits`) do not apply to it;
a fresh worker per call keeps both guarantees (issue 11, kind 4). Benchmarks and tests switch
it on; a per-call reaper inside the server would let it be on by default."""


def server_argv(fd: int) -> list[str]:
    """The argv that starts a server on control socket `fd` (before `ToolContext.wrap_argv`).
    `-P` as for a worker: the working folder is not put on `sys.path`."""
    return [sys.executable, "-P", "-m", "tether.tools.forkserver", str(fd)]


# --- the harness side ------------------------------------------------------------------------


@dataclass
class _Server:
    proc: subprocess.Popen[bytes]
    control: socket.socket

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.control.close()  # the server reaps its workers, then exits
        _closing.append(self)


_servers: dict[tuple[object, ...], _Server] = {}
_closing: list[_Server] = []  # closed servers not yet seen to exit (reaped as they do)


def _reap_closed() -> None:
    _closing[:] = [s for s in _closing if s.proc.poll() is None]


def servers() -> int:
    """How many servers are open (for tests and diagnostics)."""
    return len(_servers)


def _start(ctx: ToolContext, readable: Sequence[Path], env: Mapping[str, str]) -> _Server | None:
    """Start a server and wait for its b"ready"; None when it cannot start or answer."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        argv = ctx.wrap_argv(server_argv(theirs.fileno()), readable=readable)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ctx.root,
            env=dict(env),
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
    except OSError:
        mine.close()
        return None
    finally:
        theirs.close()
    mine.settimeout(START_TIMEOUT_S)
    try:
        ready = mine.recv(16)
    except OSError:
        ready = b""
    if ready != b"ready":
        mine.close()
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
        return None
    mine.settimeout(None)
    return _Server(proc=proc, control=mine)


@dataclass
class ForkedWorker:
    """One forked worker as the harness sees it (the part of `asyncio.subprocess.Process` that
    `tether.tools.worker.run_in_worker` uses).

    Attributes:
        pid: the worker's pid as the server sees it (inside the sandbox's pid namespace, if
            it has one): use `kill`, not `os.killpg`.
        stdin: the worker's stdin.
        stdout, stderr: its output pipes.
        returncode: None while it runs, else its exit code (< 0: killed by that signal);
            stays None if the server died.
    """

    pid: int
    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    call: socket.socket
    returncode: int | None = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)

    def kill(self) -> None:
        """SIGKILL the worker's process group (the server owns the process)."""
        with contextlib.suppress(OSError):
            self.call.send(b"kill")

    async def wait(self) -> int | None:
        """Wait until the server reaped the worker; its exit code."""
        await self.exited.wait()
        return self.returncode

    async def watch(self) -> None:
        """Read the call socket until the exit message (or the server is gone)."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                msg = await loop.sock_recv(self.call, 64)
                if not msg:
                    break
                if msg.startswith(b"exit "):
                    self.returncode = int(msg[5:])
                    break
        except (OSError, ValueError):
            pass
        finally:
            self.exited.set()


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


async def spawn_worker(
    ctx: ToolContext, readable: Sequence[Path], env: Mapping[str, str]
) -> tuple[ForkedWorker, asyncio.Task[None]] | None:
    """Fork a worker from the server for this start (starting the server first if needed).

    Args:
        ctx: the call's context (root = cwd; its sandbox wraps the server).
        readable: folders the sandbox keeps visible read-only (the tool's folder).
        env: the worker's environment.

    Returns:
        The worker and the task watching its exit, or None when no server could be used (the
        caller starts a fresh worker, which reports any start-up failure).
    """
    if not enabled or ctx.wrap is not None:
        return None
    _reap_closed()
    argv = ctx.wrap_argv(server_argv(-1), readable=readable)
    key = (tuple(argv), str(ctx.root), *sorted(env.items()))
    server = _servers.pop(key, None)
    if server is not None:
        _servers[key] = server  # most recently used last
    if server is None or not server.alive():
        server = await asyncio.to_thread(_start, ctx, readable, env)
        if server is None:
            return None
        old = _servers.pop(key, None)
        _servers[key] = server
        if old is not None:
            old.close()
        while len(_servers) > MAX_SERVERS:
            _servers.pop(next(iter(_servers))).close()
    call, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        socket.send_fds(server.control, [b"call"], [theirs.fileno(), in_r, out_w, err_w])
    except OSError:
        call.close()
        _close_fds(in_w, out_r, err_r)
        _servers.pop(key, None)
        server.close()
        return None
    finally:
        theirs.close()
        _close_fds(in_r, out_w, err_w)
    loop = asyncio.get_running_loop()
    call.setblocking(False)
    try:
        async with asyncio.timeout(START_TIMEOUT_S):
            msg = await loop.sock_recv(call, 64)
        pid = int(msg[4:]) if msg.startswith(b"pid ") else 0
    except (TimeoutError, OSError, ValueError):
        pid = 0
    except BaseException:  # cancelled: closing the call socket makes the server kill it
        call.close()
        _close_fds(in_w, out_r, err_r)
        raise
    if pid <= 0:
        call.close()
        _close_fds(in_w, out_r, err_r)
        return None
    stdout, stderr = asyncio.StreamReader(), asyncio.StreamReader()
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(out_r, "rb", 0)
    )
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stderr), os.fdopen(err_r, "rb", 0)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(in_w, "wb", 0)
    )
    stdin = asyncio.StreamWriter(transport, protocol, None, loop)
    worker = ForkedWorker(pid=pid, stdin=stdin, stdout=stdout, stderr=stderr, call=call)
    return worker, asyncio.create_task(worker.watch())


def shutdown() -> None:
    """Close every server (each exits once its workers are reaped)."""
    while _servers:
        _, server = _servers.popitem()
        server.close()


atexit.register(shutdown)


# --- the server side -------------------------------------------------------------------------


def _child(
    fds: tuple[int, int, int], keep_closed: list[socket.socket], sel: selectors.BaseSelector
) -> None:
    """In the forked worker: a session of its own, the call's pipes as fds 0-2, then the
    worker's `main` (which ends with `os._exit`)."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        sel.close()
        for s in keep_closed:
            s.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        from tether.tools.worker import main

        main()
    finally:
        os._exit(70)


def serve(fd: int) -> None:
    """Server entry point: import what a worker needs, say b"ready", fork a worker per call
    (see the module docstring), reap them; exit when the control socket closes."""
    import importlib

    for name in ("tether.tools.worker", "tether.tools.scan"):  # imported once, inherited
        importlib.import_module(name)
    control = socket.socket(fileno=fd)
    control.send(b"ready")
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ, 0)
    # SIGCHLD wakes the loop at once (a worker's exit is reported without a polling delay)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)
    signal.set_wakeup_fd(wake_w)
    sel.register(wake_r, selectors.EVENT_READ, -1)
    calls: dict[int, socket.socket] = {}  # open call sockets by worker pid
    running: set[int] = set()  # workers not reaped yet
    accepting = True
    while accepting or calls or running:
        for key, _ in sel.select(timeout=0.5):
            if key.data == -1:
                with contextlib.suppress(OSError):
                    os.read(wake_r, 4096)
                continue
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock is control:
                try:
                    msg, fds, _, _ = socket.recv_fds(control, 16, 4)
                except OSError:
                    msg, fds = b"", []
                if not msg:
                    accepting = False
                    sel.unregister(control)
                    _close_fds(*fds)
                    continue
                if msg != b"call" or len(fds) != 4:
                    _close_fds(*fds)
                    continue
                call_fd, in_fd, out_fd, err_fd = fds
                call = socket.socket(fileno=call_fd)
                pid = os.fork()
                if pid == 0:
                    _close_fds(wake_r, wake_w)
                    _child((in_fd, out_fd, err_fd), [control, call, *calls.values()], sel)
                _close_fds(in_fd, out_fd, err_fd)
                calls[pid] = call
                running.add(pid)
                sel.register(call, selectors.EVENT_READ, pid)
                with contextlib.suppress(OSError):
                    call.send(b"pid %d" % pid)
            else:
                pid = int(key.data)
                try:
                    msg = sock.recv(16)
                except OSError:
                    msg = b""
                # b"kill": the worker's group, leftovers included (as `kill_group` would);
                # a call socket closed while the worker runs: the harness gave up on it.
                if msg == b"kill" or (not msg and pid in running):
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                if not msg:
                    sel.unregister(sock)
                    sock.close()
                    calls.pop(pid, None)
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                running.clear()
                break
            if pid == 0:
                break
            running.discard(pid)
            call = calls.get(pid)
            if call is not None:
                with contextlib.suppress(OSError):
                    call.send(b"exit %d" % os.waitstatus_to_exitcode(status))
    os._exit(0)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
