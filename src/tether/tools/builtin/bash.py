"""The built-in `bash` tool: one `bash -c` command in the working folder.

Owns: running the command as an asyncio subprocess in its own session (process group), with the
context's scrubbed environment and stdin from /dev/null; capturing stdout+stderr merged, in order;
capping the output (head and tail kept, the cut counted; with a session the whole output streamed
to a file the output gate saves); and killing the whole process group on
timeout or cancellation.
Does not own: path policy. A shell command is not path-checked; the OS sandbox holds it to the
same rules (`tether.sandbox.config.confinement`): writes confined to the working folder and a
private temp folder, every `.git`, `.tether` and the tool folders read-only (one the command
creates is moved aside once it ended, and a note says so), the files the read deny list
refuses shown empty, unix sockets outside refused, network per `ctx.network`. The environment
is scrubbed of secrets (`tether.tools.env`). The process group kill covers the sandbox
launcher and everything under it.

Inside an OS sandbox every process the command started ends with the call (a PID namespace
under bwrap; the Landlock launcher reaps every descendant). A cancel that lands while
the process is starting still kills its whole group (`spawn_group`). Unsandboxed, processes the
command leaves running are left alone if they let go of the output pipe (e.g.
`server > log 2>&1 &`); those still holding it 1 s after the shell exits are killed.
Resource limits (`tether.sandbox.limits`) apply to every command; hitting one is an is_error
result naming it.

With `run_in_background: true` the command is started as a background shell
(`tether.tools.exec.background`: same confinement, its own process group) and the call
returns at once with the shell's id; `shell_output` and `shell_kill`
(`tether.tools.builtin.shells`) read and stop it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from pathlib import Path
from typing import Annotated

from pydantic import Field

from tether.sandbox.limits import FSIZE_EXIT, ResourceLimits, limit_note, nproc_hit_in
from tether.sandbox.proc import (
    EXIT_GRACE_S,
    HeadTail,
    kill_group,
    pump,
    spawn_confined,
    swept_note,
)
from tether.tools.base import DEFAULT_TIMEOUT_S, tool
from tether.tools.context import ToolContext, ToolOutput
from tether.tools.exec.persist import spill_file

_FAILED_STATUS = re.compile(
    r"^\((?:no output, |no visible output: [^\n]*, )?(?:exit code -?[1-9]\d*|killed by signal \d+)\)$",
    re.MULTILINE,
)


def command_failed(text: str) -> bool:
    """Whether a foreground `bash` result's text reports a non-zero exit code or a kill (the
    status line `run_command` writes), for `tether tool bash`'s exit code."""
    return _FAILED_STATUS.search(text) is not None


