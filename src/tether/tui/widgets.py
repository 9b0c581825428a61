"""The TUI's transcript rows, footer and prompt editor (Textual widgets).

Owns: `UserRow`, `AssistantRow` (streamed text rendered as Markdown, code highlighted; updates
batched), `ThinkingRow` (dimmed, collapsible), `ToolRow` (collapsible: name, arguments
summary, status, duration; its result inside; a persisted output's size and path),
`MarkerRow` (a compaction divider with tokens before/after; the summary expands), `NoteRow`,
`StatusBar` (the footer) and `PromptInput` (Enter sends, Shift+Enter / Ctrl+J new line, Up /
Down history, Tab completion).
Does not own: what the rows say (the app feeds them events), the agent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import Collapsible, Markdown, Static, TextArea

PERSISTED_RE = re.compile(r"\[(?:full|kept) output \((\d+) bytes, (\d+) lines\) saved at ([^;\]]+)")
"""A persisted-output stub's size and path (`tether.tools.persist`)."""


def args_summary(arguments: Mapping[str, Any], width: int = 60) -> str:
    """One line summing up a call's arguments: `path=a.py, limit=20` (cut at `width`)."""
    parts: list[str] = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={' '.join(str(text).split())}")
    line = ", ".join(parts)
    return line if len(line) <= width else line[: width - 1] + "…"


class UserRow(Static):
    """A user message (`queued` while it waits for the next turn boundary)."""

    DEFAULT_CSS = """
    UserRow { margin: 1 0 0 0; padding: 0 1; border-left: thick $accent; }
    UserRow.queued { color: $text-muted; border-left: thick $warning; }
    """

    def __init__(self, text: str, *, queued: bool = False) -> None:
        super().__init__(Text(text + ("  (queued)" if queued else "")))
        self.text = text
        if queued:
            self.add_class("queued")

    def sent(self) -> None:
        """The queued message was injected."""
        self.remove_class("queued")
        self.update(Text(self.text))


class AssistantRow(Markdown):
    """Assistant text, streamed: deltas collect and are appended to the Markdown at most ~20
    times a second (`flush`; Textual re-parses only the last block)."""

    DEFAULT_CSS = "AssistantRow { margin: 1 0 0 0; padding: 0 1; }"

    def __init__(self, text: str = "") -> None:
        super().__init__(text)
        self.text = text
        self._pending = ""

    def add(self, delta: str) -> None:
        self.text += delta
        self._pending += delta

    def flush(self) -> bool:
        """Render what arrived since the last flush (incrementally: only the last block is
        parsed again). Returns whether anything was added."""
        if not self._pending:
            return False
        chunk, self._pending = self._pending, ""
        self.append(chunk)
        return True

    async def flush_async(self) -> bool:
        """`flush`, returning once the new text is parsed and mounted."""
        if not self._pending:
            return False
        chunk, self._pending = self._pending, ""
        await self.append(chunk)
        return True


class ThinkingRow(Collapsible):
    """The model's thinking, dimmed, collapsed by default."""

    DEFAULT_CSS = "ThinkingRow { color: $text-muted; } ThinkingRow Static { text-style: italic; }"

    def __init__(self, text: str = "") -> None:
        self.body = Static(Text(text))
        self.text = text
        super().__init__(self.body, title="thinking", collapsed=True)

    def add(self, delta: str) -> None:
        self.text += delta
        self.body.update(Text(self.text))


