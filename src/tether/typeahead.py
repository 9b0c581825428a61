"""Type-ahead while `tether chat` starts: the terminal is held from the first instant of the
process, so a prompt typed *and sent* (Enter) before the screen appears is sent once it is up.

Why: until Textual puts the terminal in raw mode (seconds later under load: imports, the agent
built) the terminal is in its cooked mode, which turns the Enter key's CR into NL (`ICRNL`) as
each key arrives. Textual then reads NL as Ctrl+J, the prompt's "new line": the message stayed
in the box, unsent (trial5). Claude Code and Codex send it.

Owns: `hold(argv, fd)` (at the start of `tether.cli.entry.main`, only for the commands that open
the TUI: `tether`, `tether chat`), `release()` (the terminal exactly as it was; at exit, on a
signal), `original()` (the attributes to restore whenever the TUI gives the terminal back:
Textual's driver keeps what it found, which is the held mode) and `take_early()` (what was typed
before `hold`, Enter as CR: the TUI reads it before anything else). Imports only the standard
library (it runs before the CLI is imported).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import sys
from typing import Any

try:
    import termios
except ImportError:  # Windows: no termios, nothing held
    termios = None

_held: tuple[int, list[Any]] | None = None
"""The held terminal's descriptor and its attributes before `hold`."""

_early = b""
"""Bytes typed before `hold` (read at `hold`, NL back to CR); `take_early` hands them over."""


def opens_tui(argv: list[str]) -> bool:
    """`tether` alone or `tether chat …`: the commands that open the interactive session."""
    return not argv or argv[0] == "chat"


def hold(argv: list[str], fd: int | None = None) -> bool:
    """When `argv` (without the program name) opens the TUI on a terminal: Enter stays CR
    (no `ICRNL`), keys are read as typed (no `ICANON`) and not echoed (the screen appears
    soon). Keys typed before this instant (already NL) are read now into `take_early`, NL
    back to CR. True: held. Signals (Ctrl+C) still work: `ISIG` is kept."""
    global _held, _early
    if termios is None or _held is not None or not opens_tui(argv):
        return False
    if fd is None:
        fd = _stdin_fd()
    if fd is None or not os.isatty(fd):
        return False
    try:
        before: list[Any] = termios.tcgetattr(fd)
        held: list[Any] = termios.tcgetattr(fd)
        held[0] &= ~termios.ICRNL  # iflag
        held[3] &= ~(termios.ICANON | termios.ECHO)  # lflag
        held[6][termios.VMIN] = 1
        held[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, held)
    except termios.error:
        return False
    _held = (fd, before)
    atexit.register(release)
    _early = _read_pending(fd).replace(b"\n", b"\r")
    return True


def _stdin_fd() -> int | None:
    try:
        return sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return None


def _read_pending(fd: int) -> bytes:
    """What can be read from `fd` now, without waiting."""
    chunks: list[bytes] = []
    with contextlib.suppress(OSError, ValueError):
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def original() -> list[Any] | None:
    """The terminal's attributes before `hold` (None: not held)."""
    return None if _held is None else _held[1]


def take_early() -> str:
    """What was typed before `hold` (Enter as CR), once; the TUI feeds it in first."""
    global _early
    data, _early = _early, b""
    return data.decode("utf-8", "replace")


def release() -> None:
    """The terminal as it was before `hold` (no-op when not held)."""
    global _held
    if _held is None or termios is None:
        return
    fd, before = _held
    _held = None
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(fd, termios.TCSANOW, before)
