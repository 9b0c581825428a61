"""Quick memory: `#text` in the TUI appends a line to the project's or the user's instruction
file (picked next), is no model turn, and `/memory` shows the file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kit.tui import SIZE, notes, scripted_app, send, until
from tether.tui.commands import Command, parse_command
from tether.tui.pickers import PickerScreen
from tether.tui.quick_memory import append_line, memory_targets
from tether.tui.widgets import PromptInput


def test_parse_and_targets(tmp_path: Path) -> None:
    assert parse_command("#use uv") == Command("#", "use uv")
    assert parse_command("# Title\nbody") is None  # a pasted Markdown text goes to the model
    (tmp_path / "CLAUDE.md").write_text("x")
    targets = memory_targets(tmp_path, ["AGENTS.md", "CLAUDE.md"], tmp_path / "cfg")
    assert targets == {"project": tmp_path / "CLAUDE.md", "user": tmp_path / "cfg" / "AGENTS.md"}
    append_line(tmp_path / "CLAUDE.md", "one")
    append_line(tmp_path / "new" / "AGENTS.md", "two")
    assert (tmp_path / "CLAUDE.md").read_text() == "x\none\n"
    assert (tmp_path / "new" / "AGENTS.md").read_text() == "two\n"


async def test_hash_appends_to_project_or_user_file_without_a_model_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "cfg"
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(cfg))
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nexit 0\n")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    project = tmp_path / "proj"
    project.mkdir()
    app, provider = scripted_app(project, ["unused"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "#use uv, not pip")
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("enter")  # project
        await until(pilot, lambda: "added to" in notes(app))
        assert (project / "AGENTS.md").read_text() == "use uv, not pip\n"
        assert "next one (/new) reads it" in notes(app)

        await send(pilot, "#answer in French")
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("down", "enter")  # user
        await until(pilot, lambda: (cfg / "AGENTS.md").is_file())
        assert (cfg / "AGENTS.md").read_text() == "answer in French\n"

        await send(pilot, "#never mind")
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("escape")
        await until(pilot, lambda: "not saved" in notes(app))
        assert app.query_one(PromptInput).text == "#never mind"
        assert "never mind" not in (project / "AGENTS.md").read_text()
        app.query_one(PromptInput).text = ""

        await send(pilot, "/memory")
        await until(pilot, lambda: "instruction files of this session" in notes(app))
        text = notes(app)
        assert f"{project / 'AGENTS.md'}  (#: read by the next session)" in text
        assert f"{cfg / 'AGENTS.md'}  (#: read by the next session)" in text
        assert len(provider.requests) == 0 and not app.agent.history