async def _drain(proc: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> bool:
    """Wait for the output to end. If the shell exits while something still holds the pipe,
    wait `EXIT_GRACE_S` more, then kill the group. Returns True when it had to kill.

    (`Process.wait()` would wait for the pipes too, so the exit is polled every 50 ms.)
    """
    while True:
        done, _ = await asyncio.wait({reader}, timeout=0.05)
        if done:
            return False
        if proc.returncode is not None:
            done, _ = await asyncio.wait({reader}, timeout=EXIT_GRACE_S)
            if done:
                return False
            kill_group(proc.pid)
            await asyncio.wait({reader}, timeout=EXIT_GRACE_S)
            return True


async def run_shell(
    command: str, ctx: ToolContext, timeout_s: float = DEFAULT_TIMEOUT_S
) -> ToolOutput:
    """Run `bash -c command` in `ctx.root` with `ctx.env`, inside `ctx.sandbox` when set; see
    the module docstring.

    Returns:
        The output (capped; its last newlines dropped) with a note of the exit code when it is
        not 0, or `(no output, exit code N)` (a blank output: the count of its bytes), and as
        `raw` the bytes the command wrote, exactly (what the output gate saves); is_error
        only when the command timed out or hit a limit.

    Raises:
        asyncio.CancelledError: after killing the process group, when the command was still
            running; a cancel that lands once its output has ended returns the result (the
            caller's own task still carries the cancel).
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
    sink = HeadTail(spill=spill_file(ctx.session_dir))  # past 8 MB: all of it to a file
    pumping = asyncio.create_task(pump(proc.stdout, sink))
    timed_out = leftovers_killed = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                leftovers_killed = await _drain(proc, pumping)
                await proc.wait()
        except TimeoutError:
            timed_out = True
            kill_group(proc.pid)
            # after the kill, EOF follows unless a detached (setsid) child holds the pipe
            await asyncio.wait({pumping}, timeout=EXIT_GRACE_S)
            await proc.wait()
    except asyncio.CancelledError:
        if not pumping.done():
            raise  # still running: killed below
        # The command had ended (its output is whole) when the cancel came: its result is
        # returned, and the caller, whose task carries the cancel, keeps it and stops.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout=EXIT_GRACE_S)
    finally:
        if proc.returncode is None or timed_out or leftovers_killed:
            kill_group(proc.pid)
        nproc_hit = guard.finish()
        if proc.returncode is None:
            # Cancelled: reap the killed shell so its transport closes with the loop still open.
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(proc.wait(), timeout=EXIT_GRACE_S)
        if not pumping.done():
            pumping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pumping
        # everything the command started has ended: move aside the trust roots it created
        moved = await asyncio.shield(asyncio.to_thread(guard.sweep))
        if proc.returncode is None:  # cancelled: no result, no saved output
            sink.discard()
    output = sink.text()
    # the command's bytes as written (the gate saves these: the spill file holding all of
    # them past 8 MB); the text drops the last newlines
    raw: bytes | Path | None = sink.spilled() or (
        output.encode("utf-8", "surrogateescape") if sink.total else None
    )
    text = output.rstrip("\n")
    code = proc.returncode
    if timed_out:
        note = f"(timed out after {timeout_s:g} s; the command and its process group were killed)"
        return ToolOutput(f"{text}\n{note}" if text.strip() else note, is_error=True, raw=raw)
    status = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    if not sink.total:
        text = f"(no output, {status})"
    elif not text.strip():
        text = f"(no visible output: {sink.total} bytes of blank space, {status})"
    elif code != 0:
        text += f"\n({status})"
    if moved:
        text += "\n" + swept_note(moved)
    nproc_hit = nproc_hit or nproc_hit_in(text)
    fsize_hit = code in (FSIZE_EXIT, -signal.SIGXFSZ) or "File size limit exceeded" in text or "File too large" in text
    if nproc_hit or fsize_hit:
        note = limit_note(limits, nproc=nproc_hit, fsize=fsize_hit)
        return ToolOutput(f"{text}\n{note}", is_error=True, raw=raw)
    if leftovers_killed:
        text += (
            "\n(background processes still holding the output were killed; redirect their "
            "output, e.g. `cmd > log 2>&1 &`, to keep them running)"
        )
    return ToolOutput(text, raw=raw)


async def start_background(command: str, ctx: ToolContext) -> ToolOutput:
    """Start `command` as a background shell of `ctx.shells`; the result names its id (an
    is_error result when background shells are not available or the cap is reached)."""
    from tether.tools.exec.background import TooManyShells

    if ctx.shells is None:
        return ToolOutput(
            "background shells are not available here (only the main agent may start them); "
            "run the command without run_in_background",
            is_error=True,
        )
    try:
        shell = await ctx.shells.start(command, ctx, ctx.session_dir)
    except TooManyShells as e:
        return ToolOutput(f"not started: {e}", is_error=True)
    return ToolOutput(
        f"started background shell {shell.id}; it keeps running while you work. Read what it "
        f"writes with shell_output(shell_id={shell.id!r}), stop it with "
        f"shell_kill(shell_id={shell.id!r}). It is stopped when this session ends."
    )


@tool(times_itself=True)  # its `timeout_s`, capped at `ctx.max_timeout_s` (`tools.max_timeout`)
async def bash(
    command: str,
    timeout_s: Annotated[float, Field(gt=0)] = DEFAULT_TIMEOUT_S,
    run_in_background: bool = False,
    *,
    ctx: ToolContext,
) -> ToolOutput:
    """Run a shell command with `bash -c` in the working folder; stdout and stderr are merged.

    The exit code is reported when it is not 0. Long output is saved to a file and shown as a
    preview with its path (all of it, however long). On timeout
    the command and every process it started are killed. stdin is empty; secrets are not in the
    environment.

    Args:
        command: the command line.
        timeout_s: the time limit in seconds (longer requests are cut to the configured
            ceiling, 1200 by default).
        run_in_background: for a command that keeps running (a server, a watcher): return
            at once with a shell id for shell_output / shell_kill (`&` does not outlive the
            call).
    """
    if run_in_background:
        return await start_background(command, ctx)
    return await run_shell(command, ctx, min(timeout_s, ctx.max_timeout_s))
