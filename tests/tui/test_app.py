"""The interactive session, driven with Textual's Pilot over the scripted provider: the
transcript, steering, the keys, the approval prompt, the question overlay, the commands."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kit.tui import QUESTIONS, SIZE, idle, notes, scripted_app, send, status
from tether.messages import TextBlock, ThinkingBlock
from tether.session import SessionStore
from tether.testing import Reply, call
from tether.tools.base import tool
from tether.tui.app import TetherApp
from tether.tui.screens import ApprovalScreen, QuestionScreen
from tether.tui.widgets import (
    AssistantRow,
    ThinkingRow,
    ToolRow,
    UserRow,
)


async def test_prompt_answer_thinking_and_tool_row(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    script = [
        Reply(blocks=(ThinkingBlock(text="let me look"), TextBlock(text="Reading."))),
        call("read", path="a.txt"),
        "It says **hello**.\n\n```python\nprint('hi')\n```",
    ]
    script[0] = Reply(
        blocks=(ThinkingBlock(text="let me look"), TextBlock(text="Reading."),
                call("read", path="a.txt"))
    )
    app, provider = scripted_app(tmp_path, script[:1] + script[2:])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "what is in a.txt?")
        await idle(app, pilot)
        assert [r.text for r in app.query(UserRow)] == ["what is in a.txt?"]
        assert app.query_one(ThinkingRow).text == "let me look"
        assert app.query_one(ThinkingRow).collapsed
        row = app.query_one(ToolRow)
        assert row.name_ == "read" and row.status == "ok" and "path=a.txt" in str(row.title)
        assert "s" in str(row.title).rsplit("·", 1)[-1]  # a duration
        texts = [r.text for r in app.query(AssistantRow)]
        assert texts == ["Reading.", "It says **hello**.\n\n```python\nprint('hi')\n```"]
        assert "scripted/scripted" in status(app) and "ctx" in status(app)
        assert len(provider.requests) == 2


async def test_typing_while_the_agent_works_queues_a_steering_message(tmp_path: Path) -> None:
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
        await send(pilot, "also check the tests")
        queued = app.query(UserRow)[-1]
        assert queued.has_class("queued") and "queued" in str(queued.render())
        assert "1 queued" in status(app)
        release.set()
        await idle(app, pilot)
        assert not queued.has_class("queued")
        assert "also check the tests" in provider.requests[1].messages[-1].text


async def test_a_message_queued_during_a_reply_shows_after_that_reply(tmp_path: Path) -> None:
    """The trial's transcript read `first / queued second / echo first / echo second`: the
    queued row stays where it was typed until the agent takes it, then moves to that point."""
    app, provider = scripted_app(tmp_path, ["echo first", "echo second"])
    entered, gate = asyncio.Event(), asyncio.Event()
    stream, seen = provider.stream, list[object]()

    async def slow(request: Any) -> Any:
        seen.append(request)
        if len(seen) == 1:  # the first reply waits: the second message is typed meanwhile
            entered.set()
            await gate.wait()
        async for event in stream(request):
            yield event

    provider.stream = slow  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "first")
        await asyncio.wait_for(entered.wait(), 10)
        await send(pilot, "second")
        gate.set()
        await idle(app, pilot)
        rows = [w for w in app.transcript.children if isinstance(w, UserRow | AssistantRow)]
        assert [w.text for w in rows] == ["first", "echo first", "second", "echo second"]
        assert not any(w.has_class("queued") for w in rows if isinstance(w, UserRow))


async def test_esc_cancels_and_the_partial_turn_is_persisted(tmp_path: Path) -> None:
    started = asyncio.Event()

    @tool(safe=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    store = SessionStore(tmp_path / "sessions")
    app, _ = scripted_app(tmp_path, [call("wait")], tools=[wait], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await asyncio.wait_for(started.wait(), 10)
        await pilot.press("escape")
        await idle(app, pilot)
        assert "cancelled" in notes(app)
        await app.action_quit()
    turns = store.load("s1").turns
    assert turns[-1].tool_results[0].text.startswith("cancelled while running")  # killed


async def test_ctrl_c_cancels_a_running_request_as_esc_does(tmp_path: Path) -> None:
    """The trial pressed Ctrl+C to interrupt (Claude Code's habit) and the request went on:
    one press cancels it, and the session stays open (two quit)."""
    started = asyncio.Event()

    @tool(safe=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    app, _ = scripted_app(tmp_path, [call("wait")], tools=[wait])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await asyncio.wait_for(started.wait(), 10)
        await pilot.press("ctrl+c")
        await idle(app, pilot)
        assert "cancelled" in notes(app) and not app.busy
        assert app.is_running  # one press: still open


async def test_ctrl_k_cancels_the_running_tool_and_the_run_goes_on(tmp_path: Path) -> None:
    started = asyncio.Event()

    @tool(safe=True)
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    app, provider = scripted_app(tmp_path, [call("wait"), "went on"], tools=[wait])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await asyncio.wait_for(started.wait(), 10)
        await pilot.press("ctrl+k")
        await idle(app, pilot)
        assert app.query_one(ToolRow).status == "error"
        assert app.query(AssistantRow)[-1].text == "went on"
        assert len(provider.requests) == 2


async def test_ctrl_c_twice_quits_once_warns(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value == 0


async def test_approval_allow_once_for_session_and_deny_with_reason(tmp_path: Path) -> None:
    script = [
        call("write", path="a.txt", content="one\n"),
        call("write", path="b.txt", content="two\n"),
        call("write", path="c.txt", content="three\n"),
        call("bash", command="rm -rf x"),
        "stopped",
    ]
    app, provider = scripted_app(tmp_path, script, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "write files")
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen):
                break
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.request.diff is not None
        assert "+one" in screen.request.diff
        await pilot.press("y")  # a.txt once
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen) and app.screen is not screen:
                break
        await pilot.press("a")  # b.txt and every later write
        for _ in range(100):
            await pilot.pause()
            if isinstance(app.screen, ApprovalScreen) and app.screen.request.call.name == "bash":
                break
        await pilot.press("n")
        await pilot.press(*"use git clean")
        await pilot.press("enter")
        await idle(app, pilot)
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert (tmp_path / "c.txt").read_text() == "three\n"  # remembered: not asked
    denied = provider.requests[4].messages[-1].tool_results[0]
    assert denied.is_error and "use git clean" in denied.text




async def wait_screen(app: TetherApp, pilot: Pilot[int], kind: type) -> None:
    for _ in range(200):
        await pilot.pause()
        if isinstance(app.screen, kind):
            return
    raise AssertionError(f"no {kind.__name__}")


async def test_question_overlay_esc_abandons(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, [call("question", questions=QUESTIONS[:1]), "ok"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "ask me")
        await wait_screen(app, pilot, QuestionScreen)
        await pilot.press("enter")  # "small" chosen, not sent
        await pilot.press("escape")
        await idle(app, pilot)
    result = json.loads(provider.requests[1].messages[-1].tool_results[0].text)
    assert result == [{"header": "Plan", "abandoned": True}]
