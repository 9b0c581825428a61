"""The `tether` console entry point: the signal handlers first, then the CLI.

Owns: SIGINT/SIGTERM/SIGHUP handling for the whole life of a `tether` process, so a signal at
any instant ends it with exit code 130 (never -2 / -15 / -1):
    start-up  (before the CLI module is imported)  flush stdout/stderr and exit 130 at once:
              nothing has been written yet;
    the CLI   both signals raise `KeyboardInterrupt`, which `tether.cli.main.main` turns into
              exit 130 after `finally` blocks ran (a terminal whose echo `login` turned off is
              restored, the session writer is closed); during the agent run `tether.cli.run`
              puts the loop's cancellation in front (the partial turn is persisted first) and
              puts these handlers back afterwards (it records a signal the instant it
              arrives: a Python-level handler, not the event loop's, whose self-pipe a
              closing run could leave unread);
    closing   (after the CLI returned or raised) `interrupt` only records (`_closing`), then
              exit 130 at once again: everything is persisted. A `KeyboardInterrupt` never
              escapes while the CLI's exit code is read.
Every handler records the signal (`tether.cli.cancel`): when the CLI ends after one arrived,
however it ended (a normal return because the cancel reached a run that had just finished, an
error some library wrapped the `KeyboardInterrupt` in), the exit code is 130 and no traceback
is printed. The process ends through `leave` (`os._exit` after the threads, the atexit
handlers and the stdio flush), never through the interpreter's own shutdown, where a signal
finds no handler that runs.
The terminal is held for type-ahead from the first instant when the command opens the TUI
(`tether.typeahead`), and given back as it was however the process ends.
Does not own: argument parsing or anything else of the CLI (`tether.cli.main`). Imports only
the standard library, `tether.cli.cancel` and `tether.typeahead`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from tether import typeahead
from tether.cli import cancel

EXIT_CANCELLED = 130
"""The exit code of a process ended by SIGINT, SIGTERM or SIGHUP."""

SIGNALS = cancel.SIGNALS


def exit_now(signum: int, frame: FrameType | None) -> None:
    """The handler at start-up and while closing: flush what was written, say `cancelled`
    on stderr, exit 130 now."""
    cancel.note()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reentrant flush or a closed pipe
            stream.flush()
    cancel.say(raw=True)
    typeahead.release()
    os._exit(EXIT_CANCELLED)


_closing = False
"""Set the instant the CLI has returned or raised: from then on `interrupt` only records."""


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler while the CLI runs: SIGTERM too becomes `KeyboardInterrupt` (exit 130).
    Once the CLI has ended (`_closing`) it only records the signal: a `KeyboardInterrupt`
    raised while `main` reads the CLI's outcome would escape it as a traceback and death by
    SIGINT (issue 39)."""
    cancel.note()
    if not _closing:
        raise KeyboardInterrupt


def install(handler: Callable[[int, FrameType | None], None]) -> None:
    """Set `handler` for every signal of `SIGNALS`."""
    for sig in SIGNALS:
        signal.signal(sig, handler)


def main() -> None:
    """Console entry point: handlers, then `tether.cli.main.main`, then handlers again; exit
    130 whenever a signal arrived (module docstring), through `leave`."""
    install(exit_now)
    typeahead.hold(sys.argv[1:])  # before the imports: an Enter typed meanwhile stays Enter
    from tether.cli.main import main as cli_main

    install(interrupt)
    global _closing
    code = 0
    try:
        try:
            cli_main()
        finally:
            # one statement: a `KeyboardInterrupt` can be raised before it (and is handled
            # below like any from the CLI), never after it
            _closing = True
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        code = EXIT_CANCELLED
    except BaseException:  # an error some library wrapped the KeyboardInterrupt in, or a bug
        install(exit_now)
        if not cancel.received():
            raise  # a real fault: Python prints its traceback
        code = 1  # `leave` makes it 130 and says `cancelled`
    finally:
        install(exit_now)
    leave(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr)
    return 1


def leave(code: int) -> NoReturn:
    """Exit with `code` (130 when a signal arrived) without the interpreter's own shutdown,
    during which a signal finds a Python handler that never runs (exit 0) or, once the handlers
    are reset, the default action (exit -2 / -15). What that shutdown does that matters here is
    done first: waiting for non-daemon threads (executors), the atexit handlers (the span
    exporter's flush), flushing stdout and stderr; a signal meanwhile exits 130 at once."""
    wait_threads = getattr(threading, "_shutdown", None)
    run_atexit = getattr(atexit, "_run_exitfuncs", None)
    for step in (wait_threads, run_atexit):
        if callable(step):
            with contextlib.suppress(Exception):
                step()
    if cancel.received():
        # said already, unless the signal's cancel reached a run that had finished, or the
        # CLI's `KeyboardInterrupt` became a quiet exit 130 (typer does that)
        cancel.say()
        code = EXIT_CANCELLED
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
