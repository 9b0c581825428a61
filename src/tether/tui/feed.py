"""Turning the agent's events into transcript rows.

Owns: `Feed`: streamed text and thinking (collected per delta, shown by `flush` at most ~20
times a second), tool rows (finished by their results), compaction dividers, notes for errors
and warnings (an error said once: `error_shown`), a note when the embedded model loads (the
`env` event `model`: file, seconds, configuration), and a subagent's events (`SubagentEvent`) as
rows nested under the `task` row that runs it, at any depth (its text, its tool calls and their
results, its errors).
Does not own: the rows (`tether.tui.widgets`), the transcript (`tether.tui.transcript`), what
a turn boundary means to the app (the queued steering rows, the footer: its callbacks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tether.agent.events import (
    AgentEvent,
    CompactionEndEvent,
    DiscardEvent,
    DoneEvent,
    EnvEvent,
    ErrorEvent,
    ServerToolEvent,
    SubagentEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolStartEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
)
from tether.agent.subagents import TASK_TOOL
from tether.tui.rows import search_text
from tether.tui.widgets import AssistantRow, MarkerRow, NoteRow, ThinkingRow, ToolRow

if TYPE_CHECKING:
    from tether.messages import Turn
    from tether.tui.transcript import Transcript

MAIN = ("main",)
"""The agent path of the app's own agent."""


OVERFLOW_WAY_OUT = (
    "to go on: /rewind to before the message that made the context large (its files can stay "
    "as they are), or /compact to summarize the earlier turns"
)
"""What a `context_overflow` error adds in the transcript: the ways out of a session too full to
go on (the same message would fail again)."""

