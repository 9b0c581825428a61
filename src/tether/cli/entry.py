"""The `tether` console entry point: the signal handlers first, then the CLI.

Owns: installing SIGINT/SIGTERM handlers before the CLI (and its heavy imports) loads, so a
signal at any instant of the process's life ends it with exit code 130: during start-up and
while closing, the handler flushes stdout/stderr and exits 130 at once (nothing is half-written
then: every session entry is one flushed write); during the agent run, `tether.cli.run` puts
the loop's cancellation in front of it (the partial turn is persisted first) and puts it back
afterwards.
Does not own: argument parsing or anything else of the CLI (`tether.cli.main`). Imports only
the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

EXIT_CANCELLED = 130
"""The exit code of a run ended by SIGINT or SIGTERM."""

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_cancelled(signum: int, frame: FrameType | None) -> None:
    """The handler outside the agent run: flush what was written, exit 130 now."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reentrant flush or a closed pipe
            stream.flush()
    os._exit(EXIT_CANCELLED)


def install_exit_handlers() -> None:
    """Make SIGINT and SIGTERM end the process with 130 (`exit_cancelled`)."""
    for sig in SIGNALS:
        signal.signal(sig, exit_cancelled)


def main() -> None:
    """Console entry point: handlers, then `tether.cli.main.main`."""
    install_exit_handlers()
    from tether.cli.main import main as cli_main

    cli_main()
