"""The built-in `bash` tool: one `bash -c` command in the working folder.

Owns: running the command as an asyncio subprocess in its own session (process group), with the
context's scrubbed environment and stdin from /dev/null; capturing stdout+stderr merged, in order;
capping the output (head and tail kept, the cut counted); and killing the whole process group on
timeout or cancellation.
Does not own: path policy. A shell command is not path-checked: the deny list of the file tools is
advisory for `bash` (T31); the environment is scrubbed of secrets (`tether.tools.env`). When the
context has a `sandbox`, the command runs inside it (`tether.tools.sandbox`: writes confined to
the working folder and a private temp folder, `.git` read-only, network per `ctx.network`); the
process group kill covers the sandbox launcher (bwrap) and everything under it.

Inside an OS sandbox every process the command started ends with the call (a PID namespace
under bwrap; the Landlock launcher reaps every descendant, issue 11). A cancel that lands while
the process is starting still kills its whole group (`spawn_group`). Unsandboxed, processes the
command leaves running are left alone if they let go of the output pipe (e.g.
`server > log 2>&1 &`); those still holding it 1 s after the shell exits are killed.
Resource limits (`tether.tools.limits`) apply to every command; hitting one is an is_error
result naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Annotated, Any

from pydantic import Field

from tether.tools.base import ToolContext, ToolOutput, tool
from tether.tools.limits import FSIZE_EXIT, LimitGuard, ResourceLimits, limit_note, nproc_hit_in
from tether.tools.normalize import output_cut_note
from tether.tools.sandbox import Launch

MAX_TIMEOUT_S = 600.0
DEFAULT_TIMEOUT_S = 120.0
HEAD_BYTES = 4_000_000
TAIL_BYTES = 4_000_000
"""Output kept from the start and the end of a command (bytes). Generous on purpose: the tool
output gate (`tether.tools.persist`) saves a long result whole to the session's `tool-results/`
folder and puts a stub on the wire, so only output past 8 MB is cut here."""
EXIT_GRACE_S = 1.0
"""How long output may keep flowing after the shell exits before the leftovers are killed (s)."""


class HeadTail:
    """Keeps the first `head` and last `tail` bytes of a stream and counts the rest.

    Args:
        head: bytes kept from the start.
        tail: bytes kept from the end.
    """

    __slots__ = ("_head", "_head_max", "_tail", "_tail_max", "total")

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self._head_max = head
        self._tail_max = tail
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Append a chunk."""
        self.total += len(data)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._tail_max:
                del self._tail[: -self._tail_max]

    def text(self) -> str:
        """The kept output as text: UTF-8 with undecodable bytes kept as `surrogateescape`
        characters (so the output gate can save the exact bytes, e.g. binary output to a `.bin`
        file), and `tether.tools.normalize.output_cut_note` where bytes were cut."""
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