class ToolRow(Collapsible):
    """One tool call: `name  args · status · duration`, its result inside (collapsed)."""

    DEFAULT_CSS = """
    ToolRow { margin: 0; } ToolRow.error CollapsibleTitle { color: $error; }
    ToolRow.running CollapsibleTitle { color: $warning; }
    """

    def __init__(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> None:
        self.call_id = call_id
        self.name_ = name
        self.summary = args_summary(arguments)
        self.body = Static("")
        self.status = "running"
        self.persisted: str | None = None
        super().__init__(self.body, title=self._heading(""), collapsed=True)
        self.add_class("running")

    def _heading(self, tail: str) -> str:
        return f"⚙ {self.name_}  {self.summary}  · {self.status}{tail}"

    def finish(self, content: str, *, is_error: bool, duration_ms: float | None) -> None:
        """The call ended; `duration_ms` None for a result read back from a session."""
        self.status = "error" if is_error else "ok"
        self.remove_class("running")
        if is_error:
            self.add_class("error")
        tail = f" · {duration_ms / 1000:.1f}s" if duration_ms is not None else ""
        found = PERSISTED_RE.search(content)
        if found:
            self.persisted = found.group(3).strip()
            tail += f" · persisted {int(found.group(1)) / 1024:.1f} KB (Ctrl+O: {self.persisted})"
        self.title = self._heading(tail)
        shown = content if len(content) <= 4000 else content[:4000] + "\n…"
        self.body.update(Text(shown))


class MarkerRow(Collapsible):
    """A compaction: a divider with the tokens before / after; the summary expands."""

    DEFAULT_CSS = "MarkerRow CollapsibleTitle { color: $secondary; text-style: bold; }"

    def __init__(self, before: int, after: int, summary: str = "") -> None:
        self.body = Static(Text(summary or "(summary stored in the session)"))
        title = f"── compacted: {before} → {after} tokens ──"
        super().__init__(self.body, title=title, collapsed=True)


class NoteRow(Static):
    """A line from tether itself (a command's output, a warning)."""

    DEFAULT_CSS = "NoteRow { color: $text-muted; padding: 0 1; }"

    def __init__(self, text: str) -> None:
        super().__init__(Text(text))


class StatusBar(Static):
    """The footer: model · context gauge · usage and cost · safe / approval state · activity."""

    DEFAULT_CSS = "StatusBar { dock: bottom; height: 1; background: $panel; padding: 0 1; }"


class PromptInput(TextArea):
    """The prompt editor: Enter sends (`Submitted`), Shift+Enter / Ctrl+J a new line, Up /
    Down walk the history from the first / last line, Tab completes (`complete`)."""

    DEFAULT_CSS = "PromptInput { height: auto; max-height: 10; min-height: 3; }"

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, complete: Callable[[str], str | None] | None = None) -> None:
        super().__init__(id="prompt", soft_wrap=True, show_line_numbers=False)
        self.prompts: list[str] = []
        self._at: int | None = None
        self._complete = complete

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            event.prevent_default()
            event.stop()
            text = self.text
            if text.strip():
                self.prompts.append(text)
                self._at = None
                self.clear()
                self.post_message(self.Submitted(text))
            return
        if key == "escape":  # the app's "cancel the request" (TextArea would take it)
            event.prevent_default()
            event.stop()
            await self.run_action("app.cancel_request")
            return
        if key in ("shift+enter", "ctrl+j"):
            event.prevent_default()
            event.stop()
            self.insert("\n")
            return
        if key == "tab" and self._complete is not None:
            event.prevent_default()
            event.stop()
            done = self._complete(self.text)
            if done is not None:
                self.text = done
                self.move_cursor(self.document.end)
            return
        row = self.cursor_location[0]
        if key == "up" and row == 0 and self.prompts:
            event.prevent_default()
            event.stop()
            self._at = len(self.prompts) - 1 if self._at is None else max(0, self._at - 1)
            self.text = self.prompts[self._at]
            self.move_cursor(self.document.end)
            return
        if key == "down" and self._at is not None and row == self.document.line_count - 1:
            event.prevent_default()
            event.stop()
            self._at += 1
            if self._at >= len(self.prompts):
                self._at = None
                self.text = ""
            else:
                self.text = self.prompts[self._at]
            self.move_cursor(self.document.end)
            return
        await super()._on_key(event)
