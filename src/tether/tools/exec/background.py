"""Background shells: `bash` commands started with `run_in_background: true` that keep running
while the agent works (a dev server, a watcher), read and stopped by id.

Owns: `BackgroundShells` (one per agent: start, read what is new, kill, list, close),
`Shell` (one command: its process group, unread output, state); a refused start is a
`tether.errors.TooManyShells`.
Does not own: the tools (`tether.tools.builtin.shells`, `bash`'s `run_in_background`), how a
command is confined (`tether.sandbox.proc.spawn_confined`: the same sandbox, limits and
process group as a foreground `bash` call), the TUI's `/tasks`.

Nothing the model starts outlives tether: `aclose` (the agent's close: run end, TUI exit,
a session switch, Ctrl-C and SIGTERM, which the CLI turns into a cancel) kills every shell's
process group; an `atexit` hook does the same for a manager never closed; and when tether is
killed outright (-9), the kernel ends them: bwrap's `--die-with-parent`, and the Landlock
launcher's `PR_SET_PDEATHSIG` (set before its exec: `spawn_confined`) with its PID namespace (without namespaces, only the launcher
and the shell are killed then; what they started may be orphaned).

Output: each shell's stdout and stderr, merged, go to `<session>/tasks/<id>.log` when the
agent has a session folder (written by tether, not by the command: the sandbox hides that
folder) and to an unread buffer (the last `UNREAD_BYTES` kept, the rest counted) that
`read` empties. The log is bounded: past `LOG_PART_BYTES` it becomes `<id>.1.log` (replacing
the part before) and a new `<id>.log` begins with a line saying so, so a chatty server left
running keeps its newest 2 × `LOG_PART_BYTES` on disk, not everything it ever wrote.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import os
import re
import signal
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tether.errors import TooManyShells
from tether.sandbox.proc import EXIT_GRACE_S, CallGuard, Spawnable, kill_group, spawn_confined

DEFAULT_MAX_BACKGROUND = 8
"""Background shells running at once per agent (`tools.max_background`)."""
UNREAD_BYTES = 4_000_000
"""Unread output kept per shell (bytes); older unread output is dropped (the log keeps it)."""
LOG_PART_BYTES = 16_000_000
"""A shell's log file is rotated past this size (bytes): at most two parts are kept."""
KILL_GRACE_S = 2.0
"""After SIGTERM, how long a killed shell may take before its group gets SIGKILL (s)."""
POLL_S = 0.2
"""How often a shell whose output is still open is checked for having exited (s)."""


@dataclass(eq=False)
class Shell:
    """One background command.

    Attributes:
        id: `bash_<n>`, unique in its session's `tasks/` folder.
        command: the command line.
        pid: the process group's id (its first process: the sandbox or bash).
        log: the output file, or None without a session folder.
        started: `time.monotonic()` at start.
        exit_code: the exit code once ended (negative: killed by that signal), else None.
        killed: it was stopped (`shell_kill`, `/tasks`, tether's exit).
        total: bytes of output so far.
        told: the model knows how it ended (it stopped it, or read its output once it had
            ended), so no notice of its end is due (`BackgroundShells.take_ended`).
    """

    id: str
    command: str
    pid: int
    log: Path | None
    started: float = field(default_factory=time.monotonic)
    exit_code: int | None = None
    killed: bool = False
    total: int = 0
    told: bool = False
    ended_at: float | None = None
    _unread: bytearray = field(default_factory=bytearray, repr=False)
    _dropped: int = 0
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"),
        repr=False,
    )
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        """Still running (its output not yet ended or its process not yet reaped)."""
        return self._task is not None and not self._task.done()

    def state(self) -> str:
        """`running (12 s)`, `exit code 0`, `killed`, `killed by signal 9` ..."""
        if self.running:
            return f"running ({time.monotonic() - self.started:.0f} s)"
        if self.killed:
            return "killed"
        code = self.exit_code
        if code is not None and code < 0:
            return f"killed by signal {-code}"
        return f"exit code {code}"

    def take(self, pattern: re.Pattern[str] | None = None) -> str:
        """The output since the last `take` (lines matching `pattern` only, when given; the
        others are consumed all the same), with a note of dropped bytes."""
        self._trim()
        data = bytes(self._unread)
        self._unread.clear()
        text = self._decoder.decode(data, final=not self.running)
        dropped, self._dropped = self._dropped, 0
        if pattern is not None:
            text = "".join(line for line in text.splitlines(True) if pattern.search(line))
        if dropped:
            where = f"; the latest output is in {self.log}" if self.log is not None else ""
            text = f"[{dropped} earlier bytes not shown{where}]\n{text}"
        return text

    @property
    def unread(self) -> int:
        """Bytes written since the last `take`."""
        return len(self._unread) + self._dropped

    def older_log(self) -> Path | None:
        """The log's previous part (`<id>.1.log`, see the module docstring), or None."""
        return None if self.log is None else self.log.with_name(f"{self.id}.1.log")

    def _feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._unread += chunk
        if len(self._unread) > UNREAD_BYTES + UNREAD_BYTES // 4:
            self._trim()

    def _trim(self) -> None:
        """Drop all but the last `UNREAD_BYTES` unread (in steps of a quarter of it, not at
        every 64 KB read: ~20 % less CPU per read for a shell that writes without pause)."""
        over = len(self._unread) - UNREAD_BYTES
        if over > 0:
            del self._unread[:over]
            self._dropped += over


