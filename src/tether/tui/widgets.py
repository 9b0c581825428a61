"""The TUI's transcript rows and prompt editor (Textual widgets).

Owns: `UserRow`, `AssistantRow` (streamed text rendered as Markdown, code highlighted; updates
batched), `ThinkingRow` (dimmed, collapsible), `ToolRow` (collapsible: name, arguments
summary, status, duration; an edit's diff and its result inside; a persisted output's size and
path),
`MarkerRow` (a compaction divider with tokens before/after; the summary expands), `NoteRow`
and `PromptInput` (Enter sends, Shift+Enter / Ctrl+J new line, Up /
Down history, Tab completion).
Does not own: what the rows say (the app feeds them events), the agent, the footer
(`tether.tui.status`).
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static, TextArea

from tether.agent.subagents import TASK_TOOL
from tether.lsp.report import block_count
from tether.tools.preview import call_diff, diff_counts
from tether.tui.vim import Vim

PERSISTED_RE = re.compile(
    r'<persisted-output size_bytes="(\d+)" path="([^"]*)">'
    r"|\[(?:full|kept) output \((\d+) bytes, \d+ lines\) saved at ([^;\]]+)"
    r"|\[binary output: (\d+) bytes, sha256 \w+; saved to ([^;\]]+)"
)
"""A saved output's size and path: the `<persisted-output>` stub
(`tether.tools.exec.normalize.render_stub`), the older `[full output (…) saved at …]` line, a binary
output's notice (`tether.tools.exec.normalize.binary_notice`)."""


def saved_output(content: str) -> tuple[int, str, bool] | None:
    """(size in bytes, absolute path, binary) of the output file a tool result names, if any."""
    found = PERSISTED_RE.search(content)
    if found is None:
        return None
    if found.group(1) is not None:
        return int(found.group(1)), html.unescape(found.group(2)), False
    if found.group(3) is not None:
        return int(found.group(3)), found.group(4).strip(), False
    return int(found.group(5)), found.group(6).strip(), True


def args_summary(arguments: Mapping[str, Any], width: int = 60) -> str:
    """One line summing up a call's arguments: `path=a.py, limit=20` (cut at `width`)."""
    parts: list[str] = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={' '.join(str(text).split())}")
    line = ", ".join(parts)
    return line if len(line) <= width else line[: width - 1] + "…"


INTERRUPTED_ROW = (
    "interrupted: tether stopped before this call finished (it may have had effects); the model "
    "is told so with your next message"
)
"""What a resumed transcript shows for a call that has no result."""

class UserRow(Static):
    """A user message (`queued` while it waits for the next turn boundary)."""

    DEFAULT_CSS = """
    UserRow { margin: 1 0 0 0; padding: 0 1; border-left: thick $accent; }
    UserRow.queued { color: $text-muted; border-left: thick $warning; }
    """

    def __init__(
        self, text: str, *, queued: bool = False, images: Sequence[str] = ()
    ) -> None:
        self.text = text
        self.images = tuple(images)
        super().__init__(self._body(queued))
        if queued:
            self.add_class("queued")

    def _body(self, queued: bool) -> Text:
        body = Text(self.text + ("  (queued)" if queued else ""))
        if self.images:  # the image chips, on a line of their own
            body.append(("\n" if self.text else "") + "  ".join(self.images), style="bold")
        return body

    def sent(self) -> None:
        """The queued message was injected."""
        self.remove_class("queued")
        self.update(self._body(False))


def wrap_lines(text: str, width: int, base: int = 0) -> list[tuple[int, str]]:
    """`text` word-wrapped to `width` cells: (offset of the line in `text` + `base`, line).

    Greedy: a line breaks at its last space that fits (the space is dropped), a word longer
    than `width` is cut; each `\\n` ends a line. Pure."""
    width = max(width, 1)
    out: list[tuple[int, str]] = []
    pos = 0
    for hard in text.split("\n"):
        i, n = 0, len(hard)
        if n == 0:
            out.append((base + pos, ""))
        while i < n:
            j, cells, space = i, 0, -1
            while j < n:
                w = cell_len(hard[j])
                if cells + w > width:
                    break
                if hard[j] == " ":
                    space = j
                cells += w
                j += 1
            if j < n and space > i:
                out.append((base + pos + i, hard[i:space]))
                i = space + 1
            else:
                j = max(j, i + 1)
                out.append((base + pos + i, hard[i:j]))
                i = j
        pos += n + 1
    return out


