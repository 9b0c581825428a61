"""The transcript: a 10,000-turn session opened with only a window of rows mounted, scrolled
to its first turn and back; streamed text (plain tail, Markdown blocks); a persisted output
opened with `o`; a prompt too large for the window kept in the editor; a subagent's rows
nested under its `task` row; a result's language-server diagnostics counted in its row."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from textual.pilot import Pilot

from kit.tui import SIZE, idle, notes, scripted_app, send, until
from tether.agent.subagents import TASK_TOOL
from tether.messages import TextBlock, text_turn
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, call
from tether.tools.base import tool
from tether.tui.app import TetherApp
from tether.tui.transcript import MAX_PAGES, PAGE, Transcript
from tether.tui.viewer import FileViewer, read_page
from tether.tui.widgets import (
    AssistantRow,
    NoteRow,
    PromptInput,
    ToolRow,
    UserRow,
    block_end,
    wrap_lines,
)


async def scroll_up_a_page(pilot: Pilot[Any], transcript: Transcript) -> None:
    """Scroll to the top of what is mounted; wait for the page before it."""
    lo = transcript.lo
    transcript.scroll_home(animate=False, immediate=True)
    await until(pilot, lambda: transcript.lo < lo and not transcript._moving)  # pyright: ignore[reportPrivateUsage]
    await pilot.pause()  # type: ignore[attr-defined]


def long_session(tmp_path: Path, turns: int) -> SessionStore:
    store = SessionStore(tmp_path / "sessions")
    with store.create("long", cwd=str(tmp_path)) as writer:
        for i in range(turns // 2):
            writer.append(text_turn(f"u{i}", "user", f"question {i}"))
            writer.append(text_turn(f"a{i}", "assistant", f"answer {i}"))
    return store


async def test_a_10000_turn_session_mounts_a_window_and_scrolls_to_turn_1(tmp_path: Path) -> None:
    turns = 10_000
    app, _ = scripted_app(tmp_path, ["hi"], store=long_session(tmp_path, turns), resume="long")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        transcript = app.query_one(Transcript)
        assert len(app.agent.history) == turns
        assert len(transcript.past) == turns  # every turn reachable
        assert len(transcript.children) <= PAGE
        assert app.query(UserRow)[-1].text == f"question {turns // 2 - 1}"
        assert transcript.following

        # scrolling to the top of what is mounted mounts the page before it, in place
        first = transcript.mounted[0]
        await scroll_up_a_page(pilot, transcript)
        assert abs(first.virtual_region.y - transcript.scroll_y) <= 1  # the view kept its row
        for _ in range(6):  # further up: the mounted rows stay bounded
            await scroll_up_a_page(pilot, transcript)
            assert len(transcript.children) <= PAGE * MAX_PAGES
        assert transcript.has_class("away") and not transcript.at_end

        await pilot.press("ctrl+home")
        await pilot.pause()
        assert transcript.lo == 0 and transcript.scroll_y == 0
        top = transcript.mounted[0]
        assert isinstance(top, UserRow) and top.text == "question 0"
        assert top.virtual_region.y < transcript.size.height  # in view

        await pilot.press("ctrl+end")
        await pilot.pause()
        assert transcript.at_end and not transcript.has_class("away")
        assert app.query(UserRow)[-1].text == f"question {turns // 2 - 1}"
        await pilot.press("ctrl+home")
        await send(pilot, "new prompt")  # sending goes back to the end
        await idle(app, pilot)
        assert transcript.at_end and app.query(UserRow)[-1].text == "new prompt"
        assert app.query(AssistantRow)[-1].text == "hi"


@given(st.text(alphabet=st.sampled_from("ab  \n漢"), max_size=80), st.integers(1, 12))
def test_wrap_lines_fit_and_keep_the_text(text: str, width: int) -> None:
    lines = wrap_lines(text, width)
    assert all(cell_len(line) <= max(width, 2) for _, line in lines)
    for offset, line in lines:
        assert text[offset : offset + len(line)] == line
    # only break spaces and newlines are dropped
    assert "".join(line for _, line in lines).replace(" ", "") == text.replace(" ", "").replace("\n", "")



@given(st.lists(st.text(alphabet=st.sampled_from("ab \n"), max_size=12), max_size=8), st.integers(1, 9))
def test_wrap_lines_incrementally_is_wrapping_all(chunks: list[str], width: int) -> None:
    text = ""
    lines = wrap_lines("", width)
    for chunk in chunks:  # as StreamTail.append: wrap again from the last line's start
        text += chunk
        start = lines[-1][0] if lines else 0
        lines[max(len(lines) - 1, 0) :] = wrap_lines(text[start:], width, start)
    assert lines == wrap_lines(text, width)


def test_block_end() -> None:
    assert block_end("one paragraph still stream") == 0
    assert block_end("done.\n\nnext") == len("done.\n\n")
    fenced = "```python\nx = 1\n\ny = 2\n"
    assert block_end(fenced) == 0  # a blank line inside a fence ends nothing
    assert block_end(fenced + "```\nafter") == len(fenced + "```\n")


async def test_streamed_text_ends_as_markdown(tmp_path: Path) -> None:
    text = "First **bold** paragraph.\n\n```python\nprint('hi')\n```\n\nLast line"
    app, _ = scripted_app(tmp_path, [text])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await idle(app, pilot)
        row = app.query_one(AssistantRow)
        assert row.text == text
        assert row.tail is not None and row.tail.text == ""  # all of it went to the Markdown
        assert row.markdown.source == text


async def test_a_prompt_too_large_for_the_window_is_refused_and_kept(tmp_path: Path) -> None:
    # an 8,000-token window: the prompt editor holding twice a 200,000-token window's words
    # (2 MB) took ~12 s of CPU to lay out, and the refusal is the same at any size
    app, provider = scripted_app(tmp_path, ["never"], settings={"context": {"window": 8_000}})
    async with app.run_test(size=SIZE) as pilot:
        assert app.agent.limits.context_window == 8_000
        big = "word " * (app.agent.limits.context_window * 2)
        await send(pilot, big)
        assert "not sent" in notes(app) and "context window" in notes(app)
        assert app.query_one(PromptInput).text == big  # not lost
        assert not provider.requests and not app.query(UserRow) and not app.busy


async def test_o_opens_a_persisted_output_a_page_at_a_time(tmp_path: Path) -> None:
    @tool(safe=True)
    def dump() -> str:
        """A big output."""
        return "".join(f"line {i}\n" for i in range(20_000))

    store = SessionStore(tmp_path / "sessions")
    app, _ = scripted_app(tmp_path, [call("dump"), "done"], tools=[dump], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "dump")
        await idle(app, pilot)
        row = app.query_one(ToolRow)
        assert row.persisted is not None and Path(row.persisted).is_file()
        assert "o: open" in str(row.title)
        await pilot.press("ctrl+up")  # from the editor to the row above it
        assert app.focused is row.query_one("CollapsibleTitle")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, FileViewer))
        viewer = app.screen
        assert isinstance(viewer, FileViewer)
        shown = str(viewer.query_one("#text").render())
        assert shown.startswith("line 0\n") and "line 19999" not in shown
        assert viewer.page.end < viewer.page.size  # one page, not the file
        await pilot.press("n")
        second = str(viewer.query_one("#text").render())
        assert second.startswith(f"line {shown.count(chr(10))}\n")  # the next line on
        await pilot.press("end")
        assert "line 19999" in str(viewer.query_one("#text").render())
        await pilot.press("home")
        assert str(viewer.query_one("#text").render()) == shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, FileViewer)


def test_read_page_binary_pages_and_missing(tmp_path: Path) -> None:
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x00\x01" * 5000)
    page = read_page(binary)
    assert page.binary and page.size == 10_000 and page.text == ""
    text = tmp_path / "x.txt"
    text.write_text("".join(f"{i}\n" for i in range(1000)))
    first = read_page(text, 0, 100)
    assert first.text.endswith("\n") and first.start == 0 and first.end <= 100
    second = read_page(text, first.end, 100)
    assert second.start == first.end and second.text.split("\n")[0].isdigit()
    middle = read_page(text, 5, 100)  # inside a line: from that line's start
    assert middle.start == 4 and middle.text.startswith("2\n")
    missing = read_page(tmp_path / "nope")
    assert missing.error is not None


def test_the_viewer_says_a_binary_file_is_binary(tmp_path: Path) -> None:
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x00" * 2048)

    async def check() -> None:
        app, _ = scripted_app(tmp_path, [])
        async with app.run_test(size=SIZE) as pilot:
            app.push_screen(FileViewer(binary))
            await until(pilot, lambda: isinstance(app.screen, FileViewer))
            assert "binary file, 2048 bytes" in str(app.screen.query_one("#text").render())

    asyncio.run(check())


def _first_user_text(request: ModelRequest) -> str:
    for turn in request.messages:
        if turn.role == "user":
            return "".join(b.text for b in turn.content if isinstance(b, TextBlock))
    return ""


async def test_a_subagents_calls_and_text_are_nested_under_its_task_row(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    plan: dict[str, list[Response]] = {
        "look around": [call(TASK_TOOL, id="c1", name="reader", prompt="read a.txt"), "It read alpha."],
        "read a.txt": [call("read", id="k1", path="a.txt"), "The file says alpha."],
    }

    def respond(request: ModelRequest) -> Response:
        steps = sum(1 for t in request.messages if t.role == "assistant")
        return plan[_first_user_text(request)][steps]

    app, _ = scripted_app(
        tmp_path, respond, settings={"agents": {"spawn": "allow"}}, task=True
    )
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "look around")
        await idle(app, pilot)
        task, *nested = app.query(ToolRow)
        assert task.name_ == TASK_TOOL and task.status == "ok", str(task.body.render())
        assert task.agent_path == ("main", "task:c1") and "main/task:c1" in str(task.title)
        assert task.steps is not None
        [child_call] = [r for r in nested if r.parent is task.steps]
        assert child_call.name_ == "read" and child_call.status == "ok"
        [child_text] = task.steps.query(AssistantRow)
        assert child_text.text == "The file says alpha."
        main_rows = [r.text for r in app.query(AssistantRow) if r.parent is app.transcript]
        assert main_rows == ["It read alpha."]
        assert not [n for n in app.query(NoteRow) if "error" in str(n.render())]


def _rows(app: TetherApp) -> list[object]:
    """The transcript as data: each row's kind and text; a tool row's name, status, edit diff
    and nested rows (a subagent's, at any depth)."""

    def one(row: object) -> object:
        if isinstance(row, ToolRow):
            nested = [one(r) for r in row.steps.children] if row.steps is not None else []
            return ("tool", row.name_, row.status, row.diff, row.steps_count, nested)
        if isinstance(row, UserRow | AssistantRow):
            return (type(row).__name__, row.text)
        return type(row).__name__

    return [one(r) for r in app.transcript.children if not isinstance(r, NoteRow)]


async def test_the_reloaded_transcript_is_the_live_one(tmp_path: Path) -> None:
    """Edit diffs and a subagent's nested rows, as shown live, come back with `--resume`:
    both transcripts are built from one definition."""
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "greet.py").write_text("def greet(name):\n    return name\n")
    fix = call("edit", id="e1", path="greet.py", old_string="return name", new_string="return 1")
    plan: dict[str, list[Response]] = {
        "fix and look": [
            fix,
            call(TASK_TOOL, id="c1", name="reader", prompt="read a.txt"),
            "Fixed; it read alpha.",
        ],
        "read a.txt": [call("read", id="k1", path="a.txt"), "The file says alpha."],
    }

    def respond(request: ModelRequest) -> Response:
        steps = sum(1 for t in request.messages if t.role == "assistant")
        return plan[_first_user_text(request)][steps]

    store = SessionStore(tmp_path / "sessions")
    settings = {"agents": {"spawn": "allow"}}
    app, _ = scripted_app(tmp_path, respond, store=store, settings=settings, task=True)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fix and look")
        await idle(app, pilot)
        live = _rows(app)
        assert app.opened is not None
        await app.opened.aclose()  # as quitting does: the session file is free again
    edit_row = live[1]
    assert isinstance(edit_row, tuple) and edit_row[1] == "edit"
    assert edit_row[3] is not None and "-return name\n+return 1" in edit_row[3]
    task_row = live[2]
    assert isinstance(task_row, tuple) and task_row[4] == 1
    assert len(cast(list[object], task_row[5])) == 2  # the subagent's text and its read call

    again, _ = scripted_app(
        tmp_path, [], store=store, settings=settings, task=True, resume="s1"
    )
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: _rows(again) == live)


