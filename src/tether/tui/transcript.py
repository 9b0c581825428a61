"""The TUI's transcript: a scrolling column of rows that mounts only a window of the past.

Owns: `Transcript`, the scrolling column (the row makers of a stored history:
`tether.tui.rows.history_rows`). Past rows (a resumed session's) are mounted a page at a
time: the last page at start; scrolling near the top mounts the page before it (the view keeps
its place), near the bottom the page after it; at most `MAX_PAGES` pages are mounted (the
farthest page is unmounted), so a 10,000-turn session costs what a few dozen rows cost.
Ctrl+Home / Ctrl+End jump to the first / last page. Live rows (this run's) are always mounted
after the past; while the window is away from the end of the past they are hidden. New rows
scroll the view to the end only when it is following it (`follow`: it reached the end and the
user has not scrolled up since).
Does not own: what a row shows (`tether.tui.widgets`), turning events into rows (the app).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible

from tether.tui.rows import RowMaker

PAGE = 30
"""Past rows mounted or unmounted at a time."""
FIRST_PAGE = 20
"""Past rows mounted when a session opens (about a screenful)."""
EDGE = 3
"""Lines from the top / bottom of what is mounted at which the next page is mounted (it is
mounted at once when the rows do not fill the view: there is nothing to scroll)."""
MAX_PAGES = 3
"""Past rows mounted at most: `PAGE * MAX_PAGES`."""

class Transcript(VerticalScroll):
    """The transcript column (see the module docstring)."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; padding: 0 1; }
    Transcript.away > .live { display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.past: list[RowMaker] = []
        self.lo = 0
        self.hi = 0
        """The past rows mounted: `past[lo:hi]`."""
        self.mounted: list[Widget] = []
        self._moving = False
        self._pinned = True
        """The view follows the end: set when it reaches the end, cleared only when it moves
        up away from it (the user scrolled). A row that grows after it was laid out (a huge
        `!cmd` output) leaves the view above the new end without ending the following."""

    # -- rows ----------------------------------------------------------------------------

    @property
    def at_end(self) -> bool:
        """The window holds the end of the past (the live rows are shown)."""
        return self.hi == len(self.past)

    def add(self, row: Widget) -> None:
        """Mount a live row at the end; scroll to it if the view was at the end."""
        row.add_class("live")
        follow = self.following
        self.mount(row)
        if follow:
            self.scroll_end(animate=False)

    def to_end(self, row: Widget) -> None:
        """Move a live row to the end: a queued message taken at a turn boundary goes after
        what the agent wrote before it took it (it was typed, and shown, earlier)."""
        if row.parent is self and self.children and self.children[-1] is not row:
            follow = self.following
            self.move_child(row, after=self.children[-1])
            if follow:
                self.scroll_end(animate=False)

    @property
    def following(self) -> bool:
        """The view shows, or follows, the end of the transcript."""
        return self.at_end and (self._pinned or self.scroll_y >= self.max_scroll_y - 1)

    def follow(self) -> None:
        """Scroll to the end if the view is there (after a row grew)."""
        if self.following:
            self.scroll_end(animate=False)

    async def show_history(self, makers: list[RowMaker]) -> None:
        """Replace everything with a stored history: its last page mounted, view at the end."""
        await self.clear()
        self.past = makers
        self.hi = len(makers)
        self.lo = max(0, self.hi - FIRST_PAGE)
        self.mounted = [make() for make in makers[self.lo : self.hi]]
        if self.mounted:
            await self.mount_all(self.mounted)
        self.call_after_refresh(self._settle)

    def _settle(self, tries: int = 10) -> None:
        """Once the rows are laid out: at the end, then mount more only if there is nothing
        to scroll."""
        if self.lo > 0 and self.max_scroll_y == 0 and tries:  # not laid out yet (or short)
            self.set_timer(0.1, lambda: self._settle(tries - 1))
            return
        self.scroll_end(animate=False, immediate=True)
        self._check()

    async def clear(self) -> None:
        """Remove every row."""
        await self.remove_children()
        self.past, self.mounted, self.lo, self.hi = [], [], 0, 0
        self._pinned = True
        self.remove_class("away")

    # -- windowing -----------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value >= self.max_scroll_y - 1:
            self._pinned = True
        elif new_value < old_value:
            self._pinned = False
        self._check()

    def on_mouse_scroll_up(self) -> None:
        self._check()  # at the top already: the wheel changes no scroll position

    def check(self) -> None:
        """Mount the page before / after the window if the view is at its top / bottom
        (after a key that scrolls)."""
        self._check()

    def page(self, pages: int) -> None:
        """Scroll a page up (`pages` < 0) or down (PageUp / PageDown in the editor)."""
        if pages < 0:
            self.scroll_page_up(animate=False)
        else:
            self.scroll_page_down(animate=False)
        self.check()

    def toggle_last(self) -> None:
        """Fold or unfold the last foldable row (Ctrl+O)."""
        rows = list(self.query(Collapsible))
        if rows:
            rows[-1].collapsed = not rows[-1].collapsed

    def _check(self) -> None:
        """Mount the page before / after the window when the view nears its top / bottom."""
        if self._moving or not self.past:
            return
        if self.lo > 0 and self.scroll_y < EDGE:
            self._start(self._earlier())
        elif not self.at_end and self.scroll_y > self.max_scroll_y - EDGE:
            self._start(self._later())

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        self._moving = True

        async def run() -> None:
            try:
                await work
            finally:
                self._moving = False
            self.call_after_refresh(self._check)

        self.run_worker(run(), group="transcript-pages", exclusive=False)

    async def _refreshed(self) -> None:
        """Wait until the layout includes the last changes."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.call_after_refresh(lambda: done.done() or done.set_result(None))
        await done

    def _anchor(self) -> tuple[Widget, float] | None:
        """A mounted past row in view and its distance from the view's top (lines)."""
        top = self.scroll_y
        for row in self.mounted:
            region = row.virtual_region
            if region.bottom > top:
                return row, region.y - top
        return None

    async def _restore(self, anchor: tuple[Widget, float] | None) -> None:
        if anchor is None:
            return
        await self._refreshed()
        row, offset = anchor
        if row.is_attached:
            self.scroll_to(y=row.virtual_region.y - offset, animate=False, immediate=True)

    async def _earlier(self) -> None:
        anchor = self._anchor()
        lo = max(0, self.lo - PAGE)
        rows = [make() for make in self.past[lo : self.lo]]
        if self.mounted:
            await self.mount_all(rows, before=self.mounted[0])
        else:
            await self.mount_all(rows, before=0)
        self.mounted[0:0] = rows
        self.lo = lo
        extra = len(self.mounted) - PAGE * MAX_PAGES
        if extra > 0:  # below the view: the view's place does not move
            gone, self.mounted = self.mounted[-extra:], self.mounted[:-extra]
            self.hi -= extra
            self.add_class("away")
            await self.remove_children(gone)
        await self._restore(anchor)

    async def _later(self) -> None:
        hi = min(len(self.past), self.hi + PAGE)
        rows = [make() for make in self.past[self.hi : hi]]
        if self.mounted:
            await self.mount_all(rows, after=self.mounted[-1])
        else:
            await self.mount_all(rows, before=0)
        self.mounted.extend(rows)
        self.hi = hi
        if self.at_end:
            self.remove_class("away")
        extra = len(self.mounted) - PAGE * MAX_PAGES
        if extra > 0:  # above the view: keep the rows in view where they are
            gone, self.mounted = self.mounted[:extra], self.mounted[extra:]
            anchor = self._anchor()
            self.lo += extra
            await self.remove_children(gone)
            await self._restore(anchor)

    async def _window(self, lo: int, hi: int) -> None:
        """Mount exactly `past[lo:hi]`."""
        if self.mounted:
            await self.remove_children(self.mounted)
        self.lo, self.hi = lo, hi
        self.mounted = [make() for make in self.past[lo:hi]]
        if self.mounted:
            await self.mount_all(self.mounted, before=0)
        self.set_class(not self.at_end, "away")
        await self._refreshed()

    async def jump_start(self) -> None:
        """Show the first row of the transcript (Ctrl+Home)."""
        self._moving = True
        try:
            if self.lo > 0:
                await self._window(0, min(PAGE, len(self.past)))
            self.scroll_home(animate=False, immediate=True)
        finally:
            self._moving = False

    async def jump_end(self) -> None:
        """Show the end of the transcript (Ctrl+End)."""
        self._moving = True
        try:
            if not self.at_end:
                await self._window(max(0, len(self.past) - PAGE), len(self.past))
            self.scroll_end(animate=False, immediate=True)
        finally:
            self._moving = False