class Feed:
    """The event → row logic of one app (see the module docstring).

    Args:
        transcript: the transcript the rows go to (called at each event: it raises before the
            app's screen is composed).
        history: the agent's stored history (where a compaction's marker text is read).
        turn_started: called at each turn start of the main agent.
        turn_ended: called at each turn end and at the end of a run.
    """

    def __init__(
        self,
        transcript: Callable[[], Transcript],
        *,
        history: Callable[[], Sequence[Turn]],
        turn_started: Callable[[], None],
        turn_ended: Callable[[], None],
        overwrite_diff: Callable[[str, Mapping[str, Any]], str | None] = lambda _n, _a: None,
    ) -> None:
        self.transcript = transcript
        self.overwrite_diff = overwrite_diff
        """A `write` call's diff against the file it replaces, read before it runs (None: a
        new file, or not a `write`): its row then counts the replaced lines."""
        self.history = history
        self.turn_started = turn_started
        self.turn_ended = turn_ended
        self.text: AssistantRow | None = None
        self.thinking: ThinkingRow | None = None
        self.tool_rows: dict[str, ToolRow] = {}
        """The main agent's running calls, by call id."""
        self.hosts: dict[tuple[str, ...], ToolRow] = {}
        """The `task` row running the subagent at an agent path."""
        self.child_text: dict[tuple[str, ...], AssistantRow] = {}
        self.child_calls: dict[tuple[tuple[str, ...], str], ToolRow] = {}
        self.errors_shown: set[tuple[str, str]] = set()
        """The main agent's `error` events shown since `forget_errors` (kind, message): the
        run's `RunError` that follows one is not said again."""
        self.mcp: dict[str, EnvEvent] = {}
        """The last `mcp_server` event of each MCP server (`up`, `down`), for `/mcp`."""

    def forget_errors(self) -> None:
        """A run starts: no error of it was shown yet."""
        self.errors_shown.clear()

    def error_shown(self, kind: str, message: str) -> bool:
        """Whether an `error` event of this kind and message is in the transcript already."""
        return (kind, message) in self.errors_shown

    def clear(self) -> None:
        """Forget every row (the transcript was cleared)."""
        self.text = self.thinking = None
        self.tool_rows.clear()
        self.hosts.clear()
        self.child_text.clear()
        self.child_calls.clear()

    def on_event(self, event: AgentEvent) -> None:
        """One event of the agent (same event loop)."""
        transcript = self.transcript()
        if isinstance(event, SubagentEvent):
            self._subagent(event)
            return
        if isinstance(event, TextDeltaEvent):
            if self.text is None:
                self.text = AssistantRow(streaming=True)
                transcript.add(self.text)
            self.text.add(event.text)
            return  # shown and scrolled by `flush`
        if isinstance(event, ThinkingDeltaEvent):
            if self.thinking is None:
                self.thinking = ThinkingRow()
                transcript.add(self.thinking)
            self.thinking.add(event.text)
            return
        if isinstance(event, TurnStartEvent):
            self.end_blocks()
            self.turn_started()
        elif isinstance(event, ToolCallEvent):
            self.end_blocks()
            diff = self.overwrite_diff(event.name, event.arguments)
            row = ToolRow(event.id, event.name, event.arguments, diff=diff)
            self.tool_rows[event.id] = row
            if event.name == TASK_TOOL:
                self.hosts[(*MAIN, f"task:{event.id}")] = row
            transcript.add(row)
        elif isinstance(event, ServerToolEvent):
            self.end_blocks()
            transcript.add(NoteRow(search_text(event.query, event.results, event.error)))
        elif isinstance(event, ToolStartEvent):
            if (row := self.tool_rows.get(event.tool_call_id)) is not None:
                row.start()
        elif isinstance(event, ToolResultEvent):
            if (row := self.tool_rows.pop(event.tool_call_id, None)) is not None:
                row.finish(event.content, is_error=event.is_error, duration_ms=event.duration_ms)
        elif isinstance(event, CompactionEndEvent):
            if event.marker_id is not None:
                history = self.history()
                summary = next((t.text for t in reversed(history) if t.id == event.marker_id), "")
                transcript.add(MarkerRow(event.tokens_before, event.tokens_after, summary))
            elif event.error:
                transcript.add(NoteRow(f"compaction: {event.error}"))
        elif isinstance(event, DiscardEvent):
            if self.text is not None:
                self.text.remove()
            self.text = None
        elif isinstance(event, EnvEvent) and event.what == "mcp_server":
            self.mcp[event.name] = event
        elif isinstance(event, EnvEvent) and event.what == "model" and event.state != "loading":
            transcript.add(NoteRow(f"model: {event.name} {event.detail}"))
        elif isinstance(event, ErrorEvent | WarningEvent):
            text = f"{event.type}: {event.kind}: {event.message}"
            if isinstance(event, ErrorEvent) and event.kind == "context_overflow":
                text += f"\n{OVERFLOW_WAY_OUT}"
            transcript.add(NoteRow(text))
            if isinstance(event, ErrorEvent):
                self.errors_shown.add((event.kind, event.message))
        elif isinstance(event, TurnEndEvent | DoneEvent):
            self.end_blocks()
            self.turn_ended()
        transcript.follow()

    def end_blocks(self) -> None:
        """The streamed text / thinking block ended: show all of it."""
        if self.text is not None:
            self.text.flush(final=True)
        if self.thinking is not None:
            self.thinking.flush()
        self.text = None
        self.thinking = None

    def flush(self) -> None:
        """Show the text and thinking streamed since the last flush (the app's timer)."""
        changed = False
        if self.text is not None:
            changed = self.text.flush(final=False)
        if self.thinking is not None:
            self.thinking.flush()
        for row in self.child_text.values():
            changed = row.flush(final=False) or changed
        if changed:
            self.transcript().follow()

    # -- subagents ---------------------------------------------------------------------------

    def _subagent(self, wrapped: SubagentEvent) -> None:
        path = tuple(wrapped.agent_path)
        host = self.hosts.get(path)
        if host is None:
            return
        event = wrapped.event
        if isinstance(event, TextDeltaEvent):
            row = self.child_text.get(path)
            if row is None:
                row = self.child_text[path] = AssistantRow(streaming=True)
                host.nest(row, path, step=False)
            row.add(event.text)
            return
        if isinstance(event, ToolCallEvent):
            self._end_child(path)
            call = ToolRow(event.id, event.name, event.arguments)
            self.child_calls[(path, event.id)] = call
            if event.name == TASK_TOOL:
                self.hosts[(*path, f"task:{event.id}")] = call
            host.nest(call, path, step=True)
        elif isinstance(event, ToolStartEvent):
            if (call := self.child_calls.get((path, event.tool_call_id))) is not None:
                call.start()
        elif isinstance(event, ToolResultEvent):
            call = self.child_calls.pop((path, event.tool_call_id), None)
            if call is not None:
                call.finish(event.content, is_error=event.is_error, duration_ms=event.duration_ms)
        elif isinstance(event, ErrorEvent | WarningEvent):
            host.nest(NoteRow(f"{event.type}: {event.kind}: {event.message}"), path, step=False)
        elif isinstance(event, TurnStartEvent | TurnEndEvent | DoneEvent | DiscardEvent):
            if isinstance(event, DiscardEvent) and (row := self.child_text.pop(path, None)):
                row.remove()
            self._end_child(path)

    def _end_child(self, path: tuple[str, ...]) -> None:
        row = self.child_text.pop(path, None)
        if row is not None:
            row.flush(final=True)
