"""A warning the agent emits while it is built, before the screen exists (`tether chat` builds
it in `preopen`: the unapproved-project warning), is shown in the transcript once the session
opens; it was a `display error on a warning event: ScreenStackError: No screens on stack`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.tui import SIZE, notes, scripted_app, until
from tether.agent.events import WarningEvent
from tether.agent.host import Host
from tether.tui.app import TetherApp
from tether.tui.opening import Opened

UNAPPROVED = "project /p: .tether/settings.json (changed) not approved; its settings are not loaded"


@pytest.mark.parametrize("preopen", [True, False], ids=["preopened", "opened-in-app"])
async def test_a_warning_from_before_the_screen_is_shown_once_it_exists(
    tmp_path: Path, preopen: bool
) -> None:
    scripted, _ = scripted_app(tmp_path, ["hi"])

    def factory(host: Host, resume: str | None) -> Opened:
        assert host.on_event is not None
        host.on_event(WarningEvent(kind="untrusted_project", message=UNAPPROVED))
        return scripted.opening.factory(host, resume)

    app = TetherApp(factory)
    if preopen:  # as `run_tui` does, before Textual owns the terminal
        app.preopen()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: UNAPPROVED in notes(app))
        assert f"warning: untrusted_project: {UNAPPROVED}" in notes(app)
        assert "display error" not in notes(app)
        assert notes(app).count(UNAPPROVED) == 1


@pytest.mark.parametrize("preopen", [True, False], ids=["preopened", "opened-in-app"])
async def test_a_warning_sent_as_a_note_and_an_event_shows_once(
    tmp_path: Path, preopen: bool
) -> None:
    # `Agent.from_settings` says the trust warning twice: as a setup note and as a `warning`
    # event (for stream-json); the transcript showed both
    scripted, _ = scripted_app(tmp_path, ["hi"])

    def factory(host: Host, resume: str | None) -> Opened:
        assert host.on_event is not None and host.note is not None
        host.note(f"warning: {UNAPPROVED}")
        host.on_event(WarningEvent(kind="untrusted_project", message=UNAPPROVED))
        return scripted.opening.factory(host, resume)

    app = TetherApp(factory)
    if preopen:
        app.preopen()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: UNAPPROVED in notes(app))
        await pilot.pause()
        assert notes(app).count(UNAPPROVED) == 1, notes(app)
