"""Transcript rows from a stored session, built as the live feed builds them.

Owns: `history_rows` (a stored history → one cheap row maker per row, nothing built yet),
`nest_run` (a subagent's stored run under its `task` row) and `stored_subagents` (which
stored session a `task` call ran, read from the store's subagent sessions). The rows are the
live feed's (`tether.tui.feed`): a tool call is a `ToolRow` built from the call (its edit diff
comes from the call's arguments, so it is the same live and read back), finished with its
result; a subagent's text and tool calls are nested under its `task` row with `ToolRow.nest`,
the text as one row per reply (`step=False`), each call as a step (`step=True`), to any depth.
What only events carry is not stored and so not shown read back: durations, thinking a
subagent streamed, notes and warnings (but a host command's output is stored as a session event,
`tether.agent.sessions.HostOutput`, and shown again).
Does not own: the rows themselves (`tether.tui.widgets`), the scrolling column
(`tether.tui.transcript`), the session files (`tether.session`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from textual.widget import Widget

from tether.agent.mentions import mention_chip
from tether.agent.sessions import HostOutput
from tether.agent.subagents import TASK_TOOL
from tether.errors import SessionError
from tether.messages import (
    ImageBlock,
    SearchHit,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.session import SessionStore
from tether.tools.exec.run import is_system_note, system_note_text
from tether.tui.attach import image_chip
from tether.tui.bang import parse_bang, shown_output
from tether.tui.widgets import AssistantRow, MarkerRow, NoteRow, ThinkingRow, ToolRow, UserRow
from tether.wire.interrupts import is_cancelled_reply
from tether.wire.markers import is_marker

RowMaker = Callable[[], Widget]
"""Builds one transcript row (called only when the row is mounted)."""


@dataclass(frozen=True, slots=True)
class SubagentRun:
    """The stored run of one `task` call: the subagent's agent path, its turns, and the runs of
    its own `task` calls."""

    agent_path: tuple[str, ...]
    turns: tuple[Turn, ...]
    children: Callable[[str], SubagentRun | None]


def no_subagents(_call_id: str) -> SubagentRun | None:
    """No stored subagent runs (a session without a store)."""
    return None


def _results(turns: Sequence[Turn]) -> dict[str, ToolResultBlock]:
    return {r.tool_call_id: r for turn in turns for r in turn.tool_results}


def _tool_row(
    block: ToolCallBlock,
    result: ToolResultBlock | None,
    runs: Callable[[str], SubagentRun | None],
) -> ToolRow:
    row = ToolRow(block.id, block.name, block.arguments)
    if block.name == TASK_TOOL and (run := runs(block.id)) is not None:
        nest_run(row, run)
    if result is not None:
        row.finish(result.text, is_error=result.is_error, duration_ms=None)
    else:  # read back without a result: the run was killed while it ran
        row.interrupted()
    return row


def nest_run(host: ToolRow, run: SubagentRun) -> None:
    """Nest a subagent's stored run under its `task` row, as the live feed nests its events:
    each reply's text (`step=False`), each tool call finished with its result (`step=True`;
    a `task` call with its own run nested), in order."""
    results = _results(run.turns)
    for turn in run.turns:
        if turn.role != "assistant":
            continue  # its prompt is the task call's; its results finish its calls
        for block in turn.content:
            if isinstance(block, TextBlock) and block.text.strip():
                host.nest(AssistantRow(block.text), run.agent_path, step=False)
            elif isinstance(block, ToolCallBlock):
                row = _tool_row(block, results.get(block.id), run.children)
                host.nest(row, run.agent_path, step=True)


def history_rows(
    history: Sequence[Turn],
    subagents: Callable[[str], SubagentRun | None] = no_subagents,
    outputs: Sequence[HostOutput] = (),
) -> list[RowMaker]:
    """One maker per row of a stored `history`, oldest first: user and assistant text (a user
    turn with images: one row, its images as chips), thinking, tool calls (with an edit's diff, finished with their results, a `task` call with
    its subagent's stored run nested: `subagents` maps a call id to it), server-side web
    searches (`search_text`), compaction markers, a cancelled request (`cancelled`), a `!cmd` message as its `!cmd` line and
    output, and the stored output of host commands (`outputs`: `/tool`) after the turn each
    followed."""
    results = _results(history)
    makers: list[RowMaker] = []
    shown_after: dict[str | None, list[HostOutput]] = {}
    for output in outputs:
        shown_after.setdefault(output.after, []).append(output)
    makers.extend(partial(NoteRow, o.text) for o in shown_after.pop(None, ()))
    for turn in history:
        _turn_rows(turn, results, subagents, makers)
        makers.extend(partial(NoteRow, o.text) for o in shown_after.pop(turn.id, ()))
    for rest in shown_after.values():  # after a turn no longer in the history: at the end
        makers.extend(partial(NoteRow, o.text) for o in rest)
    return makers


def _turn_rows(
    turn: Turn,
    results: dict[str, ToolResultBlock],
    subagents: Callable[[str], SubagentRun | None],
    makers: list[RowMaker],
) -> None:
    if is_marker(turn):
        makers.append(partial(MarkerRow, 0, 0, turn.text or ""))
        return
    if is_cancelled_reply(turn):  # a prompt cancelled before any reply: as Esc showed it
        makers.append(partial(NoteRow, "cancelled"))
        return
    if turn.role == "user" and (chips := _chips(turn)):  # its text and chips in one row
        makers.append(partial(UserRow, typed_text(turn), images=chips))
        return
    if turn.role == "user" and (bang := parse_bang(turn.text)) is not None:
        makers.append(partial(UserRow, f"!{bang[0]}"))  # as `!cmd` showed it live
        makers.append(partial(NoteRow, shown_output(bang[1])))
        return
    for block in turn.content:
        if isinstance(block, TextBlock) and turn.role == "user" and is_system_note(block.text):
            makers.append(partial(NoteRow, system_note_text(block.text)))  # the harness's note
        elif isinstance(block, TextBlock) and block.text.strip():
            kind = UserRow if turn.role == "user" else AssistantRow
            makers.append(partial(kind, block.text))
        elif isinstance(block, ThinkingBlock) and block.text:
            makers.append(partial(ThinkingRow, block.text))
        elif isinstance(block, ToolCallBlock):
            makers.append(partial(_tool_row, block, results.get(block.id), subagents))
        elif isinstance(block, ServerToolBlock):
            text = search_text(block.query, block.results, block.error)
            makers.append(partial(NoteRow, text))


def typed_text(turn: Turn) -> str:
    """What the user typed for a stored user turn (the rewind picker, the prompt put back):
    `!cmd` for a shell command's context, the text without the `@path` blocks (their words
    are in it)."""
    if (bang := parse_bang(turn.text)) is not None:
        return f"!{bang[0]}"
    return "\n".join(
        b.text for b in turn.content if isinstance(b, TextBlock) and not mention_chip(b)
    )


def _chips(turn: Turn) -> list[str]:
    """The chips of a user turn's `@path` blocks and images."""
    chips: list[str] = []
    for b in turn.content:
        chip = mention_chip(b) if isinstance(b, TextBlock) else None
        chip = image_chip(b) if isinstance(b, ImageBlock) else chip
        if chip is not None:
            chips.append(chip)
    return chips