_open: weakref.WeakSet[BackgroundShells] = weakref.WeakSet()


@atexit.register
def _kill_left() -> None:
    """At interpreter exit: SIGKILL the group of every shell a manager never closed."""
    for manager in list(_open):
        manager.kill_now()


class BackgroundShells:
    """An agent's background shells.

    Args:
        max_running: shells running at once (`tools.max_background`); a start past it is
            refused with `TooManyShells`.
    """

    def __init__(self, max_running: int = DEFAULT_MAX_BACKGROUND) -> None:
        self.max_running = max_running
        self._shells: dict[str, Shell] = {}
        self._next = 1
        self._ended: list[Shell] = []  # in the order they ended, until `take_ended`

    def __len__(self) -> int:
        return len(self._shells)

    def all(self) -> list[Shell]:
        """Every shell started, oldest first."""
        return list(self._shells.values())

    def running(self) -> list[Shell]:
        """The shells still running, oldest first."""
        return [s for s in self._shells.values() if s.running]

    def take_ended(self) -> list[Shell]:
        """The shells that ended since the last call and whose end the model was not told
        of (each given once; see `Shell.told`)."""
        if not self._ended:  # every request asks: the common answer costs nothing
            return []
        ended = [s for s in self._ended if not s.told]
        self._ended.clear()
        for shell in ended:
            shell.told = True
        return ended

    def get(self, shell_id: str) -> Shell | None:
        """The shell `shell_id`, or None."""
        return self._shells.get(shell_id.strip())

    def _new_id(self, folder: Path | None) -> str:
        while True:
            sid = f"bash_{self._next}"
            self._next += 1
            if sid not in self._shells and (folder is None or not (folder / f"{sid}.log").exists()):
                return sid

    async def start(self, command: str, ctx: Spawnable, session_dir: Path | None) -> Shell:
        """Start `bash -c command` in the background, confined like a foreground `bash` call
        (`spawn_confined`), its output to `<session_dir>/tasks/<id>.log` when `session_dir` is
        set.

        Raises:
            TooManyShells: `max_running` shells are running.
            OSError / subprocess.SubprocessError: it could not start.
        """
        if self.max_running == 0:
            raise TooManyShells("background shells are off here (tools.max_background is 0)")
        if len(self.running()) >= self.max_running:
            raise TooManyShells(
                f"{self.max_running} background shells are running already "
                "(tools.max_background): stop one with shell_kill, or wait for one to end"
            )
        folder = None if session_dir is None else session_dir / "tasks"
        log_file: IO[bytes] | None = None
        if folder is not None:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        sid = self._new_id(folder)
        log = None if folder is None else folder / f"{sid}.log"
        if log is not None:
            log_file = open(log, "ab", buffering=0)  # noqa: SIM115 - closed by the watcher
        try:
            proc, guard = await spawn_confined(
                ["bash", "-c", command],
                ctx,
                stdin=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.STDOUT,
            )
        except BaseException:
            if log_file is not None:
                log_file.close()
            raise
        shell = Shell(id=sid, command=command, pid=proc.pid, log=log)
        self._shells[sid] = shell
        shell._task = asyncio.create_task(  # pyright: ignore[reportPrivateUsage]
            _watch(shell, proc, guard, log_file, self._ended), name=f"background shell {sid}"
        )
        _open.add(self)
        return shell

    async def kill(self, shell_id: str, *, told: bool = False) -> Shell | None:
        """Stop shell `shell_id`: SIGTERM to its process group, SIGKILL after
        `KILL_GRACE_S`; returns once it has ended (None: no such shell). `told`: the model
        stopped it (`shell_kill`), so no notice of its end is due; a stop by the user
        (`/tasks stop`) is noticed at the next request."""
        shell = self.get(shell_id)
        if shell is None:
            return None
        if shell.running:
            shell.killed = True
            shell.told = shell.told or told
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(shell.pid, signal.SIGTERM)
            await _settle(shell, KILL_GRACE_S)
        return shell

    def kill_now(self) -> None:
        """SIGKILL every running shell's process group (synchronous: exit paths)."""
        for shell in self.running():
            shell.killed = shell.told = True  # stopped with the agent: nobody to tell
            kill_group(shell.pid)

    async def aclose(self) -> None:
        """Kill every running shell and wait for them to end (idempotent)."""
        left = self.running()
        self.kill_now()
        for shell in left:
            await _settle(shell, 0)
        _open.discard(self)


