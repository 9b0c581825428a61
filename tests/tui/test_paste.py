"""A bracketed paste of several lines goes into the prompt as it is: its newlines kept, nothing
sent until Enter, then one message (Pilot here; a real terminal in test_tmux_paste.py)."""

from __future__ import annotations

from pathlib import Path

from textual import events

from kit.tui import SIZE, idle, scripted_app
from tether.tui.widgets import PromptInput, UserRow

PASTED = "first line\n    indented second\n\nfourth after a blank"


async def test_a_multi_line_paste_is_one_message_with_its_newlines(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["got it"])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "see: "
        prompt.move_cursor(prompt.document.end)
        app.post_message(events.Paste(PASTED))  # as the driver does: the app forwards it
        await pilot.pause()
        assert prompt.text == "see: " + PASTED
        assert len(provider.requests) == 0 and not app.query(UserRow)  # not sent at a newline
        await pilot.press("enter")
        await idle(app, pilot)
        assert [r.text for r in app.query(UserRow)] == ["see: " + PASTED]
    (request,) = provider.requests
    assert request.messages[-1].text == "see: " + PASTED
