"""The tool worker's fork server: one pre-started, sandboxed interpreter that forks a worker per
call, so a folder-tool call costs a fork instead of an interpreter start and its imports.

Owns: both ends of the fork-server protocol — `spawn_worker` (the harness side: start or reuse
a server, hand it one call's pipes, learn the worker's pid and exit status, kill it) and
`serve` (`python -m tether.tools.exec.forkserver FD`: the server side, which forks the worker
entry point `WORKER_ENTRY` it is given as data).
Does not own: the worker protocol spoken over the call's pipes (`tether.tools.exec.worker`).

Sandbox: a server is started exactly as a worker is (`tether.sandbox.config.wrap_argv` with the
tool's folder readable, the context's scrubbed environment, the working folder as cwd, a session
of its own), so each forked worker runs in the same sandbox, with the same visibility and
environment, as a freshly started worker; it still imports the tool file afresh per call. One
server serves one such start (argv, cwd, environment). Calls under a custom `ToolContext.wrap`
hook do not use a server: the hook may do anything per call, so they start a fresh worker.

Per call the server forks a *keeper*, and the keeper forks the worker. The keeper is a session
leader and a child subreaper (`PR_SET_CHILD_SUBREAPER`): when the worker exits, or when the
server sends the keeper SIGTERM (the harness's b"kill", or its call socket closing), the keeper
SIGKILLs every descendant left (nohup, `setsid` daemons, double forks: all re-parented to it),
with the reaper the Landlock launcher uses (`tether.sandbox.reaper.wait_reaped`), then exits
with the worker's status. Before forking the worker it tells the harness its pid through a
handshake socket with `SCM_CREDENTIALS` (the kernel translates the pid into the harness's PID
namespace), so the harness puts it in the call's pids cgroup (`LimitGuard.enter`); the worker
gets the call's RLIMITs. So a forked worker keeps both guarantees of a fresh one: nothing it
starts outlives the call, and the limits are per call.

Protocol (an AF_UNIX SOCK_SEQPACKET control socket; one message per call):
    server → harness, once: b"ready" (its imports are done).
    harness → server: b"call NPROC FSIZE" (RLIMITs for the worker, -1: not set) with 5 fds:
        the call socket, the worker's stdin, stdout, stderr, and the handshake socket.
    keeper → harness on the handshake socket: b"keeper" (with its credentials); harness →
        keeper: b"go" once it is in the call's cgroup (anything else: the keeper exits).
    server → harness on the call socket: b"pid N" (the keeper) once it is forked, then
        b"exit C" when it has been reaped (C as `os.waitstatus_to_exitcode`: < 0 for a signal).
    harness → server on the call socket: b"kill" SIGTERMs the keeper (which kills the worker
        and everything it started); closing the call socket does too.
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
import struct
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tether.sandbox.config import wrap_argv
from tether.tools.context import ToolContext

if TYPE_CHECKING:
    from tether.sandbox.limits import LimitGuard

START_TIMEOUT_S = 15.0
"""How long a server may take to come up before the call starts a fresh worker instead (s)."""
MAX_SERVERS = 8
"""Servers kept at most (least recently used closed first): one per tool folder and context."""
WORKER_ENTRY = "tether.tools.exec.worker:main"
"""The function a forked worker runs (`module:function`; it ends with `os._exit`)."""
enabled = True
"""Whether folder-tool calls use fork servers (the per-call keeper reaps what a worker leaves
and the call's limits apply: see the module docstring)."""


def server_argv(fd: int) -> list[str]:
    """The argv that starts a server on control socket `fd` (before `wrap_argv`).
    `-P` as for a worker: the working folder is not put on `sys.path`."""
    return [sys.executable, "-P", "-m", "tether.tools.exec.forkserver", str(fd)]


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
        argv = wrap_argv(ctx, server_argv(theirs.fileno()), readable=readable)
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
    `tether.tools.exec.worker.run_in_worker` uses).

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
        """Stop the call: the server SIGTERMs its keeper, which SIGKILLs the worker and every
        process it started."""
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


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _recv_pid(sock: socket.socket) -> tuple[bytes, int]:
    """One message from non-blocking `sock` (SO_PASSCRED set) and its sender's pid in this
    process's PID namespace (0 when the kernel attached none)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            msg, anc, _, _ = sock.recvmsg(64, socket.CMSG_SPACE(12))
            break
        except BlockingIOError:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(sock.fileno(), _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(sock.fileno())
    pid = 0
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= 12:
            pid = struct.unpack("iII", data[:12])[0]
    return msg, pid


async def _handshake(hand: socket.socket, guard: LimitGuard | None) -> bool:
    """The keeper's handshake: learn its pid, put it in the call's cgroup, say b"go"."""
    msg, pid = await _recv_pid(hand)
    if msg != b"keeper" or pid <= 0:
        return False
    if guard is not None:
        try:
            guard.enter(pid)
        except OSError:
            return False
    hand.send(b"go")
    return True


async def spawn_worker(
    ctx: ToolContext,
    readable: Sequence[Path],
    env: Mapping[str, str],
    guard: LimitGuard | None = None,
) -> tuple[ForkedWorker, asyncio.Task[None]] | None:
    """Fork a worker from the server for this start (starting the server first if needed).

    Args:
        ctx: the call's context (root = cwd; its sandbox wraps the server).
        readable: folders the sandbox keeps visible read-only (the tool's folder).
        env: the worker's environment.
        guard: the call's limits: its cgroup gets the call's keeper, its RLIMITs the worker.

    Returns:
        The worker and the task watching its exit, or None when no server could be used (the
        caller starts a fresh worker, which reports any start-up failure).
    """
    if not enabled or ctx.wrap is not None:
        return None
    _reap_closed()
    argv = wrap_argv(ctx, server_argv(-1), readable=readable)
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
    hand, keeper_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    hand.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    nproc = -1 if guard is None or guard.nproc is None else guard.nproc
    fsize = -1 if guard is None or guard.fsize is None else guard.fsize
    try:
        socket.send_fds(
            server.control,
            [b"call %d %d" % (nproc, fsize)],
            [theirs.fileno(), in_r, out_w, err_w, keeper_end.fileno()],
        )
    except OSError:
        call.close()
        hand.close()
        _close_fds(in_w, out_r, err_r)
        _servers.pop(key, None)
        server.close()
        return None
    finally:
        theirs.close()
        keeper_end.close()
        _close_fds(in_r, out_w, err_w)
    loop = asyncio.get_running_loop()
    call.setblocking(False)
    hand.setblocking(False)
    try:
        async with asyncio.timeout(START_TIMEOUT_S):
            msg = await loop.sock_recv(call, 64)
            pid = int(msg[4:]) if msg.startswith(b"pid ") else 0
            if pid > 0 and not await _handshake(hand, guard):
                pid = 0
    except (TimeoutError, OSError, ValueError):
        pid = 0
    except BaseException:  # cancelled: closing the call socket makes the server kill it
        call.close()
        hand.close()
        _close_fds(in_w, out_r, err_r)
        raise
    hand.close()
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


def serve(fd: int, entry: str = WORKER_ENTRY) -> None:
    """Server entry point: import what a worker needs (`entry`, `module:function`, is the
    worker's), say b"ready", fork a worker per call (see the module docstring), reap them;
    exit when the control socket closes."""
    import importlib

    module, _, func = entry.partition(":")
    for name in (module, "tether.tools.scan", "tether.sandbox.landlock"):
        importlib.import_module(name)  # imported once, inherited
    worker_main: Callable[[], None] = getattr(importlib.import_module(module), func)
    from tether.tools.exec.forkkeeper import keep

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
                    msg, fds, _, _ = socket.recv_fds(control, 64, 5)
                except OSError:
                    msg, fds = b"", []
                if not msg:
                    accepting = False
                    sel.unregister(control)
                    _close_fds(*fds)
                    continue
                parts = msg.split()
                if len(parts) != 3 or parts[0] != b"call" or len(fds) != 5:
                    _close_fds(*fds)
                    continue
                try:
                    limits = (int(parts[1]), int(parts[2]))
                except ValueError:
                    _close_fds(*fds)
                    continue
                call_fd, in_fd, out_fd, err_fd, hand_fd = fds
                call = socket.socket(fileno=call_fd)
                hand = socket.socket(fileno=hand_fd)
                pid = os.fork()
                if pid == 0:
                    _close_fds(wake_r, wake_w)
                    keep(
                        (in_fd, out_fd, err_fd),
                        hand,
                        limits,
                        [control, call, *calls.values()],
                        sel,
                        worker_main,
                    )
                hand.close()
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
                # b"kill", or a call socket closed while the keeper runs (the harness gave
                # up on it): the keeper kills the worker and everything it started
                if pid in running and (msg == b"kill" or not msg):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGTERM)
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
