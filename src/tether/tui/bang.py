"""The text a `!cmd` adds to the conversation, and reading it back (pure; no TUI imports, so
the transcript's row builder can use it).

Owns: `bang_context` (Claude Code's `<bash-input>` / `<bash-stdout>` shape), `parse_bang` (a
stored `!cmd` message back to its command and output, for a resumed transcript) and
`shown_output` (what the transcript shows of the output, live and read back).
Does not own: running the command (`tether.tui.shell_commands`).
"""

from __future__ import annotations

import re

from tether.sandbox.proc import output_cut_note
from tether.wire.interrupts import CONTEXT_LEAD

SHOWN_CHARS = 8000
"""How much of a `!cmd`'s output the transcript shows (the conversation gets up to
`tools.output_threshold_chars`)."""
BANG_LEAD = CONTEXT_LEAD
"""The lead line: context for the next message, not a request (the loop knows it: no
interruption note follows it, `tether.wire.interrupts.unanswered_prompt`)."""


def bang_context(command: str, output: str, cap: int) -> str:
    """The text a `!cmd` adds to the conversation: a lead line, `<bash-input>` and
    `<bash-stdout>` (stdout and stderr merged; past `cap` characters the middle is cut)."""
    if len(output) > cap:
        head, tail = output[: cap // 2], output[-(cap // 2) :]
        output = f"{head}{output_cut_note(len(output) - len(head) - len(tail), len(output))}{tail}"
    return f"{BANG_LEAD}\n<bash-input>{command}</bash-input>\n<bash-stdout>{output}</bash-stdout>"


def shown_output(text: str) -> str:
    """What the transcript shows of a `!cmd`'s output (live and read back): its first
    `SHOWN_CHARS` characters."""
    if len(text) > SHOWN_CHARS:
        return f"{text[:SHOWN_CHARS]}\n… ({len(text) - SHOWN_CHARS} more characters)"
    return text


_BANG = re.compile(
    re.escape(BANG_LEAD) + r"\n<bash-input>(.*?)</bash-input>\n<bash-stdout>(.*)</bash-stdout>\Z",
    re.DOTALL,
)


def parse_bang(text: str) -> tuple[str, str] | None:
    """`(command, output)` of a stored `!cmd` message (`bang_context`'s text), else None: a
    resumed transcript shows it as it was shown live (the `!cmd` line, then its output)."""
    m = _BANG.match(text)
    return None if m is None else (m.group(1), m.group(2))


