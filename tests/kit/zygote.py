"""`python -m tether.cli ARGS` as real processes forked from a warmed interpreter.

A `tether jobs` process spends about 2.5 s of CPU importing (DBOS, SQLAlchemy, the OpenAI SDK,
the agent stack) before it does anything; the Jobs tests start about a hundred of them. The
first call in a test process starts one server (`_zygote_server.py`) that imports those modules
once; each command is then a `fork` of it that sets the command's arguments, environment,
working folder and standard streams and runs `tether.cli` as `python -m` would. The child is a
process of its own, as a user's command is: its own pid (signals, `killpg` with a new session),
DBOS state, exit code and interpreter shutdown; only the imports are shared. Use it where a test
needs many processes and the process's start-up is not what it checks (the embedded model,
planted `.pth` files and import-time behaviour need `kit.cli.tether`).

`run(args, env=, cwd=)` is `subprocess.run(..., capture_output=True, text=True)`;
`start(args, env=, cwd=)` returns a `Forked`, the part of `subprocess.Popen` the tests use
(`pid`, `poll`, `wait`, `kill`, `returncode`).

What a forked command has from the server, not from its request: whatever the interpreter
reads as it starts (`PYTHONHASHSEED` and the hash secret, `PYTHONIOENCODING`, `PYTHONUTF8`,
the locale, `PYTHONPATH` beyond `sys.path[0]`), the modules already imported, the first
milliseconds of start-up (a signal there finds `tether`'s handlers installed, where a fresh
interpreter would still be importing), three frames of the server in a crash's traceback, and
its `/proc/<pid>/cmdline` and `environ` (`os.environ` is the request's). A test about any of
these uses `kit.cli.tether`.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from kit import cli

_SERVER = Path(__file__).with_name("_zygote_server.py")
_lock = threading.Lock()
_ctl: socket.socket | None = None
_server: subprocess.Popen[bytes] | None = None


def _control() -> socket.socket:
    """The server's control socket (the server started at the first call, and again if it
    has died)."""
    global _ctl, _server
    if _server is not None and _server.poll() is not None and _ctl is not None:
        _ctl.close()
        _ctl = None
    if _ctl is None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.endswith(("_API_KEY", "_AUTH_TOKEN")) and not k.startswith("PYTEST_")
        }
        env["PYTHONPATH"] = cli.SRC
        _server = subprocess.Popen(
            [sys.executable, str(_SERVER), str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        theirs.close()
        if ours.recv(16) != b"ready":
            raise RuntimeError(f"the zygote server did not start (exit {_server.wait()})")
        _ctl = ours
    return _ctl


@atexit.register
def _stop_server() -> None:
    """Close the control socket (the server exits) and reap the server."""
    global _ctl
    if _ctl is not None:
        _ctl.close()
        _ctl = None
    if _server is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _server.wait(timeout=10)


class Forked:
    """A command forked by the server: `pid`, `returncode` (None while it runs), `poll()`,
    `wait(timeout)` (raises `subprocess.TimeoutExpired`), `kill()`, `send_signal(sig)`.

    Signals go through a pidfd of the child (`signal.pidfd_send_signal`): never to a process
    that took its pid after it ended, and still delivered if the server has died. The exit code
    comes from the server; if the server has died, `wait` and `poll` raise `RuntimeError`
    once the child has ended (`poll` returns None while it runs)."""

    def __init__(self, args: list[str], status: socket.socket) -> None:
        self.args = args
        self._status = status
        self._buf = b""
        self._fds: list[int] = []
        self._lost = False  # the server died before it reported the exit
        self.returncode: int | None = None
        first = self._line(None)
        if first is None:
            status.close()
            raise RuntimeError(f"the zygote server went away while {args} started")
        if not first.startswith("pid "):
            status.close()
            code, _, message = first.partition(" ")
            raise OSError(int(code), message)
        self.pid = int(first.removeprefix("pid "))
        self._pidfd = self._fds[0]  # sent with the pid line

    def _line(self, timeout: float | None) -> str | None:
        """The next line (descriptors sent with it go to `_fds`), or None at EOF (the server
        died)."""
        self._status.settimeout(timeout)
        while b"\n" not in self._buf:
            chunk, fds, _, _ = socket.recv_fds(self._status, 256, 1)
            self._fds += fds
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def wait(self, timeout: float | None = None) -> int:
        if self._lost:
            raise RuntimeError(f"the zygote server died: the exit of {self.args} is unknown")
        if self.returncode is None:
            try:
                line = self._line(timeout)
            except (TimeoutError, BlockingIOError):
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
            if line is None:  # the server died: the child's end is all there is to know
                if not select.select([self._pidfd], [], [], timeout)[0]:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
                self._status.close()
                os.close(self._pidfd)
                self._lost = True
                return self.wait()
            self.returncode = int(line.removeprefix("exit "))
            self._status.close()
            os.close(self._pidfd)
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and not self._lost:
            with contextlib.suppress(ProcessLookupError):  # it has ended
                signal.pidfd_send_signal(self._pidfd, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def start(
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdout: int = subprocess.DEVNULL,
    stderr: int = subprocess.DEVNULL,
    start_new_session: bool = False,
) -> Forked:
    """`python -m tether.cli ARGS` forked from the server, stdin empty; `stdout` / `stderr` a
    file descriptor, or `subprocess.DEVNULL` (the default: discarded).

    Raises:
        OSError: the child cannot be set up (`FileNotFoundError` for a missing `cwd`), as
            `Popen` raises it.
    """
    ours, theirs = socket.socketpair()
    devnull = os.open(os.devnull, os.O_RDWR)
    fds = [
        theirs.fileno(),
        devnull,
        devnull if stdout == subprocess.DEVNULL else stdout,
        devnull if stderr == subprocess.DEVNULL else stderr,
    ]
    request = json.dumps(
        {
            "args": args,
            "env": env,
            "cwd": os.path.abspath(cwd),
            "new_session": start_new_session,
        }
    ).encode()
    try:
        with _lock:
            socket.send_fds(_control(), [b"go"], fds)
        ours.sendall(len(request).to_bytes(8, "big") + request)
    finally:
        theirs.close()
        os.close(devnull)
    try:
        return Forked(args, ours)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            exc.filename = os.path.abspath(cwd)
        raise


def run(
    args: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([python, -m, tether.cli, *args], capture_output=True, text=True,
    timeout=timeout)` with the command forked from the server (killed at the timeout)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = start(args, env=env, cwd=cwd, stdout=out_w, stderr=err_w)
    finally:
        os.close(out_w)
        os.close(err_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}

    def drain(fd: int) -> None:
        with open(fd, "rb", buffering=0) as f:
            while data := f.read(1 << 16):
                chunks[fd].append(data)

    readers = [threading.Thread(target=drain, args=(fd,), daemon=True) for fd in (out_r, err_r)]
    for r in readers:
        r.start()
    deadline = time.monotonic() + timeout
    try:
        code = proc.wait(timeout)
        for r in readers:
            r.join(max(0.0, deadline - time.monotonic()))
        if any(r.is_alive() for r in readers):  # a grandchild holds the pipes open
            raise subprocess.TimeoutExpired(args, timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise

    def text(fd: int) -> str:
        raw = b"".join(chunks[fd]).decode("utf-8", "replace")
        return raw.replace("\r\n", "\n").replace("\r", "\n")

    return subprocess.CompletedProcess(args, code, text(out_r), text(err_r))
