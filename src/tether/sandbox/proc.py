"""Process primitives for tool subprocesses, hooks and tool workers: process groups and
bounded output capture.

Owns: `spawn_group` (a process group of its own whose start a cancel cannot cut in half),
`kill_group`, `spawn_confined` (a process group inside a context's OS sandbox, under its
resource limits) and its `CallGuard` (`swept_note`), `HeadTail` (the first and last bytes of a stream, the rest counted), `pump`,
`output_cut_note` and `EXIT_GRACE_S`.
Does not own: what a command may touch (`tether.sandbox.policy`), the sandboxes
(`tether.sandbox.base`), reaping inside a sandbox (`tether.sandbox.landlock`'s reaper).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tether.sandbox.base import Launch, Sandbox
from tether.sandbox.config import confinement
from tether.sandbox.limits import LimitGuard, ResourceLimits
from tether.sandbox.policy import PathPolicy
from tether.sandbox.reaper import die_with_parent

if TYPE_CHECKING:
    from tether.sandbox.tree import TrustRoots

HEAD_BYTES = 4_000_000
TAIL_BYTES = 4_000_000
"""Output kept from the start and the end of a command (bytes). Generous on purpose: the tool
output gate (`tether.tools.exec.persist`) saves a long result whole to the session's `tool-results/`
folder and puts a stub on the wire, so only output past 8 MB is cut here, and then, with a
session, the whole output is streamed to a spill file the gate saves (`HeadTail(spill=...)`)."""
EXIT_GRACE_S = 1.0
"""How long output may keep flowing after the shell exits before the leftovers are killed (s)."""


class HeadTail:
    """Keeps the first `head` and last `tail` bytes of a stream and counts the rest; with
    `spill`, a stream that outgrows them is also written whole to that file.

    Args:
        head: bytes kept from the start.
        tail: bytes kept from the end.
        spill: a file to create (mode 0o600, its folder must exist) once the stream passes
            `head + tail` bytes, holding every byte of it from the first (`spilled`); None:
            the middle is only counted. A write failure stops the spill (the file is removed)
            and never the stream.
    """

    __slots__ = ("_fd", "_head", "_head_max", "_spill", "_tail", "_tail_max", "total")

    def __init__(
        self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES, spill: Path | None = None
    ) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self._head_max = head
        self._tail_max = tail
        self._spill = spill
        self._fd: int | None = None
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Append a chunk."""
        self.total += len(data)
        if self._fd is not None:
            self._write(data)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            over = self.total > self._head_max + self._tail_max  # (nothing dropped yet)
            if over and self._spill is not None and self._fd is None:
                self._start_spill()
            if len(self._tail) > 2 * self._tail_max:
                del self._tail[: -self._tail_max]

    def _start_spill(self) -> None:
        assert self._spill is not None
        try:
            self._fd = os.open(self._spill, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            self._spill = None
            return
        self._write(bytes(self._head))
        self._write(bytes(self._tail))

    def _write(self, data: bytes) -> None:
        fd = self._fd
        assert fd is not None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            self.discard()

    def spilled(self) -> Path | None:
        """The spill file holding the whole stream when the stream outgrew head + tail (closed
        now; the caller owns it), else None."""
        if self._fd is None:
            return None
        os.close(self._fd)
        self._fd = None
        return self._spill

    def discard(self) -> None:
        """Close and remove the spill file, if any (nothing is spilled afterwards)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self._spill is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._spill)
        self._spill = None

    def text(self) -> str:
        """The kept output as text: UTF-8 with undecodable bytes kept as `surrogateescape`
        characters (so the output gate can save the exact bytes, e.g. binary output to a `.bin`
        file), and `output_cut_note` where bytes were cut."""
        tail = bytes(self._tail[-self._tail_max :]) if self._tail_max else b""
        cut = self.total - len(self._head) - len(tail)
        head_s = self._head.decode("utf-8", errors="surrogateescape")
        tail_s = tail.decode("utf-8", errors="surrogateescape")
        if cut <= 0:
            return head_s + tail_s
        return f"{head_s}{output_cut_note(cut, self.total)}{tail_s}"


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` (no error if it is gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


START_REAP_S = 5.0
"""After a cancel lands while a process is being started: how long to wait for its handle
before giving up (seconds); the start itself takes milliseconds."""


async def spawn_group(
    *argv: str, tied: bool = False, **kwargs: Any
) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs)` that a cancel
    cannot cut in half; `tied`: the process dies with tether (`die_with_parent`, set in the
    forked child before the exec, ahead of any `preexec_fn`: the sandbox launcher and bwrap set
    it too, but only once started, and a tether killed before that left them running).

    A plain `create_subprocess_exec` cancelled while the process is starting (the fork has
    happened, the handle does not exist yet) kills only the process it started, and leaves
    what that one already spawned (the inner `bwrap` of a sandbox, PID 1 of its namespace)
    holding the output pipe. Here the start is shielded: on a cancel, the handle is awaited
    (at most `START_REAP_S`), the whole process group is SIGKILLed and reaped, then the
    cancel propagates.

    Raises:
        asyncio.CancelledError: after the group was killed.
        OSError, subprocess.SubprocessError: the process could not be started.
    """
    if tied:
        harness, then = os.getpid(), kwargs.pop("preexec_fn", None)

        def preexec() -> None:
            die_with_parent(harness)
            if then is not None:
                then()

        kwargs["preexec_fn"] = preexec
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs)
    )
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        await _kill_started(starting)
        raise


