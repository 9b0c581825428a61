"""Whether a SIGINT / SIGTERM / SIGHUP reached this `tether` process.

Owns: the signals that cancel (`SIGNALS`), the process-wide record of one (`note`,
`received`) and the one
`tether: cancelled` line on stderr (`say`, written once however many paths reach it), which the entry
point turns into exit code 130 however the CLI ended: a signal whose cancel reached a task
that had already finished (the final answer being written), or whose `KeyboardInterrupt`
landed inside a library that wrapped it in its own error (pydantic building a schema while the
provider SDKs import), must still end the process with 130 and no traceback.
Does not own: installing handlers (`tether.cli.entry`, `tether.cli.run`). Imports only the
standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that cancel: Ctrl-C, a kill, and the terminal (or SSH link) closing, which
would otherwise end tether mid-reply without saving the partial turn."""

_received = False
_said = False


def note() -> None:
    """Record that a SIGINT or SIGTERM arrived (called from the signal handlers)."""
    global _received
    _received = True


def received() -> bool:
    """Whether a SIGINT or SIGTERM arrived since the process started."""
    return _received


def say(*, raw: bool = False) -> None:
    """Write the one `tether: cancelled` line on stderr, unless it was written already: every
    path a cancel takes (a run's own, the CLI's, typer turning a `KeyboardInterrupt` into a
    quiet exit 130, the entry point's) ends with the line, and only one.

    Args:
        raw: write to file descriptor 2 directly (a signal handler about to `os._exit`).
    """
    global _said
    if _said:
        return
    _said = True
    with contextlib.suppress(Exception):  # a closed stderr, a reentrant flush
        if raw:
            os.write(2, b"tether: cancelled\n")
        else:
            print("tether: cancelled", file=sys.stderr, flush=True)