class StreamTail(Widget):
    """The streamed text not yet rendered as Markdown, as plain word-wrapped lines (Textual's
    line API). Appending re-wraps only the last line and repaints only the changed lines, so
    a long paragraph streams in time proportional to the new text, not to the paragraph."""

    DEFAULT_CSS = "StreamTail { height: auto; }"

    def __init__(self) -> None:
        super().__init__()
        self.text = ""
        self._lines: list[tuple[int, str]] = []
        self._width = 0

    def _wrap(self, width: int) -> None:
        if width != self._width:
            self._width = width
            self._lines = wrap_lines(self.text, width)

    def set_text(self, text: str) -> None:
        """Replace the text (e.g. after its finished blocks went to the Markdown)."""
        self.text = text
        self._lines = wrap_lines(text, self._width) if self._width else []
        self.display = bool(text)
        self.refresh(layout=True)

    def append(self, delta: str) -> None:
        """Add streamed text: only the last line is wrapped again."""
        if not delta:
            return
        self.text += delta
        if not self.display:
            self.display = True
        if not self._width:
            self.refresh(layout=True)
            return
        start = self._lines[-1][0] if self._lines else 0
        first = max(len(self._lines) - 1, 0)
        before = len(self._lines)
        self._lines[first:] = wrap_lines(self.text[start:], self._width, start)
        if len(self._lines) != before:
            self.refresh(layout=True)
        else:
            self.refresh(Region(0, first, self.size.width, len(self._lines) - first))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._wrap(width)
        return len(self._lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        self._wrap(width)
        style = self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, style)
        return Strip([Segment(self._lines[y][1], style)]).extend_cell_length(width, style)


def block_end(text: str) -> int:
    """Where the last finished Markdown block of streamed `text` ends (0: none yet): after its
    last blank line outside a fenced code block, or after a closing fence. Pure."""
    end = 0
    fence: str | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith("\n"):
            break  # the line is still streaming
        stripped = line.strip()
        marker = stripped[:3]
        if fence is None and marker in ("```", "~~~"):
            fence = marker
        elif fence is not None and stripped.startswith(fence):
            fence = None
            end = pos
        elif fence is None and not stripped:
            end = pos
    return end


class AssistantRow(Widget):
    """Assistant text, as Markdown (code highlighted). Streamed (`streaming=True`): deltas
    collect (`add`) and are shown at most ~20 times a second (`flush`): the finished blocks go
    to the Markdown (Textual parses only its last block again), the block still streaming is
    shown as plain lines (`StreamTail`) until it ends."""

    DEFAULT_CSS = """
    AssistantRow { height: auto; margin: 1 0 0 0; padding: 0 1; }
    AssistantRow > Markdown { padding: 0; }
    """

    def __init__(self, text: str = "", *, streaming: bool = False) -> None:
        super().__init__()
        self.text = text
        self._pending = ""
        self._final = False
        self.markdown = Markdown(text)
        self.tail = StreamTail() if streaming else None

    def compose(self) -> ComposeResult:
        yield self.markdown
        if self.tail is not None:
            yield self.tail

    def on_mount(self) -> None:
        if self._final:
            self.flush(final=True)

    def add(self, delta: str) -> None:
        self.text += delta
        self._pending += delta

    def flush(self, final: bool = True) -> bool:
        """Show what arrived since the last flush; `final`: the text is complete (all of it
        goes to the Markdown). Returns whether anything changed. Before the row is mounted
        nothing is shown (the Markdown would drop it); a final flush then runs on mount."""
        if not self.markdown.is_mounted:
            self._final = self._final or final
            return False
        tail = self.tail
        if tail is None:
            if self._pending:
                chunk, self._pending = self._pending, ""
                self.markdown.append(chunk)
                return True
            return False
        text = tail.text + self._pending
        self._pending = ""
        end = len(text) if final else block_end(text)
        if end:
            self.markdown.append(text[:end])
            tail.set_text(text[end:])
            return True
        if text != tail.text:
            tail.append(text[len(tail.text) :])
            return True
        return False