async def _kill_started(starting: asyncio.Future[asyncio.subprocess.Process]) -> None:
    """Wait for a cancelled start to finish (further cancels are absorbed, bounded), then kill
    and reap the process group it created."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_REAP_S
    while not starting.done() and loop.time() < deadline:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({starting}, timeout=deadline - loop.time())
    if not starting.done():
        starting.cancel()
        return
    if starting.cancelled() or starting.exception() is not None:
        return
    proc = starting.result()
    kill_group(proc.pid)
    deadline = loop.time() + EXIT_GRACE_S
    waiter = asyncio.ensure_future(proc.wait())
    while not waiter.done() and loop.time() < deadline:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({waiter}, timeout=deadline - loop.time())
    if not waiter.done():
        waiter.cancel()


def output_cut_note(cut_bytes: int, total_bytes: int) -> str:
    """The note a tool puts where it cut its output's middle (own line, newlines included):
    `… [C bytes of output cut; T bytes in all] …`. `tether.tools.exec.normalize.find_output_cut`
    finds it again."""
    return f"\n… [{cut_bytes} bytes of output cut; {total_bytes} bytes in all] …\n"


async def pump(stream: asyncio.StreamReader, sink: HeadTail | bytearray) -> None:
    """Read `stream` to EOF into `sink` (a `HeadTail`, or a bytearray kept whole)."""
    while chunk := await stream.read(65536):
        if isinstance(sink, bytearray):
            sink += chunk
        else:
            sink.feed(chunk)


class Spawnable(Protocol):
    """What `spawn_confined` reads of a tool context (`tether.tools.context.ToolContext`)."""

    @property
    def root(self) -> Path: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def policy(self) -> PathPolicy | None: ...
    @property
    def network(self) -> bool: ...
    @property
    def wrap(self) -> Callable[[list[str]], list[str]] | None: ...
    @property
    def sandbox(self) -> Sandbox | None: ...
    @property
    def limits(self) -> ResourceLimits | None: ...


class CallGuard:
    """What a confined call leaves to do once its processes have ended: `finish()` its limits
    (`LimitGuard.finish`), then `sweep()` its trust roots (`tether.sandbox.tree.TrustRoots`).

    Args:
        limits: the call's limits.
        roots: the trust roots before the call, or None (no sandbox, or the user opted in).
    """

    def __init__(self, limits: LimitGuard, roots: TrustRoots | None) -> None:
        self.limits = limits
        self.roots = roots
        self.preexec = limits.preexec

    def finish(self) -> bool:
        """`LimitGuard.finish`: whether the process limit was hit."""
        return self.limits.finish()

    def sweep(self) -> tuple[str, ...]:
        """Move aside the `.git`, `.tether` and tool folders the call created (blocking: a
        cached walk of the working folder; run it in a thread). Returns their root-relative
        paths."""
        return () if self.roots is None else self.roots.sweep()


def swept_note(moved: Sequence[str]) -> str:
    """The note a tool appends when `CallGuard.sweep` moved something aside."""
    names = ", ".join(moved)
    return (
        f"(moved aside what the command created where commands may not write: {names} → "
        "<name>.refused-by-tether; every .git, .tether and the tool folders are read-only to "
        "commands)"
    )


async def spawn_confined(
    argv: list[str], ctx: Spawnable, *, stdin: int, stderr: int
) -> tuple[asyncio.subprocess.Process, CallGuard]:
    """Start `argv` as a process group of its own in `ctx.root` with `ctx.env`, inside
    `ctx.sandbox` when set (`tether.sandbox.config.confinement`, whose walk of the working
    folder runs in a thread), under the tools' limits (`ctx.limits`), stdout piped. The caller
    calls the guard's `finish()` once the process ended, then `sweep()`.

    Raises:
        OSError / subprocess.SubprocessError: it could not start (the guard is finished).
        asyncio.CancelledError: while starting (whatever started is killed).
    """
    launch = Launch(argv=argv)
    roots = None
    if ctx.sandbox is not None:
        cfg, roots = await asyncio.to_thread(confinement, ctx)
        launch = ctx.sandbox.launch(launch.argv, cfg)
    guard = CallGuard((ctx.limits or ResourceLimits()).start(), roots)
    confine = launch.preexec

    def preexec() -> None:
        guard.preexec()
        if confine is not None:
            confine()

    try:
        proc = await spawn_group(
            *launch.argv,
            cwd=ctx.root,
            env={**ctx.env, **launch.env},
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            preexec_fn=preexec,
            tied=ctx.sandbox is not None,
        )
    except BaseException:
        guard.finish()
        raise
    finally:
        launch.close()
    return proc, guard
