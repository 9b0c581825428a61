"""The approval prompt over a full transcript (`/help` just shown): it spans the screen's width
at its bottom, so no transcript line is cut by it; centred at 90% of the width, the help text
showed through at both sides (`!com█ Allow bash…█`), fragments a user took for leftovers."""

from __future__ import annotations

from pathlib import Path

from textual.containers import Vertical

from kit.tui import SIZE, scripted_app, send, until
from tether.testing import call
from tether.tui.screens import ApprovalScreen


async def test_the_approval_prompt_cuts_no_transcript_line(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [call("bash", command="echo hi"), "done"], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/help")
        await send(pilot, "run it")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.pause()
        box = app.screen.query_one(Vertical).region
        width, height = SIZE
        assert box.x == 0 and box.width == width, box  # whole lines: nothing beside it
        assert box.bottom == height, box  # at the bottom, over the prompt, like an inline ask
        assert box.height < height  # the transcript above it stays in view
        await pilot.press("n")
        await pilot.press("enter")