class ThinkingRow(Collapsible):
    """The model's thinking, dimmed, collapsed by default."""

    DEFAULT_CSS = "ThinkingRow { color: $text-muted; } ThinkingRow Static { text-style: italic; }"

    def __init__(self, text: str = "") -> None:
        self.body = Static(Text(text))
        self.text = text
        self._dirty = False
        super().__init__(self.body, title="thinking", collapsed=True)

    def add(self, delta: str) -> None:
        self.text += delta
        self._dirty = True

    def flush(self) -> None:
        """Show the thinking streamed since the last flush."""
        if self._dirty:
            self._dirty = False
            self.body.update(Text(self.text))


class ToolRow(Collapsible):
    """One tool call: `name  args · status · duration`, its result inside (collapsed). A
    persisted output's size and path are in the title (`o` on the focused row opens the
    file). A `write` / `edit` call shows the change its arguments state (`call_diff`: the
    same whether the row is built live or from a stored session; `+added −removed` in the
    title), and the count of a language server's diagnostics its result carries. A `task` call holds its subagent's rows (`nest`) above its result."""

    DEFAULT_CSS = """
    ToolRow { margin: 0; } ToolRow.error CollapsibleTitle { color: $error; }
    ToolRow.running CollapsibleTitle { color: $warning; }
    ToolRow > Contents > .steps { height: auto; border-left: solid $secondary; padding: 0 0 0 1; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("o", "open_output", "open output", show=False),
    ]

    def __init__(
        self, call_id: str, name: str, arguments: Mapping[str, Any], *, diff: str | None = None
    ) -> None:
        """`diff`: the change against the file as it was (the live feed reads it for a `write`
        before the call runs: an overwrite then counts the lines it replaces); None: the
        change the arguments state (`call_diff`)."""
        self.call_id = call_id
        self.name_ = name
        self.summary = args_summary(arguments)
        self.body = Static("")
        self.status = "waiting"  # until its `tool_start` event: then "running"
        self._started_at: float | None = None  # `time.perf_counter()` at its `tool_start`
        self.persisted: str | None = None
        self.agent_path: tuple[str, ...] | None = None
        self.steps_count = 0
        self._tail = ""
        self.steps: Vertical | None = None
        self._waiting: list[Widget] = []
        children: list[Widget] = [self.body]
        self.diff = diff if diff is not None else call_diff(name, arguments)
        self._change = ""
        if self.diff is not None:
            added, removed = diff_counts(self.diff)
            self._change = f"  +{added} −{removed}"
            children.insert(0, Static(Syntax(self.diff, "diff", theme="ansi_dark"), classes="diff"))
        if name == TASK_TOOL:
            self.steps = Vertical(classes="steps")
            children.insert(0, self.steps)
        super().__init__(*children, title=self._heading(""), collapsed=True)
        self.add_class("running")

    def _heading(self, tail: str) -> str:
        agent = ""
        if self.agent_path is not None:
            agent = f"  · {'/'.join(self.agent_path)}: {self.steps_count} steps"
        return f"⚙ {self.name_}  {self.summary}{self._change}  · {self.status}{tail}{agent}"

    def nest(self, row: Widget, agent_path: tuple[str, ...], *, step: bool) -> None:
        """Show `row` (the subagent's text, tool call or note) inside this `task` row."""
        if self.steps is None:
            return
        self.agent_path = agent_path
        self.steps_count += step
        self.title = self._heading(self._tail)
        if self.steps.is_mounted and not self._waiting:
            self.steps.mount(row)
        else:  # the row itself is still being mounted: after the rows nested before it
            self._waiting.append(row)

    def on_mount(self) -> None:
        if self.steps is not None and self._waiting:
            rows, self._waiting = self._waiting, []
            self.steps.mount_all(rows)

    def start(self) -> None:
        """The call runs now (its `tool_start`): before, it waited for approval or a call."""
        self.status = "running"
        self._started_at = time.perf_counter()
        self.title = self._heading(self._tail)

    def interrupted(self) -> None:
        """A call read back without a result (a `kill -9` or a crash stopped tether while it
        ran): `· interrupted`, not `· waiting` forever; the model is told the same with the
        next message (`tether.agent.sessions.STARTED_LOST`)."""
        self.finish(INTERRUPTED_ROW, is_error=True, duration_ms=None)
        self.status = "interrupted"
        self.title = self._heading(self._tail)

    def finish(self, content: str, *, is_error: bool, duration_ms: float | None) -> None:
        """The call ended; `duration_ms` None for a result read back from a session. The
        duration shown is the call's own run time, from its `tool_start` (the event's
        `duration_ms` also counts the time it waited for approval or another call); a call
        that never ran (refused, denied, skipped) shows none."""
        self.status = "error" if is_error else "ok"
        self.remove_class("running")
        if is_error:
            self.add_class("error")
        if duration_ms is not None:
            began = self._started_at
            duration_ms = None if began is None else (time.perf_counter() - began) * 1e3
        tail = f" · {duration_ms / 1000:.1f}s" if duration_ms is not None else ""
        saved = saved_output(content)
        if saved is not None:
            size, self.persisted, binary = saved
            what = "binary" if binary else "persisted"
            tail += f" · {what} {size / 1024:.1f} KB (o: open {self.persisted})"
        diagnostics = block_count(content)  # a language server's findings (`tether.lsp`)
        if diagnostics is not None:
            count, new = diagnostics
            tail += f" · {count} diagnostic{'' if count == 1 else 's'}"
            tail += f" ({new} new)" if new else ""
        self._tail = tail
        self.title = self._heading(tail)
        shown = content if len(content) <= 4000 else content[:4000] + "\n…"
        self.body.update(Text(shown))

    def action_open_output(self) -> None:
        """`o`: open the persisted output file in the viewer."""
        if self.persisted is None:
            self.notify("this tool call has no saved output file")
            return
        from tether.tui.viewer import FileViewer

        self.app.push_screen(FileViewer(Path(self.persisted)))  # pyright: ignore[reportUnknownMemberType]


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


class PromptInput(TextArea):
    """The prompt editor: Enter sends (`Submitted`), Shift+Enter / Ctrl+J a new line, Up /
    Down walk the history from the first / last line, Tab completes (`complete`), PageUp /
    PageDown scroll the transcript; while the completion list shows, `menu_key` takes its
    keys first (Up / Down / Tab / Enter / Esc: `tether.tui.completion.menu_key`)."""

    DEFAULT_CSS = "PromptInput { height: auto; max-height: 10; min-height: 3; }"

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(
        self,
        complete: Callable[[str], str | None] | None = None,
        pasted: Callable[[str], bool] | None = None,
        menu_key: Callable[[str], bool] | None = None,
    ) -> None:
        super().__init__(id="prompt", soft_wrap=True, show_line_numbers=False)
        self.prompts: list[str] = []
        self._at: int | None = None
        self._complete = complete
        self._pasted = pasted
        self._menu_key = menu_key
        self.vim: Vim | None = None  # vim mode (`tether.tui.vim`)

    def move_cursor_to_end(self) -> None:
        self.move_cursor(self.document.end)

    def set_vim(self, on: bool) -> None:
        """Vim mode on (insert mode first) or off."""
        self.vim = Vim() if on else None
        self.border_title = "-- INSERT --" if on else None

    async def _on_paste(self, event: events.Paste) -> None:
        """A paste `pasted` takes (an image file's path: attached) is not inserted; any other
        goes on to TextArea's handler (Textual dispatches along the class hierarchy)."""
        if self._pasted is not None and self._pasted(event.text):
            event.prevent_default()
            event.stop()

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self.vim is not None and self.vim.key(self, key, event.character):
            event.prevent_default()
            event.stop()
            return
        if self._menu_key is not None and self._menu_key(key):  # the completion list's key
            event.prevent_default()
            event.stop()
            return
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
        if key in ("pageup", "pagedown"):  # the transcript's (the editor is a few lines)
            event.prevent_default()
            event.stop()
            await self.run_action(f"app.transcript_page({-1 if key == 'pageup' else 1})")
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
