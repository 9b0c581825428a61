"""The text a `!cmd` adds to the conversation, and reading it back (no TUI imports, so the
transcript's row builder can use it).

Owns: `bang_context` (Claude Code's `<bash-input>` / `<bash-stdout>` shape), `hold_output` (the
output through the tool output gate: a long one is saved and a preview goes in its place), `parse_bang` (a
stored `!cmd` message back to its command and output, for a resumed transcript) and
`shown_output` (what the transcript shows of the output, live and read back).
Does not own: running the command (`tether.tui.shell_commands`).
"""

from __future__ import annotations

import re
from pathlib import Path

from tether.messages import TextBlock, ToolResultBlock
from tether.sandbox.proc import output_cut_note
from tether.tools.exec.persist import OutputLimits, gate_tool_result
from tether.wire.interrupts import CONTEXT_LEAD

SHOWN_CHARS = 8000
"""How much of a `!cmd`'s output the transcript shows (the conversation gets up to
`tools.output_threshold_chars`)."""
BANG_INLINE_CHARS = 10_000
"""A `!cmd` output longer than this (characters, after the output gate's normalization) goes
to the conversation as the gate's preview stub (first 2 KiB, last 1 KiB, and where the full
output is saved for the `read` tool), like a tool's output: about 2,500 tokens at most, so no
`!cmd` can dominate the window. Claude Code keeps up to 30,000 characters inline."""
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


async def hold_output(text: str, key: str, session_dir: Path | None, threshold: int) -> str:
    """A `!cmd`'s (redacted) output as the conversation holds it: through the tool output gate
    (`tether.tools.exec.persist`) with the smaller of `BANG_INLINE_CHARS` and `threshold`: up to
    that it is kept (normalized); past it the full text is saved as
    `<session_dir>/tool-results/<key>.txt` (which the `read` tool may read) and a preview stub
    stands in (without a session: head + tail with a notice)."""
    if not text:
        return text
    limits = OutputLimits(threshold_chars=max(4096, min(BANG_INLINE_CHARS, threshold)))
    block = ToolResultBlock(tool_call_id=key, content=(TextBlock(text=text),))
    gated = await gate_tool_result(block, session_dir, limits)
    return gated.text


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


