"""The embedded model's stderr lines (`tether: loading …`, `model loaded in …`, `generating…`),
written from its load and generation threads, never reach the terminal of a TUI process: after
`/quit` a load still under way printed them over the shell. tether's own lines still do."""

from __future__ import annotations

import io
import threading

from tether.tui.opening import LOAD_THREAD, MutedThreads


def test_the_model_threads_lines_are_dropped_and_the_rest_pass() -> None:
    inner = io.StringIO()
    muted = MutedThreads(inner)

    def say(line: str) -> None:
        muted.write(f"{line}\n")  # what `print(..., file=sys.stderr)` does through it

    for name in (LOAD_THREAD, "tether-local", "something-else"):
        thread = threading.Thread(target=say, args=(f"from {name}",), name=name)
        thread.start()
        thread.join()
    say("tether: cannot start the agent")  # the main thread's line at exit
    assert inner.getvalue() == "from something-else\ntether: cannot start the agent\n"
    assert muted.getvalue() == inner.getvalue()  # the rest of the stream is the inner one's

