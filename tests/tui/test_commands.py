"""The slash commands, the editor's history and completion."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, idle, notes, scripted_app, send, status
from tether.session import SessionStore
from tether.tui.commands import context_bar, gauge_text, parse_command
from tether.tui.panels import ContextScreen
from tether.tui.widgets import MarkerRow, PromptInput, UserRow


def test_parse_command() -> None:
    assert parse_command("/compact keep names ") is not None
    c = parse_command("/compact keep names ")
    assert c is not None and (c.name, c.arg) == ("compact", "keep names")
    assert parse_command("hello") is None and parse_command("//literal") is None
    assert parse_command("/") is None


def test_gauge_and_bar() -> None:
    assert gauge_text(0.42, True) == "ctx ~42%" and gauge_text(0.42, False) == "ctx 42%"
    assert gauge_text(None, True) == "ctx –"
    lines = context_bar([("system", 50), ("tools", 25)], 100, width=20)
    assert lines[0].startswith("[" + "S" * 10 + "T" * 5 + "·" * 5 + "]")


async def test_compact_help_usage_context_and_unknown(tmp_path: Path) -> None:
    script = ["one" * 300, "two" * 300, "three" * 300, "the summary"]  # longer than a summary
    app, provider = scripted_app(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        for p in ("a", "b", "c"):
            await send(pilot, p)
            await idle(app, pilot)
        await send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)  # per turn: tests/tui/test_panels.py
        await pilot.press("escape")
        await pilot.pause()
        await send(pilot, "/compact keep the names")
        await idle(app, pilot)
        marker = app.query_one(MarkerRow)
        assert "compacted" in str(marker.title) and "→" in str(marker.title)
        assert "keep the names" in str(provider.requests[3])
        await send(pilot, "/usage")
        await send(pilot, "/help")
        await send(pilot, "/nope")
        text = notes(app)
        assert "usage: not reported by the provider" in text and "/compact" in text and "Ctrl+K" in text
        assert "unknown command /nope" in text


async def test_compact_refuses_a_summary_that_would_grow_the_context(tmp_path: Path) -> None:
    """The trial's tiny conversation went from 148 to 210 tokens on /compact while
    `tether compact` refused the same: /compact writes nothing and says why."""
    script = ["one", "two", "the summary, " * 80]
    app, provider = scripted_app(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        for p in ("a", "b"):
            await send(pilot, p)
            await idle(app, pilot)
        before = list(app.agent.history)
        await send(pilot, "/compact")
        await idle(app, pilot)
        assert len(provider.requests) == 3  # the summary was asked for
        assert not app.query(MarkerRow) and app.agent.history == before
        text = notes(app)
        assert "is not shorter than the conversation" in text and "nothing written" in text
        assert "nothing to compact" not in text


async def test_safe_approval_and_model_switch(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/safe on")
        assert app.agent.safe_mode and "SAFE" in status(app)
        await send(pilot, "/safe off")
        if app.agent.safe_mode_forced:  # no OS sandbox here: safe mode stays, said why
            assert "/safe" in notes(app)
        else:
            assert not app.agent.safe_mode and "approval: ask" in status(app)
            await send(pilot, "/approval auto-edit")
            assert "approval: auto-edit" in status(app)
        await send(pilot, "/model nosuch/thing")
        assert "/model" in notes(app) and "scripted/scripted" in status(app)
        await send(pilot, "/model ollama/llama3.2")
        assert "ollama/llama3.2" in status(app)


async def test_new_sessions_fork_and_quit(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    app, _ = scripted_app(tmp_path, ["hi", "forked reply"], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await idle(app, pilot)
        first = app.opened
        assert first is not None and first.writer is not None
        await send(pilot, "/fork")
        assert app.opened is not first and app.opened is not None
        fork = app.opened.writer
        assert fork is not None and fork.id != "s1"
        assert [t.text for t in app.agent.history] == ["hello", "hi"]  # the parent's turns
        assert [r.text for r in app.query(UserRow)] == ["hello"]
        await send(pilot, "go on")
        await idle(app, pilot)
        assert app.agent.history[-1].text == "forked reply", notes(app)
        await send(pilot, "/new")
        assert app.agent.history == [] and not app.query(UserRow)
        await send(pilot, "/sessions")
        listing = notes(app)
        assert "s1" in listing and fork.id in listing
        await send(pilot, "/sessions s1")
        assert [t.text for t in app.agent.history] == ["hello", "hi"]  # not the fork's turns
        await send(pilot, "/sessions nosuch")
        assert "no session" in notes(app)
        assert app.agent.history != []
        await send(pilot, "/clear")  # Claude Code's name for /new (the trial's: unknown command)
        assert app.agent.history == [] and "unknown command" not in notes(app)
        await send(pilot, "/quit")
        await pilot.pause()
    assert app.return_value == 0
    assert [t.text for t in store.load(fork.id).turns] == ["hello", "hi", "go on", "forked reply"]
    assert store.load("s1").report.ok and len(store.load("s1").turns) == 2


async def test_history_up_and_completion(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    app, _ = scripted_app(tmp_path, ["1", "2"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "first")
        await idle(app, pilot)
        prompt = app.query_one(PromptInput)
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("down")
        assert prompt.text == ""
        prompt.text = "/com"
        await pilot.press("tab")
        assert prompt.text == "/compact"
        prompt.text = "look at @src/ma"
        prompt.move_cursor(prompt.document.end)
        await pilot.press("tab")
        assert prompt.text == "look at @src/main.py"
        prompt.text = "two\nlines"
        await pilot.press("ctrl+j")
        assert prompt.text.count("\n") == 2


async def test_export_writes_the_stored_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    app, _ = scripted_app(tmp_path, ["a reply"], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await idle(app, pilot)
        await send(pilot, "/export")
        await send(pilot, "/export md")
        await send(pilot, "/export md notes/out.txt")
        await send(pilot, "/export a.md b.md")
        text = notes(app)
    page = (tmp_path / "s1.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "a reply" in page
    assert (tmp_path / "s1.md").read_text().startswith("# Session s1\n")
    assert (tmp_path / "notes" / "out.txt").exists() is False  # no such folder: a note, no crash
    assert "/export: " in text and "usage: /export" in text
    assert f"exported s1 as html to {tmp_path / 's1.html'}" in text