async def test_a_tool_row_shows_the_count_of_its_results_diagnostics(tmp_path: Path) -> None:
    from tether.lsp.report import Finding, render_block

    found = [Finding(line=1, column=1, severity=1, message=m) for m in ("a", "b")]
    block = render_block("m.py", "python", found, found[:1])
    assert block is not None

    @tool(safe=True)
    def check() -> list[TextBlock]:
        """An edit-like result with a diagnostics block."""
        return [TextBlock(text="edited m.py"), TextBlock(text=block)]

    app, _ = scripted_app(tmp_path, [call("check"), "done"], tools=[check])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "check")
        await idle(app, pilot)
        row = app.query_one(ToolRow)
        assert str(row.title).endswith("· 2 diagnostics (1 new)")


def test_a_system_note_in_a_user_turn_is_a_note_row_not_the_user_s_words() -> None:
    """A note the harness stored in a user turn (a background shell's end, a subfolder's
    instructions after results) replays as a note without its tags, not as a message the
    user typed."""
    from functools import partial

    from tether.messages import Turn
    from tether.tools.exec.run import system_note_block
    from tether.tui.rows import history_rows

    note = Turn(id="n", role="user", content=(system_note_block("Background shell bash_1 ended."),))
    makers = history_rows([text_turn("u", "user", "hi"), note])
    rows = [(m.func.__name__, m.args) for m in makers if isinstance(m, partial)]
    assert rows == [("UserRow", ("hi",)), ("NoteRow", ("Background shell bash_1 ended.",))]
