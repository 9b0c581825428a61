"""Issue 40 items 2 and 3 in the TUI: `!cmd` runs in the sandbox, shows its output and adds
command and output to the conversation for the next message (no model turn of its own);
`/tasks` lists the background shells and stops one; leaving the TUI stops the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kit.procs import alive, left, marker
from kit.sandbox import sandbox_or_skip
from kit.tui import SIZE, idle, notes, scripted_app, send, until
from tether.messages import TextBlock
from tether.session import SessionStore
from tether.testing import call
from tether.tools.base import tool
from tether.tui.commands import parse_command
from tether.tui.shell_commands import bang_context, parse_bang
from tether.tui.widgets import UserRow


def test_a_bang_line_is_a_shell_command() -> None:
    c = parse_command("!git status --short")
    assert c is not None and (c.name, c.arg) == ("!", "git status --short")
    c = parse_command("!")
    assert c is not None and (c.name, c.arg) == ("!", "")


def test_the_bang_context_cuts_long_output_in_the_middle() -> None:
    text = bang_context("seq 1 100000", "x" * 1000 + "y" * 1000, cap=200)
    assert "<bash-input>seq 1 100000</bash-input>" in text
    assert text.count("x") >= 100 and text.count("y") >= 100 and len(text) < 700
    assert "bytes of output cut" in text


async def test_bang_runs_in_the_sandbox_and_goes_with_the_next_message(tmp_path: Path) -> None:
    sandbox_or_skip()
    app, provider = scripted_app(tmp_path, ["noted"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!echo hello-from-bang; touch made-by-bang; touch ~/outside-$$ && echo WROTE-HOME")
        await idle(app, pilot)
        await until(pilot, lambda: "hello-from-bang" in notes(app))
        assert (tmp_path / "made-by-bang").exists()  # the working folder is writable
        assert "WROTE-HOME" not in notes(app)  # the home folder is not: the sandbox held it
        assert any(r.text.startswith("!echo hello-from-bang") for r in app.query(UserRow))
        assert provider.requests == []  # no model turn of its own
        last = app.agent.history[-1]
        assert last.role == "user"
        (block,) = last.content
        assert isinstance(block, TextBlock)
        assert "<bash-input>echo hello-from-bang;" in block.text
        assert "hello-from-bang" in block.text.split("<bash-stdout>")[1]
        await send(pilot, "what did it print?")
        await idle(app, pilot)
        (request,) = provider.requests
        sent = str(request)
        assert "hello-from-bang" in sent and "what did it print?" in sent


async def test_bang_with_no_sandbox_runs_nothing(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, [], settings={"tools": {"sandbox": "none"}})
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!touch should-not-exist")
        await idle(app, pilot)
        assert "no OS sandbox" in notes(app)
        assert not (tmp_path / "should-not-exist").exists()
        assert provider.requests == [] and app.agent.history == []


async def test_tasks_lists_and_stops_a_background_shell(tmp_path: Path) -> None:
    sandbox_or_skip()
    mark = marker()
    script = [call("bash", command=f"echo up; sleep {mark}", run_in_background=True), "started"]
    app, _ = scripted_app(tmp_path, script, store=SessionStore(tmp_path / "sessions"))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/tasks")
        assert "no background shells" in notes(app)
        await send(pilot, "start the server")
        await idle(app, pilot)
        await until(pilot, lambda: bool(alive(f"sleep {mark}")))
        shells = app.agent.tool_context.shells
        assert shells is not None
        [shell] = shells.all()
        await until(pilot, lambda: shell.unread > 0)
        await send(pilot, "/tasks")
        text = notes(app)
        assert "bash_1" in text and "running for" in text and f"sleep {mark}" in text
        assert "│ up" in text and "stop it: /tasks stop bash_1" in text
        assert shell.unread > 0  # its last lines come from the log: the agent's are unread
        await send(pilot, "/tasks stop bash_9")
        assert "no background shell 'bash_9'" in notes(app)
        await send(pilot, "/tasks stop bash_1")
        await until(pilot, lambda: "stopped bash_1 (killed)" in notes(app))
        assert not left(f"sleep {mark}")
        await send(pilot, "/tasks")
        assert "killed" in notes(app).splitlines()[-1] or "killed" in notes(app)


async def test_leaving_the_tui_stops_the_background_shells(tmp_path: Path) -> None:
    sandbox_or_skip()
    mark = marker()
    script = [call("bash", command=f"sleep {mark}", run_in_background=True), "started"]
    app, _ = scripted_app(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "start it")
        await idle(app, pilot)
        await until(pilot, lambda: bool(alive(f"sleep {mark}")))
        await app.action_quit()
    assert not left(f"sleep {mark}"), "a background shell outlived the TUI"


async def test_a_bang_typed_while_the_agent_works_is_queued_then_run(tmp_path: Path) -> None:
    sandbox_or_skip()
    started, release = asyncio.Event(), asyncio.Event()

    @tool(safe=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        await release.wait()
        return "waited"

    app, provider = scripted_app(tmp_path, [call("wait"), "done"], tools=[wait])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "start")
        await asyncio.wait_for(started.wait(), 10)
        await send(pilot, "!echo queued-bang-ran > bang.out; echo queued-bang-said")
        row = app.query(UserRow)[-1]
        assert row.text.startswith("!echo queued-bang-ran") and row.has_class("queued")
        assert "wait until" not in notes(app) and not (tmp_path / "bang.out").exists()
        release.set()
        await until(pilot, lambda: "queued-bang-said" in notes(app))
        await idle(app, pilot)
        assert not row.has_class("queued") and (tmp_path / "bang.out").exists()
        assert len(provider.requests) == 2  # the command made no model turn
        last = app.agent.history[-1]  # after the run's answer: context for the next message
        assert last.role == "user" and "<bash-input>echo queued-bang-ran" in last.text
        assert app.agent.history[-2].text == "done"


async def test_esc_drops_the_queued_bangs(tmp_path: Path) -> None:
    sandbox_or_skip()
    started = asyncio.Event()

    @tool(safe=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    app, _ = scripted_app(tmp_path, [call("wait")], tools=[wait])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "start")
        await asyncio.wait_for(started.wait(), 10)
        await send(pilot, "!touch never-made")
        await pilot.press("escape")
        await idle(app, pilot)
        await pilot.pause()
        assert "not run (cancelled): !touch never-made" in notes(app)
        assert not any(r.text.startswith("!touch") for r in app.query(UserRow))
    assert not (tmp_path / "never-made").exists()


async def test_a_long_bang_output_is_held_like_a_tool_output(tmp_path: Path) -> None:
    """trial4: two `!cmd` outputs of ~59 K characters each (kept verbatim with the next
    message) filled a 32 K window for good. A long output now goes through the tool output
    gate: the conversation gets a preview stub, the full output is saved where `read` reads."""
    sandbox_or_skip()
    store = SessionStore(tmp_path / "sessions")
    app, _ = scripted_app(tmp_path, [], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!seq 1 60000")
        await idle(app, pilot)
        await until(pilot, lambda: bool(app.agent.history))
        (block,) = app.agent.history[-1].content
        assert isinstance(block, TextBlock)
        assert len(block.text) < 5000  # was ~59,000 characters
        assert "<persisted-output" in block.text and "read tool" in block.text
        command, output = parse_bang(block.text) or ("", "")
        assert command == "seq 1 60000" and output.startswith("<persisted-output")
        saved = next((tmp_path / "sessions").rglob("tool-results/bang-*.txt"))
        assert saved.read_text().splitlines()[-1] == "60000"
        assert str(saved) in block.text


async def test_a_short_bang_output_is_kept_whole(tmp_path: Path) -> None:
    sandbox_or_skip()
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!seq 1 1000")
        await idle(app, pilot)
        await until(pilot, lambda: bool(app.agent.history))
        (block,) = app.agent.history[-1].content
        assert isinstance(block, TextBlock)
        _command, output = parse_bang(block.text) or ("", "")
        assert output.split() == [str(n) for n in range(1, 1001)]



async def test_the_transcript_keeps_following_when_a_row_grows_after_layout(tmp_path: Path) -> None:
    """trial4: after a huge `!cmd` output the transcript stopped following the end: a row that
    grew after it was laid out (the big output) left the view above the new end, and from then
    on every new row counted as "the user scrolled away". Following is now a state that only
    the user's scrolling up ends."""
    from tether.tui.transcript import Transcript
    from tether.tui.widgets import NoteRow

    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        row = NoteRow("short")
        transcript.add(row)
        await pilot.pause()
        row.update("\n".join(str(n) for n in range(2000)))  # it grows after layout
        await pilot.pause()
        transcript.add(NoteRow("the next reply"))
        await pilot.pause()
        await pilot.pause()
        assert transcript.max_scroll_y > 100
        assert transcript.scroll_y >= transcript.max_scroll_y - 1
        transcript.scroll_home(animate=False)  # the user scrolls up: no more following
        await pilot.pause()
        transcript.add(NoteRow("another"))
        await pilot.pause()
        assert transcript.scroll_y < transcript.max_scroll_y - 1


async def test_the_transcript_follows_the_end_after_a_huge_bang_output(tmp_path: Path) -> None:
    """trial4: after `!seq 1 300000` the replies and notes that came next were below the
    visible area until Ctrl+End."""
    from tether.tui.transcript import Transcript

    sandbox_or_skip()
    app, _ = scripted_app(tmp_path, ["the answer"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!seq 1 300000")
        await idle(app, pilot)
        await until(pilot, lambda: bool(app.agent.history))
        await send(pilot, "what was that")
        await idle(app, pilot)
        await send(pilot, "/help")
        await pilot.pause()
        await pilot.pause()
        transcript = app.query_one(Transcript)
        assert transcript.max_scroll_y > 0
        assert transcript.scroll_y >= transcript.max_scroll_y - 1, (
            transcript.scroll_y,
            transcript.max_scroll_y,
        )