async def _settle(shell: Shell, grace_s: float) -> None:
    """Wait `grace_s` for `shell` to end, then SIGKILL its group and wait for its watcher."""
    task = shell._task  # pyright: ignore[reportPrivateUsage]
    if task is None:
        return
    if grace_s > 0:
        await asyncio.wait({task}, timeout=grace_s)
    if not task.done():
        kill_group(shell.pid)
        await asyncio.wait({task}, timeout=KILL_GRACE_S + EXIT_GRACE_S)


def _rotate(shell: Shell, log: IO[bytes]) -> IO[bytes] | None:
    """Close `log`, keep it as the shell's older part, and open a new log that begins by
    saying so; None when the new one cannot be opened (the output goes on to the buffer)."""
    log.close()
    path, older = shell.log, shell.older_log()
    if path is None or older is None:
        return None
    try:
        os.replace(path, older)
        new = open(path, "ab", buffering=0)  # noqa: SIM115 - closed by the watcher
    except OSError:
        return None
    with contextlib.suppress(OSError):
        new.write(
            f"[tether: {shell.total:,} bytes written so far; the part before this is in "
            f"{older.name}, older output was dropped (a background log keeps its newest "
            f"{2 * LOG_PART_BYTES // 1_000_000} MB)]\n".encode()
        )
    return new


async def _watch(
    shell: Shell,
    proc: asyncio.subprocess.Process,
    guard: CallGuard,
    log: IO[bytes] | None,
    ended: list[Shell],
) -> None:
    """Pump the output until it ends (after the shell exited, `EXIT_GRACE_S` more, then the
    group is killed: something still held the pipe), reap, then finish the call's guard and
    add the shell to `ended`."""
    assert proc.stdout is not None
    stream = proc.stdout

    written = 0  # bytes in the log's current part

    async def pump() -> None:
        nonlocal log, written
        while chunk := await stream.read(65536):
            shell._feed(chunk)  # pyright: ignore[reportPrivateUsage]
            if log is None:
                continue
            if written and written + len(chunk) > LOG_PART_BYTES:
                log = _rotate(shell, log)
                written = 0
                if log is None:
                    continue
            with contextlib.suppress(OSError):
                written += log.write(chunk) or 0

    reader = asyncio.create_task(pump())
    try:
        while True:
            done, _ = await asyncio.wait({reader}, timeout=POLL_S)
            if done:
                break
            if proc.returncode is not None:
                done, _ = await asyncio.wait({reader}, timeout=EXIT_GRACE_S)
                if not done:
                    kill_group(proc.pid)
                    await asyncio.wait({reader}, timeout=EXIT_GRACE_S)
                break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout=KILL_GRACE_S)
    finally:
        if proc.returncode is None:
            kill_group(proc.pid)
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(proc.wait(), timeout=EXIT_GRACE_S)
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        shell.exit_code = proc.returncode
        shell.ended_at = time.monotonic()
        ended.append(shell)
        guard.finish()
        if log is not None:
            log.close()
        with contextlib.suppress(Exception):
            await asyncio.shield(asyncio.to_thread(guard.sweep))
