"""The TUI's `@path` (the completion list as you type, Tab, the file sent with its chip),
session names (`/rename`), the `/resume` and `/model` pickers (type to filter, Enter picks),
and `tether chat --resume` without an id opening on the picker. Pilot over the scripted
provider."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from textual.widgets import Static

from kit.tui import SIZE, idle, notes, scripted_app, send, status, until
from tether.messages import TextBlock, text_turn
from tether.session import SessionStore
from tether.session.names import NAME_EVENT
from tether.tui.completion import Completer, path_matches
from tether.tui.pickers import Choice, PickerScreen, matches, session_choices
from tether.tui.user_commands import CompletionList
from tether.tui.widgets import PromptInput, UserRow


def shown(app: object) -> str:
    return str(app.query_one(CompletionList).render())  # type: ignore[attr-defined]


async def test_typing_an_at_word_lists_matching_paths_and_tab_takes_the_best(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "src" / "mailer.log").write_text("")
    (tmp_path / ".gitignore").write_text("*.log\n")
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "look at @"
        await pilot.pause()
        listed = shown(app)
        assert app.query_one(CompletionList).display and "@src/" in listed
        prompt.text = "look at @mai"  # fuzzy: m-a-i anywhere in order
        prompt.move_cursor(prompt.document.end)
        await pilot.pause()
        listed = shown(app)
        assert listed.splitlines()[0] == "@src/main.py" and "mailer.log" not in listed
        await pilot.press("tab")
        assert prompt.text == "look at @src/main.py"
        prompt.text = "look at @zzz"
        await pilot.pause()
        assert not app.query_one(CompletionList).display


async def test_a_mentioned_file_goes_with_the_prompt_as_a_chip_live_and_resumed(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    store = SessionStore(tmp_path / "sessions")
    app, provider = scripted_app(tmp_path, ["noted"], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "read @notes.txt and @../elsewhere.txt")
        await idle(app, pilot)
        (row,) = app.query(UserRow)
        assert row.images == ("[file notes.txt 17 bytes]",)  # the trial's 12 bytes said 1 KB
        assert "@../elsewhere.txt" not in notes(app)  # names nothing: left as text
        await send(pilot, "/quit")
    sent = provider.requests[0].messages[-1].content
    assert [b.text for b in sent if isinstance(b, TextBlock)] == [
        "read @notes.txt and @../elsewhere.txt",
        '<file path="notes.txt">\nremember the milk\n</file>',
    ]
    app2, _ = scripted_app(tmp_path, [], store=store, resume="s1")
    async with app2.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app2.query(UserRow)))
        (row,) = app2.query(UserRow)
        assert row.text == "read @notes.txt and @../elsewhere.txt"  # not the file's text
        assert row.images == ("[file notes.txt 17 bytes]",)


async def test_rename_and_the_resume_picker_filters_by_name(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    for sid, name, prompt in (("old1", "payments", "fix the refund"), ("old2", None, "add tests")):
        with store.create(sid, cwd=str(tmp_path)) as w:
            w.append(text_turn("u1", "user", prompt))
            if name:
                w.append_event(NAME_EVENT, {"name": name})
    app, _ = scripted_app(tmp_path, ["hi"], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await idle(app, pilot)
        await send(pilot, "/rename login bug")
        # the command it names exists (it said `tether --resume`, which is no option)
        assert "named 'login bug' (tether chat --resume 'login bug' opens it)" in notes(app)
        await send(pilot, "/rename")
        assert "usage: /rename NAME" in notes(app)
        await send(pilot, "/rename payments")  # old1's: refused, this session keeps its name
        assert "already named 'payments' (old1" in notes(app)
        await send(pilot, "/rename login bug")  # its own name again: fine
        await send(pilot, "/resume")
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        assert {c.key for c in screen.choices} == {"old1", "old2"}  # not this session
        await pilot.press(*"refund")
        await pilot.pause()
        assert [c.key for c in screen.shown] == ["old1"]
        await pilot.press("enter")
        await until(pilot, lambda: app.opened is not None and app.opened.writer is not None
                    and app.opened.writer.id == "old1")
        assert [t.text for t in app.agent.history] == ["fix the refund"]
        await send(pilot, "/resume login bug")  # by name
        await until(pilot, lambda: app.opened is not None and app.opened.writer is not None
                    and app.opened.writer.id == "s1")
    assert {r.id: r.name for r in store.list()}["s1"] == "login bug"


async def test_the_model_picker_filters_and_switches(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/model")
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        keys = [c.key for c in screen.choices]
        assert keys[0] == "scripted/scripted" and "ollama/llama3.2" in keys and "local" in keys
        await pilot.press(*"llama3.2")
        await pilot.pause()
        assert [c.key for c in screen.shown] == ["ollama/llama3.2"]
        await pilot.press("enter")
        await until(pilot, lambda: "ollama/llama3.2" in status(app))
        await send(pilot, "/model")
        await pilot.press("escape")
        await pilot.pause()
        assert "ollama/llama3.2" in status(app)


async def test_enter_on_no_matching_model_says_how_to_name_any(tmp_path: Path) -> None:
    """trial5: an empty filter + Enter did nothing and said nothing."""
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/model")
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        await pilot.press(*"zzqnomodel", "enter")
        await pilot.pause()
        assert app.screen is screen and not screen.shown
        hint = str(screen.query_one("#hint", Static).render())
        assert "no model matches; /model PROVIDER/NAME takes any name" in hint


async def test_chat_resume_without_an_id_opens_on_the_picker(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create("old1", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "earlier work"))
    app, _ = scripted_app(tmp_path, [], store=store)
    app.pick = lambda: session_choices(store.list(), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        assert app.opened is None
        await pilot.press("enter")
        await until(pilot, lambda: app.opened is not None)
        assert [t.text for t in app.agent.history] == ["earlier work"]


def test_the_resume_picker_shows_a_forks_turns_and_parent(tmp_path: Path) -> None:
    """A fork (a parent pointer, no turns of its own) showed as "0 turns" with no prompt."""
    store = SessionStore(tmp_path / "sessions")
    with store.create("old1", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "earlier work"))
        w.append(text_turn("a1", "assistant", "done"))
    store.create("fork1", cwd=str(tmp_path), parent=("old1", "a1")).close()
    label = {c.key: c.label for c in session_choices(store.list(), tmp_path)}["fork1"]
    assert "2 messages (fork of old1)" in label and label.endswith("earlier work")


def test_the_filter_needs_every_word_and_ignores_case() -> None:
    c = Choice("id1", "login bug (id1)  2026-12-07 10:00  3 turns  Fix the LOGIN page")
    assert matches("LOGIN 12-07", c) and matches("", c) and not matches("login refund", c)


async def test_a_resumed_session_opens_on_its_transcript_without_the_welcome(
    tmp_path: Path,
) -> None:
    from tether.tui.welcome import Welcome

    store = SessionStore(tmp_path / "sessions")
    with store.create("old1", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "earlier work"))
    app, _ = scripted_app(tmp_path, [], store=store, resume="old1")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app.query(UserRow)))
        assert not app.query(Welcome)


@given(st.text(alphabet="abm_/.", min_size=1, max_size=6))
def test_typing_key_by_key_lists_what_a_fresh_search_lists(query: str) -> None:
    """The completer narrows the last query's matches as a key is typed: the same list as
    matching the whole project again."""
    paths = [f"{a}/{b}_{c}.py" for a in ("ab", "mb", "a_m") for b in ("ma", "bb", "m") for c in "ab"]
    paths += ["ab/", "mb/", "a_m/"]
    completer = Completer(lambda: Path("/nonexistent"))
    completer._paths, completer._listed = paths, Path("/nonexistent")  # pyright: ignore[reportPrivateUsage]
    for i in range(1, len(query) + 1):
        lines = [line for _value, line in completer.entries("see @" + query[:i], [])]
        assert lines == [f"@{p}" for p in path_matches(query[:i], paths) if p != query[:i]]
