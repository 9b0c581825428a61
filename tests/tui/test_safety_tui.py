"""The safety net in the interactive session (Textual pilot over the scripted provider):
Shift+Tab through the modes, `/plan` and the plan approval, the todo panel, "always allow"
writing the rule, `/rewind` and Esc Esc with the picker."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kit.tui import SIZE, idle, notes, scripted_app, send, status
from tether.session import SessionStore
from tether.testing import call
from tether.tui.safety import PLAN_APPROVED, PlanScreen, RewindScreen, TodoPanel
from tether.tui.screens import ApprovalScreen
from tether.tui.widgets import PromptInput


async def test_shift_tab_cycles_ask_auto_edit_plan(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, ["hi"], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "approval: ask" in status(app)
        await pilot.press("shift+tab")
        assert "approval: auto-edit" in status(app)
        await pilot.press("shift+tab")
        assert "PLAN" in status(app) and app.agent.plan_mode
        await pilot.press("shift+tab")
        assert "approval: ask" in status(app) and not app.agent.plan_mode


async def test_plan_then_approve_in_auto_edit(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["1. read\n2. write", "done"], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/plan add a feature")
        await idle(app, pilot)
        assert isinstance(app.screen, PlanScreen)
        assert "write" not in {t.name for t in provider.requests[0].tools}
        await pilot.press("2")
        await idle(app, pilot)
        assert not app.agent.plan_mode and app.agent.approval_mode == "auto-edit"
        assert provider.requests[1].messages[-1].text == PLAN_APPROVED
        assert "write" in {t.name for t in provider.requests[1].tools}


async def test_the_todo_panel_shows_the_latest_list(tmp_path: Path) -> None:
    items = [{"text": "write tests", "status": "done"}, {"text": "ship", "status": "pending"}]
    app, _ = scripted_app(tmp_path, [call("todo", items=items), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(TodoPanel)
        assert not panel.has_class("shown")
        await send(pilot, "go")
        await idle(app, pilot)
        assert panel.has_class("shown")
        text = str(panel.render())
        assert "todo 1/2" in text and "[x] write tests" in text and "[ ] ship" in text


async def test_always_allow_writes_the_rule_to_the_user_settings(tmp_path: Path) -> None:
    script = [call("write", path="lib/a.txt", content="1"), call("write", path="lib/b.txt", content="2"), "done"]
    app, _ = scripted_app(tmp_path, script, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        for _ in range(200):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen):
                break
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.request.suggested == ("write(lib/**)",)
        await pilot.press("r")
        await idle(app, pilot)
        assert not isinstance(app.screen, ApprovalScreen)  # the second write was not asked
        assert (tmp_path / "lib" / "b.txt").read_text() == "2"
        assert "always allowed: write(lib/**)" in notes(app)
    saved = Path(os.environ["TETHER_CONFIG_DIR"]) / "settings.json"
    assert json.loads(saved.read_text())["permissions"]["allow"] == ["write(lib/**)"]


async def test_rewind_picker_restores_files_forks_and_puts_the_message_back(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "data" / "sessions")
    work = tmp_path / "work"
    work.mkdir()
    script = [
        call("write", path="a.txt", content="one"), "ok",
        call("write", path="a.txt", content="two"), "ok",
    ]
    app, _ = scripted_app(work, script, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "first")
        await idle(app, pilot)
        await send(pilot, "second")
        await idle(app, pilot)
        await pilot.press("escape")
        await pilot.press("escape")  # Esc Esc when idle
        await pilot.pause()
        assert isinstance(app.screen, RewindScreen)
        await pilot.pause()
        assert "modified" in str(app.screen.query_one("#changes").render())
        await pilot.press("enter")  # the newest message: "second"
        await idle(app, pilot)
        for _ in range(100):
            await pilot.pause()
            if app.query_one(PromptInput).text:
                break
        assert (work / "a.txt").read_text() == "one"
        assert app.query_one(PromptInput).text == "second"
        assert len(store.list()) == 2 and "forked" in notes(app)


async def test_the_rewind_picker_shows_what_the_user_typed(tmp_path: Path) -> None:
    """The trial's picker listed a `!cmd`'s context ("The user ran this command…") and a
    prompt glued to its `@file` markup: it shows `!cmd` and the typed words, and the prompt
    put back in the editor is the typed one."""
    from tether.messages import TextBlock, Turn, text_turn
    from tether.tui.bang import bang_context

    store = SessionStore(tmp_path / "data" / "sessions")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n")
    with store.create("s0", cwd=str(work)) as w:
        w.append(text_turn("u1", "user", "first"))
        w.append(text_turn("a1", "assistant", "ok"))
        w.append(text_turn("u2", "user", bang_context("ls; false", "notes.txt\n", 1000)))
        typed = TextBlock(text="look at @notes.txt")
        w.append(Turn(id="u3", role="user", content=(
            typed, TextBlock(text='<file path="notes.txt">\nhello\n</file>'))))  # fmt: skip
        w.append(text_turn("a2", "assistant", "seen"))
    app, _ = scripted_app(work, [], store=store, resume="s0")
    async with app.run_test(size=SIZE) as pilot:
        await idle(app, pilot)
        await pilot.press("escape")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RewindScreen)
        rows = [str(o.prompt) for o in app.screen.query_one("#turns").options]  # type: ignore[attr-defined]
        assert rows[0].endswith("look at @notes.txt") and "<file" not in rows[0], rows
        assert rows[1].endswith("!ls; false") and "ran this command" not in " ".join(rows), rows
        await pilot.press("c")  # the conversation only, back to before "look at @notes.txt"
        for _ in range(100):
            await pilot.pause()
            if app.query_one(PromptInput).text:
                break
        assert app.query_one(PromptInput).text == "look at @notes.txt"
