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
Does not own: argument parsing or anything else of the CLI (`tether.cli.main`). Imports only
the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType

EXIT_CANCELLED = 130
"""The exit code of a process ended by SIGINT or SIGTERM."""

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_now(signum: int, frame: FrameType | None) -> None:
    """The handler at start-up and while closing: flush what was written, say `cancelled`
    on stderr, exit 130 now."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reentrant flush or a closed pipe
            stream.flush()
    with contextlib.suppress(OSError):
        os.write(2, b"tether: cancelled\n")
    os._exit(EXIT_CANCELLED)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler while the CLI runs: SIGTERM too becomes `KeyboardInterrupt` (exit 130)."""
    raise KeyboardInterrupt


def install(handler: Callable[[int, FrameType | None], None]) -> None:
    """Set `handler` for SIGINT and SIGTERM."""
    for sig in SIGNALS:
        signal.signal(sig, handler)


def main() -> None:
    """Console entry point: handlers, then `tether.cli.main.main`, then handlers again."""
    install(exit_now)
    from tether.cli.main import main as cli_main

    install(interrupt)
    try:
        cli_main()
    except KeyboardInterrupt:
        install(exit_now)
        sys.exit(EXIT_CANCELLED)
    finally:
        install(exit_now)