async def spawn_group(*argv: str, **kwargs: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs)` that a cancel
    cannot cut in half.

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


async def _pump(stream: asyncio.StreamReader, sink: HeadTail) -> None:
    while chunk := await stream.read(65536):
        sink.feed(chunk)


async def _drain(proc: asyncio.subprocess.Process, pump: asyncio.Task[None]) -> bool:
    """Wait for the output to end. If the shell exits while something still holds the pipe,
    wait `EXIT_GRACE_S` more, then kill the group. Returns True when it had to kill.

    (`Process.wait()` would wait for the pipes too, so the exit is polled every 50 ms.)
    """
    while True:
        done, _ = await asyncio.wait({pump}, timeout=0.05)
        if done:
            return False
        if proc.returncode is not None:
            done, _ = await asyncio.wait({pump}, timeout=EXIT_GRACE_S)
            if done:
                return False
            kill_group(proc.pid)
            await asyncio.wait({pump}, timeout=EXIT_GRACE_S)
            return True


async def spawn_confined(
    argv: list[str], ctx: ToolContext, *, stdin: int, stderr: int
) -> tuple[asyncio.subprocess.Process, LimitGuard]:
    """Start `argv` as a process group of its own in `ctx.root` with `ctx.env`, inside
    `ctx.sandbox` when set, under the tools' limits (`ctx.limits`), stdout piped. The caller
    calls the guard's `finish()` once the process ended.

    Raises:
        OSError / subprocess.SubprocessError: it could not start (the guard is finished).
        asyncio.CancelledError: while starting (whatever started is killed).
    """
    launch = Launch(argv=argv)
    if ctx.sandbox is not None:
        launch = ctx.sandbox.launch(launch.argv, ctx.sandbox_config())
    guard = (ctx.limits or ResourceLimits()).start()
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
        )
    except BaseException:
        guard.finish()
        raise
    finally:
        launch.close()
    return proc, guard


async def run_command(
    command: str, ctx: ToolContext, timeout_s: float = DEFAULT_TIMEOUT_S
) -> ToolOutput:
    """Run `bash -c command` in `ctx.root` with `ctx.env`, inside `ctx.sandbox` when set; see
    the module docstring.

    Returns:
        The output (capped) with a note of the exit code when it is not 0, or
        `(no output, exit code N)`; is_error only when the command timed out.

    Raises:
        asyncio.CancelledError: after killing the process group.
        OSError: bash could not be started.
        subprocess.SubprocessError: the sandbox confinement failed in the child (nothing ran).
    """
    limits = ctx.limits or ResourceLimits()
    proc, guard = await spawn_confined(
        ["bash", "-c", command],
        ctx,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    sink = HeadTail()
    pump = asyncio.create_task(_pump(proc.stdout, sink))
    timed_out = leftovers_killed = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                leftovers_killed = await _drain(proc, pump)
                await proc.wait()
        except TimeoutError:
            timed_out = True
            kill_group(proc.pid)
            # after the kill, EOF follows unless a detached (setsid) child holds the pipe
            await asyncio.wait({pump}, timeout=EXIT_GRACE_S)
            await proc.wait()
    finally:
        if proc.returncode is None or timed_out or leftovers_killed:
            kill_group(proc.pid)
        nproc_hit = guard.finish()
        if proc.returncode is None:
            # Cancelled: reap the killed shell so its transport closes with the loop still open.
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(proc.wait(), timeout=EXIT_GRACE_S)
        if not pump.done():
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
    text = sink.text().rstrip("\n")
    code = proc.returncode
    if timed_out:
        note = f"(timed out after {timeout_s:g} s; the command and its process group were killed)"
        return ToolOutput(f"{text}\n{note}" if text.strip() else note, is_error=True)
    status = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    if not text.strip():
        text = f"(no output, {status})"
    elif code != 0:
        text += f"\n({status})"
    nproc_hit = nproc_hit or nproc_hit_in(text)
    fsize_hit = code in (FSIZE_EXIT, -signal.SIGXFSZ) or "File size limit exceeded" in text or "File too large" in text
    if nproc_hit or fsize_hit:
        note = limit_note(limits, nproc=nproc_hit, fsize=fsize_hit)
        return ToolOutput(f"{text}\n{note}", is_error=True)
    if leftovers_killed:
        text += (
            "\n(background processes still holding the output were killed; redirect their "
            "output, e.g. `cmd > log 2>&1 &`, to keep them running)"
        )
    return ToolOutput(text)


@tool(timeout_s=MAX_TIMEOUT_S + 30)
async def bash(
    command: str,
    timeout_s: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S)] = DEFAULT_TIMEOUT_S,
    *,
    ctx: ToolContext,
) -> ToolOutput:
    """Run a shell command with `bash -c` in the working folder; stdout and stderr are merged.

    The exit code is reported when it is not 0. Long output is saved to a file and shown as a
    preview with its path; past 8 MB only its head and tail are kept. On timeout
    the command and every process it started are killed. stdin is empty; secrets are not in the
    environment.

    Args:
        command: the command line.
        timeout_s: the time limit in seconds (at most 600).
    """
    return await run_command(command, ctx, timeout_s)
