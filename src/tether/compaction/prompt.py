"""The summary prompt and the transcript it summarizes (pure).

Owns: rendering turns as plain text for the summary call (images → `[image]`, documents →
`[document: name]`, thinking dropped, large tool results cut with any `<persisted-output` stub
kept intact), the fixed-section instructions, and the marker's text (the summary plus the ids it
covers, for the recall tool).
Does not own: the call (`tether.compaction.summarize`) or the marker's rendering on the wire
(`tether.wire.markers` labels it as model-written context).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    ServerToolBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)

PERSISTED_OUTPUT_TAG = "<persisted-output"
"""How a persisted-output stub starts; such text is never cut (it is small and names a file)."""

SECTIONS: tuple[str, ...] = (
    "Goal",
    "Constraints",
    "Decisions",
    "Progress",
    "Open items",
    "Relevant files",
)
"""The fixed sections every summary has, in order."""

SUMMARY_SYSTEM = (
    "You write a compact, faithful summary of an agent's working session so the agent can "
    "continue the task without the original messages. Write plain text, no preamble."
)

DEFAULT_RESULT_CHARS = 2_000
"""A tool result longer than this (characters) is cut, head and tail kept, for the summary call."""


def cut_middle(text: str, max_chars: int) -> str:
    """`text` if it fits `max_chars`, else its head and tail with a note of what was omitted.
    Text holding a persisted-output stub is returned unchanged."""
    if len(text) <= max_chars or PERSISTED_OUTPUT_TAG in text:
        return text
    keep = max(max_chars - 40, 0)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    omitted = len(text) - head - tail
    return (
        f"{text[:head]}\n[… {omitted} chars omitted …]\n{text[len(text) - tail :] if tail else ''}"
    )


def render_turn(turn: Turn, *, max_result_chars: int = DEFAULT_RESULT_CHARS) -> str:
    """One turn as transcript text: `<role>: …` with calls, results and media markers."""
    parts: list[str] = []
    for b in turn.content:
        if isinstance(b, TextBlock):
            if b.text:
                parts.append(b.text)
        elif isinstance(b, ToolCallBlock):
            args = b.raw_arguments if b.raw_arguments is not None else repr(b.arguments)
            parts.append(f"[tool call {b.name} {cut_middle(args, max_result_chars)}]")
        elif isinstance(b, ToolResultBlock):
            body: list[str] = []
            for p in b.content:
                if isinstance(p, TextBlock):
                    body.append(cut_middle(p.text, max_result_chars))
                else:
                    body.append("[image]")
            flag = " (error)" if b.is_error else ""
            parts.append(f"[tool result{flag}]\n" + "\n".join(body))
        elif isinstance(b, ImageBlock):
            parts.append("[image]")
        elif isinstance(b, DocumentBlock):
            parts.append(f"[document: {b.title or b.media_type}]")
        elif isinstance(b, CompactSummaryBlock):
            parts.append(f"[earlier summary]\n{b.summary}")
        elif isinstance(b, ServerToolBlock):
            parts.append(b.summary)
    return f"{turn.role}: " + "\n".join(parts)


def render_transcript(
    turns: Sequence[Turn], *, max_result_chars: int = DEFAULT_RESULT_CHARS
) -> str:
    """The turns as one transcript, blank-line separated (markers skipped: their summary is fed
    in as the previous summary)."""
    return "\n\n".join(
        render_turn(t, max_result_chars=max_result_chars)
        for t in turns
        if not any(type(b) is CompactSummaryBlock for b in t.content)
    )


def build_prompt(
    transcript: str,
    *,
    previous_summary: str | None = None,
    focus: str | None = None,
    task: str | None = None,
    dropped_turns: int = 0,
    folded_user: int = 0,
) -> str:
    """The user message of a summary call.

    Args:
        transcript: the rendered turns to summarize.
        previous_summary: the summary of an earlier compaction, to fold in.
        focus: what the user wants the summary to keep (`/compact <focus>`), as a Focus section.
        task: the original task (kept verbatim elsewhere; given for orientation only).
        dropped_turns: turns removed without being shown (too large to fit), to be noted.
        folded_user: user messages in the transcript past the verbatim budget (to be kept).
    """
    sections = list(SECTIONS) + (["Focus"] if focus else [])
    lines = [
        "Summarize the conversation below for the agent that will continue it.",
        "Use exactly these sections, each as a heading line followed by short bullet points:",
        *(f"## {s}" for s in sections),
        "Keep file paths, commands, identifiers, numbers and error messages exact. Omit "
        "pleasantries. Do not invent anything.",
    ]
    if focus:
        lines.append(f"Under Focus, keep everything about: {focus}")
    if task:
        lines += ["", "<original-task>", task, "</original-task>"]
    if previous_summary:
        lines += [
            "",
            "An earlier summary covers what came before; fold it into the new summary:",
            "<previous-summary>",
            previous_summary,
            "</previous-summary>",
        ]
    if dropped_turns:
        lines += ["", f"({dropped_turns} older turns did not fit and are not shown.)"]
    if folded_user:
        lines += [
            "",
            f"{folded_user} message(s) below were written by the user and will not be kept "
            "verbatim: keep every instruction, correction and requirement they state.",
        ]
    lines += ["", "<conversation>", transcript, "</conversation>"]
    return "\n".join(lines)


def covered_note(first: str, last: str) -> str:
    """The line appended to every marker summary, naming the ids it covers."""
    return f"Turns covered: {first}…{last} (use the recall tool)"


def folded_note(folded_user: int) -> str:
    """The line a summary carries when user messages past the verbatim budget were replaced
    (empty when none was)."""
    if folded_user <= 0:
        return ""
    return (
        f"Note: {folded_user} earlier message(s) written by the user did not fit the verbatim "
        "budget and are folded into this summary (not shown unchanged); recall them for the "
        "exact words.\n\n"
    )


_FOLDED_NOTE = re.compile(r"Note: (\d+) earlier message\(s\) written by the user did not fit")


def folded_count(summary: str) -> int:
    """The count a marker's summary states in its folded-user note (`folded_note`, written by
    tether at the head of the stored text, never by the model), 0 when it has none: a later
    compaction that replaces this marker carries the count forward into its own note, so the
    pointer to the user's folded words is never left to the summarizing model to keep."""
    m = _FOLDED_NOTE.match(summary)
    return int(m.group(1)) if m else 0


def marker_text(summary: str, first: str, last: str, folded_user: int = 0) -> str:
    """The stored summary: the folded-user note (if any), the model's summary and the
    covered-ids line."""
    return f"{folded_note(folded_user)}{summary.strip()}\n\n{covered_note(first, last)}"


def truncation_text(
    removed: int, first: str, last: str, reason: str, folded_user: int = 0
) -> str:
    """The summary of a truncation marker (the summary call failed)."""
    return (
        f"{folded_note(folded_user)}{removed} earlier turns were removed without a summary "
        f"({reason}). Their content is not in context; use the recall tool to read them if "
        f"needed.\n\n{covered_note(first, last)}"
    )


def make_marker(marker_id: str, summary: str, replaced_ids: Sequence[str], generation: int) -> Turn:
    """The marker turn: role user, one `CompactSummaryBlock`."""
    return Turn(
        id=marker_id,
        role="user",
        content=(
            CompactSummaryBlock(
                summary=summary, replaces_turn_ids=tuple(replaced_ids), generation=generation
            ),
        ),
    )
