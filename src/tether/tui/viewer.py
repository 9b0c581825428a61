"""A read-only viewer for a tool call's saved output file (`o` on a tool row).

Owns: `read_page` (pure over a file: one page of at most `PAGE_BYTES` bytes from an offset,
cut at line ends; binary files are named, not shown) and `FileViewer`, the screen: the first
page of the file, PageDown / `n` the next page, PageUp / `p` the previous, Home / End the
first / last page, Esc / `q` close. Only one page is ever read into memory, so a 1 GB output
opens as fast as a 1 KB one.
Does not own: where outputs are saved (`tether.tools.exec.persist`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tether.tools.builtin.files import SNIFF_BYTES

PAGE_BYTES = 64 * 1024
"""The bytes shown at once."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a file: `text` covers bytes [start, end) of `size`; `binary` files have no
    text; `error` says why the file could not be read."""

    start: int
    end: int
    size: int
    text: str = ""
    binary: bool = False
    error: str | None = None


def _is_binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # not just a character cut at the sniff's end
    return False


def read_page(path: Path, start: int = 0, page_bytes: int = PAGE_BYTES) -> Page:
    """The page of `path` from byte `start` (clamped to the file), at most `page_bytes` bytes,
    extended back to the previous line start and cut at the last line end when there is one
    (the page ends at `start + page_bytes` or before).
    Never raises: an unreadable file is a `Page` with `error`."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            if _is_binary(f.read(SNIFF_BYTES)):
                return Page(0, 0, size, binary=True)
            start = max(0, min(start, max(size - 1, 0)))
            stop = start + page_bytes
            if start > 0:
                back = min(start, 4096)
                f.seek(start - back)
                newline = f.read(back).rfind(b"\n")
                if newline >= 0:
                    start = start - back + newline + 1
            f.seek(start)
            data = f.read(stop - start)
    except OSError as exc:
        return Page(0, 0, 0, error=f"{type(exc).__name__}: {exc.strerror or exc}")
    end = start + len(data)
    if end < size and b"\n" in data:
        data = data[: data.rindex(b"\n") + 1]
        end = start + len(data)
    return Page(start, end, size, data.decode("utf-8", errors="replace"))


class FileViewer(ModalScreen[None]):
    """Shows a saved output file a page at a time (read-only)."""

    DEFAULT_CSS = """
    FileViewer { align: center middle; }
    FileViewer > Vertical { width: 95%; height: 95%; border: thick $accent; background: $surface; }
    FileViewer #where { color: $text-muted; height: auto; }
    FileViewer #page { height: 1fr; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("escape,q", "close", "close"),
        Binding("pagedown,n", "next", "next page", priority=True),
        Binding("pageup,p", "previous", "previous page", priority=True),
        Binding("home,g", "first", "first page", priority=True),
        Binding("end,G", "last", "last page", priority=True),
    ]

    def __init__(self, path: Path, page_bytes: int = PAGE_BYTES) -> None:
        super().__init__()
        self.path = path
        self.page_bytes = page_bytes
        self.page = read_page(path, 0, page_bytes)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="where")
            with VerticalScroll(id="page"):
                yield Static("", id="text")

    def on_mount(self) -> None:
        self._show()

    def _show(self) -> None:
        page = self.page
        where = self.query_one("#where", Static)
        text = self.query_one("#text", Static)
        if page.error is not None:
            where.update(Text(f"{self.path}: cannot read it ({page.error})  · Esc closes"))
            text.update("")
            return
        if page.binary:
            where.update(Text(f"{self.path}  · Esc closes"))
            text.update(Text(f"binary file, {page.size} bytes: not shown"))
            return
        where.update(
            Text(
                f"{self.path}  bytes {page.start}–{page.end} of {page.size}  "
                "· n/PgDn next · p/PgUp previous · Home/End first/last · ↑↓ scroll · Esc closes"
            )
        )
        text.update(Text(page.text))
        self.query_one("#page", VerticalScroll).scroll_home(animate=False)

    def _go(self, start: int) -> None:
        self.page = read_page(self.path, start, self.page_bytes)
        self._show()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_next(self) -> None:
        if self.page.end < self.page.size:
            self._go(self.page.end)

    def action_previous(self) -> None:
        if self.page.start > 0:
            self._go(max(0, self.page.start - self.page_bytes))

    def action_first(self) -> None:
        self._go(0)

    def action_last(self) -> None:
        self._go(max(0, self.page.size - self.page_bytes))
