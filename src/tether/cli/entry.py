"""The `tether` console entry point: the signal handlers first, then the CLI.

Owns: SIGINT/SIGTERM handling for the whole life of a `tether` process, so a signal at any
instant ends it with exit code 130 (never -2 / -15):
    start-up  (before the CLI module is imported)  flush stdout/stderr and exit 130 at once:
              nothing has been written yet;
    the CLI   both signals raise `KeyboardInterrupt`, which `tether.cli.main.main` turns into
              exit 130 after `finally` blocks ran (a terminal whose echo `login` turned off is
              restored, the session writer is closed); during the agent run `tether.cli.run`
              puts the loop's cancellation in front (the partial turn is persisted first) and
              puts these handlers back afterwards;
    closing   (after the CLI returned) exit 130 at once again: everything is persisted.
Every handler records the signal (`tether.cli.cancel`): when the CLI ends after one arrived,
however it ended (a normal return because the cancel reached a run that had just finished, an
error some library wrapped the `KeyboardInterrupt` in), the exit code is 130 and no traceback
is printed.
Does not own: argument parsing or anything else of the CLI (`tether.cli.main`). Imports only
the standard library and `tether.cli.cancel`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType

from tether.cli import cancel

EXIT_CANCELLED = 130
"""The exit code of a process ended by SIGINT or SIGTERM."""

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_now(signum: int, frame: FrameType | None) -> None:
    """The handler at start-up and while closing: flush what was written, say `cancelled`
    on stderr, exit 130 now."""
    cancel.note()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reentrant flush or a closed pipe
            stream.flush()
    with contextlib.suppress(OSError):
        os.write(2, b"tether: cancelled\n")
    os._exit(EXIT_CANCELLED)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler while the CLI runs: SIGTERM too becomes `KeyboardInterrupt` (exit 130)."""
    cancel.note()
    raise KeyboardInterrupt


def install(handler: Callable[[int, FrameType | None], None]) -> None:
    """Set `handler` for SIGINT and SIGTERM."""
    for sig in SIGNALS:
        signal.signal(sig, handler)


def _cancelled() -> None:
    """Say `cancelled` on stderr and exit 130 through `SystemExit` (atexit handlers run)."""
    with contextlib.suppress(OSError):
        os.write(2, b"tether: cancelled\n")
    sys.exit(EXIT_CANCELLED)


def main() -> None:
    """Console entry point: handlers, then `tether.cli.main.main`, then handlers again; exit
    130 whenever a signal arrived (module docstring)."""
    install(exit_now)
    from tether.cli.main import main as cli_main

    install(interrupt)
    try:
        cli_main()
    except SystemExit as exc:
        install(exit_now)
        if cancel.received() and exc.code != EXIT_CANCELLED:  # the signal's cancel was lost
            _cancelled()
        raise
    except KeyboardInterrupt:
        install(exit_now)
        sys.exit(EXIT_CANCELLED)
    except BaseException:  # an error some library wrapped the KeyboardInterrupt in
        install(exit_now)
        if cancel.received():
            _cancelled()
        raise
    finally:
        install(exit_now)
    if cancel.received():
        _cancelled()
