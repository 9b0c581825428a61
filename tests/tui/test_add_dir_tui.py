"""`/add-dir PATH[:ro]` in the interactive session: the folder joins `tools.add_dirs` from
the next call on; a missing one is a note, nothing changes."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, notes, scripted_app, send


async def test_add_dir_command(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await send(pilot, f"/add-dir {extra}:ro")
        await send(pilot, f"/add-dir {tmp_path / 'missing'}")
        await send(pilot, "/add-dir")
        await pilot.pause()
        assert app.agent.parts.config.tools.add_dirs == [f"{extra.resolve()}:ro"]
        policy = app.agent.tool_context.policy
        assert policy is not None and policy.add_dirs_ro == (str(extra.resolve()),)
        shown = notes(app)
        assert f"added {extra.resolve()}:ro" in shown
        assert "is not a folder" in shown
        assert f"extra folders: {extra.resolve()}:ro" in shown
