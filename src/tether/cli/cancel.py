"""Whether a SIGINT / SIGTERM reached this `tether` process.

Owns: the process-wide record of a cancelling signal (`note`, `received`), which the entry
point turns into exit code 130 however the CLI ended: a signal whose cancel reached a task
that had already finished (the final answer being written), or whose `KeyboardInterrupt`
landed inside a library that wrapped it in its own error (pydantic building a schema while the
provider SDKs import), must still end the process with 130 and no traceback.
Does not own: installing handlers (`tether.cli.entry`, `tether.cli.run`). Imports only the
standard library.
"""

from __future__ import annotations

_received = False


def note() -> None:
    """Record that a SIGINT or SIGTERM arrived (called from the signal handlers)."""
    global _received
    _received = True


def received() -> bool:
    """Whether a SIGINT or SIGTERM arrived since the process started."""
    return _received