def search_text(query: str, results: Sequence[SearchHit], error: str | None) -> str:
    """The transcript line of a server-side web search: `searched: QUERY`, then one
    `  title — url` line per result (or `  error CODE`, `  no results`)."""
    lines = [f"searched: {query}"]
    if error:
        lines.append(f"  error {error}")
    elif not results:
        lines.append("  no results")
    lines += [f"  {h.title} — {h.url}" if h.title else f"  {h.url}" for h in results]
    return "\n".join(lines)


def stored_subagents(
    store: SessionStore | None, session_id: str | None
) -> Callable[[str], SubagentRun | None]:
    """`task` call id → the stored run it started, for the session `session_id` of `store`:
    the subagent sessions whose header names that session and call (`tether.agent.subagents`
    writes them beside the caller's), read once when first asked; a session that cannot be
    read is left out (its `task` row shows the result alone). `no_subagents` without a store
    or a session."""
    if store is None or session_id is None:
        return no_subagents
    runs: dict[str, SubagentRun] | None = None

    def lookup(call_id: str) -> SubagentRun | None:
        nonlocal runs
        if runs is None:
            runs = {}
            for info in store.list():
                if info.caller != session_id:
                    continue
                try:
                    loaded = store.load(info.id)
                except (SessionError, OSError):
                    continue
                header = loaded.header
                call = header.caller_tool_call
                if call is None:
                    continue
                runs[call] = SubagentRun(
                    agent_path=header.agent_path or ("main", f"task:{call}"),
                    turns=tuple(loaded.turns),
                    children=stored_subagents(store, info.id),
                )
        return runs.get(call_id)

    return lookup
