"""A provider's failure in the TUI: said once, and the app goes on."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, idle, notes, scripted_app, send
from tether.providers.base import StreamError


async def test_a_provider_error_is_one_note(tmp_path: Path) -> None:
    failure = StreamError(kind="auth", message="the key was refused (401)", status_code=401)
    app, provider = scripted_app(tmp_path, [failure, "back again"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await idle(app, pilot)
        shown = notes(app)
        assert shown.count("the key was refused (401)") == 1, shown
        await send(pilot, "again")
        await idle(app, pilot)
    assert len(provider.requests) == 2
