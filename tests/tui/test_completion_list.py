"""The completion list under the prompt is a menu while it shows: a highlighted entry, Up /
Down / Shift+Tab move it (not the history, not the mode cycle), Tab / Enter take it, Esc
shuts it."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.content import Content

from kit.tui import SIZE, idle, notes, scripted_app, send
from tether.tui.completion import accept_entry
from tether.tui.user_commands import CompletionList
from tether.tui.widgets import PromptInput


def highlighted(menu: CompletionList) -> str:
    """The line shown in reverse video."""
    body = menu.render()
    assert isinstance(body, Text | Content)
    (span,) = [s for s in body.spans if "reverse" in repr(s.style)]
    return body.plain[span.start : span.end]


async def test_up_down_move_in_the_list_and_enter_takes_the_entry(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["1"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "an earlier prompt")  # history Up would bring back
        await idle(app, pilot)
        prompt, menu = app.query_one(PromptInput), app.query_one(CompletionList)
        prompt.text = "/co"
        prompt.move_cursor(prompt.document.end)
        await pilot.pause()
        names = [v for v, _line in menu.entries]
        assert menu.is_open and len(names) >= 3 and names[0] == "/compact"
        assert highlighted(menu).startswith("/compact")
        await pilot.press("down", "down")
        assert highlighted(menu).startswith(names[2])
        await pilot.press("up")
        assert highlighted(menu).startswith(names[1]) and prompt.text == "/co"  # not the history
        await pilot.press("enter")  # taken, not sent
        await pilot.pause()
        assert prompt.text == names[1] and not menu.display
        assert len(provider.requests) == 1


async def test_shift_tab_moves_up_in_the_list_not_the_mode(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [], approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        prompt, menu = app.query_one(PromptInput), app.query_one(CompletionList)
        prompt.text = "/co"
        await pilot.pause()
        last = menu.entries[-1][0]
        await pilot.press("shift+tab")  # wraps to the last entry
        await pilot.pause()
        assert highlighted(menu).startswith(last)
        assert app.agent.approval.mode == "ask" and "mode:" not in notes(app)
        await pilot.press("tab")
        await pilot.pause()
        assert prompt.text == last and not menu.display
        await pilot.press("shift+tab")  # the list is shut: the mode cycle again
        await pilot.pause()
        assert "mode:" in notes(app)


async def test_tab_takes_a_path_a_folder_stays_open_and_esc_shuts(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / "src" / "mail.py").write_text("")
    app, provider = scripted_app(tmp_path, ["seen"])
    async with app.run_test(size=SIZE) as pilot:
        prompt, menu = app.query_one(PromptInput), app.query_one(CompletionList)
        prompt.text = "look at @"
        prompt.move_cursor(prompt.document.end)
        await pilot.pause()
        assert "@src/" in [v for v, _ in menu.entries]
        while menu.current != "@src/":
            await pilot.press("down")
        await pilot.press("tab")
        await pilot.pause()
        assert prompt.text == "look at @src/" and menu.is_open  # the folder's entries
        assert [v for v, _ in menu.entries] == ["@src/mail.py", "@src/main.py"]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert prompt.text == "look at @src/main.py" and not menu.display
        prompt.text = "and @src/ma"
        prompt.move_cursor(prompt.document.end)
        await pilot.pause()
        assert menu.is_open
        await pilot.press("escape")
        await pilot.pause()
        assert not menu.display and prompt.text == "and @src/ma"
        await pilot.press("enter")  # the list shut: Enter sends
        await idle(app, pilot)
    assert len(provider.requests) == 1


def test_accept_entry() -> None:
    assert accept_entry("/co", "/compact") == "/compact"
    assert accept_entry("see @src/ma", "@src/main.py") == "see @src/main.py"
    assert accept_entry("see @", "@a.txt") == "see @a.txt"


async def test_enter_typed_before_the_change_is_seen_sends_what_was_typed(tmp_path: Path) -> None:
    """Keys typed fast (a paste, tmux's send-keys) can reach the prompt before the text's
    Changed message: the list still holds the entries of an older text (`/`: `/compact`
    first). Enter must send `/tasks`, not take `/compact` (a clean clone's CI saw this)."""
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        prompt, menu = app.query_one(PromptInput), app.query_one(CompletionList)
        prompt.text = "/"
        await pilot.pause()
        assert menu.is_open and menu.current == "/compact"
        prompt.move_cursor(prompt.document.end)
        prompt.insert("tasks")  # its Changed message not handled yet
        assert app.menu_key("enter") is False  # nothing taken: the prompt is sent as typed
        assert prompt.text == "/tasks"
        prompt.text = "/co"
        await pilot.pause()
        await pilot.press("tab")  # an entry taken: the list shuts for that text
        await pilot.pause()
        taken = prompt.text
        assert not menu.display
        prompt.text = "/co"  # back to the text the list was shown for: it shows again
        await pilot.pause()
        assert menu.is_open and taken != "/co"


def test_a_path_with_a_space_completes_to_the_quoted_mention() -> None:
    """trial4: `@my` + Tab gave `@my file.txt` (unquoted), which attached nothing, silently.
    It is `@"my file.txt"` now, the form the mention parser reads (as Claude Code completes)."""
    from tether.tui.completion import last_mention, mention_text

    assert mention_text("my file.txt") == '@"my file.txt"'
    assert mention_text("src/main.py") == "@src/main.py"
    assert accept_entry("see @my", '@"my file.txt"') == 'see @"my file.txt"'
    assert accept_entry('see @"my fi', '@"my file.txt"') == 'see @"my file.txt"'
    assert last_mention('see @"my fi') == "my fi"
    assert last_mention('see @"my file.txt" ') is None


async def test_tab_on_an_at_word_quotes_a_name_with_a_space(tmp_path: Path) -> None:
    (tmp_path / "my file.txt").write_text("SPACE\n")
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "see @my"
        prompt.move_cursor(prompt.document.end)
        await pilot.pause()
        assert '@"my file.txt"' in str(app.query_one(CompletionList).render())
        await pilot.press("tab")
        assert prompt.text == 'see @"my file.txt"'
