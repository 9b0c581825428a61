"""A provider's failure in the TUI: said once, and the app goes on."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, idle, notes, scripted_app, send
from tether.providers.base import StreamError
from tether.testing import call
from tether.tools.base import tool


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


@tool(safe=True)
def dump() -> str:
    """A tool whose output is large for the window."""
    return "data " * 700  # ~875 tokens


async def test_a_context_overflow_names_the_way_out(tmp_path: Path) -> None:
    """trial4: `context_overflow: runaway guard … 112 %` came back on every message and named
    no way out; the note now says how to go on."""
    app, provider = scripted_app(
        tmp_path,
        [call("dump") for _ in range(12)] + ["done"],
        tools=[dump],
        settings={"context": {"auto_compact": False}},
    )
    provider.context_window = 4_000
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await idle(app, pilot)
        shown = notes(app)
        assert "context_overflow" in shown, shown
        assert "/rewind to before the message" in shown and "/compact" in shown
