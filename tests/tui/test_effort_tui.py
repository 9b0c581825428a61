"""Reasoning effort in the interactive session: `/effort LEVEL`, Ctrl+T cycling it, the footer
showing it, the next request carrying it, and the one line for a model without reasoning."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, idle, notes, scripted_app, send, status


async def test_effort_command_key_and_footer(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["one", "two"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "effort" not in status(app)
        await send(pilot, "/effort high")
        assert "effort high" in status(app)
        await send(pilot, "hello")
        await idle(app, pilot)
        await pilot.press("ctrl+t")
        assert app.agent.parts.run.effort == "max" and "effort max" in status(app)
        await pilot.press("ctrl+t")
        assert app.agent.parts.run.effort is None and "effort" not in status(app)
        await send(pilot, "again")
        await idle(app, pilot)
        await send(pilot, "/effort extreme")
        await pilot.pause()
        assert "usage: /effort low|medium|high|max|default" in notes(app)
        # the scripted model does not reason: one line says so when a level is set
        assert "scripted has no reasoning to set" in notes(app)
    assert [r.effort for r in provider.requests] == ["high", None]
