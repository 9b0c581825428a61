"""A tool row's state follows the call (issue 39): `waiting` while it is asked about or queued
behind another call, `running` from its `tool_start` event, then `ok` / `error`."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from kit.tui import SIZE, idle, scripted_app, send
from tether.testing import call
from tether.tools.base import tool
from tether.tui.screens import ApprovalScreen
from tether.tui.widgets import ToolRow


async def test_the_row_waits_while_asked_then_runs_then_finishes(tmp_path: Path) -> None:
    running, release = asyncio.Event(), asyncio.Event()

    @tool()  # not safe: `ask` asks about it
    async def build() -> str:
        """Build."""
        running.set()
        await release.wait()
        return "built"

    app, _ = scripted_app(tmp_path, [call("build"), "done"], tools=[build], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "build it")
        for _ in range(200):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen):
                break
        assert isinstance(app.screen, ApprovalScreen)
        row = app.query_one(ToolRow)
        assert row.status == "waiting" and "· waiting" in str(row.title)
        await pilot.press("y")
        await asyncio.wait_for(running.wait(), 10)
        for _ in range(50):
            await pilot.pause()
            if row.status == "running":  # pyright: ignore[reportUnnecessaryComparison]  # it changes while the app runs; pyright keeps the assert's narrowing across the await
                break
        assert row.status == "running" and "· running" in str(row.title)
        release.set()
        await idle(app, pilot)
        assert row.status == "ok"


async def test_the_rows_duration_is_the_calls_own_run_time_not_the_approval_wait(
    tmp_path: Path,
) -> None:
    @tool()  # not safe: `ask` asks about it
    async def quick() -> str:
        """Quick."""
        return "done quickly"

    app, _ = scripted_app(tmp_path, [call("quick"), "done"], tools=[quick], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "run it")
        for _ in range(200):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen):
                break
        assert isinstance(app.screen, ApprovalScreen)
        await asyncio.sleep(1.5)  # the user thinks before answering
        await pilot.press("y")
        await idle(app, pilot)
        row = app.query_one(ToolRow)
        assert row.status == "ok"
        found = re.search(r"· ok · ([0-9.]+)s", str(row.title))
        assert found is not None, row.title
        assert float(found.group(1)) < 1.0, row.title  # it was 1.9s: the wait counted


async def test_a_call_without_a_result_reads_back_as_interrupted(tmp_path: Path) -> None:
    """trial4: after `kill -9` mid-tool, `tether chat -c` showed the killed call as `· waiting`
    forever (the model is told it was interrupted); the row says so too."""
    from tether.messages import ToolCallBlock, Turn, text_turn
    from tether.session import SessionStore

    store = SessionStore(tmp_path / "sessions")
    with store.create("killed", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "run it"))
        c = ToolCallBlock(id="c1", name="bash", arguments={"command": "sleep 100"})
        w.append(Turn(id="a1", role="assistant", content=(c,)))
    app, _ = scripted_app(tmp_path, [], store=store, resume="killed")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        row = app.query_one(ToolRow)
        assert row.status == "interrupted" and "· interrupted" in str(row.title)
        assert "waiting" not in str(row.title)


async def test_overwriting_a_file_counts_the_replaced_lines(tmp_path: Path) -> None:
    """trial4: `write rw1.txt` "one" → "two" showed `+1 −0`; the replaced line counts now."""
    (tmp_path / "rw1.txt").write_text("one\n")
    script = [call("write", path="rw1.txt", content="two\n"), call("write", path="new.txt", content="a\nb\n"), "done"]
    app, _ = scripted_app(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "overwrite it")
        await idle(app, pilot)
        first, second = app.query(ToolRow)
        assert "+1 −1" in str(first.title), first.title
        assert "+2 −0" in str(second.title), second.title
        assert (tmp_path / "rw1.txt").read_text() == "two\n"
