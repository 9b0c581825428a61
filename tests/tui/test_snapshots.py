"""Snapshot tests of the main screens (pytest-textual-snapshot; SVGs under `__snapshots__`,
regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update` and review them).
Deterministic: fixed terminal size, a resumed session (no durations), deterministic ids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from kit.tui import SIZE, scripted_app
from tether.messages import TextBlock, ThinkingBlock, ToolCallBlock, Turn, text_turn, tool_result
from tether.session import SessionStore
from tether.testing import call
from tether.tui.panels import ContextScreen
from tether.tui.screens import ApprovalScreen, QuestionScreen
from tether.tui.settings_screen import SettingsScreen
from tether.tui.widgets import PromptInput

from .test_app import QUESTIONS

Snap = Callable[..., bool]

ANSWER = """The file defines **one** function:

```python
def greet(name: str) -> str:
    return f"hello {name}"
```

- it takes a name
- it returns a greeting
"""


def stored_session(tmp_path: Path) -> SessionStore:
    store = SessionStore(tmp_path / "sessions")
    read = ToolCallBlock(id="c1", name="read", arguments={"path": "greet.py"})
    with store.create("snap", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "What does greet.py do?"))
        w.append(
            Turn(
                id="a1",
                role="assistant",
                content=(ThinkingBlock(text="I should read it."), TextBlock(text="Reading it."), read),
            )
        )
        w.append(Turn(id="u2", role="user", content=(tool_result("c1", "def greet(name): ..."),)))
        w.append(text_turn("a2", "assistant", ANSWER))
    return store


async def settle(pilot: Pilot[Any], until: Callable[[], bool] = lambda: True) -> None:
    for _ in range(300):
        await pilot.pause()
        if until():
            break
    await pilot.pause()


def test_main_screen(snap_compare: Snap, tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [], store=stored_session(tmp_path), resume="snap")

    async def before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app.query_one(PromptInput).text = "now add a test for it"

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_approval_prompt(snap_compare: Snap, tmp_path: Path) -> None:
    (tmp_path / "greet.py").write_text("def greet(name):\n    return name\n")
    script = [call("edit", path="greet.py", old_string="return name", new_string="return f\"hello {name}\"")]
    app, _ = scripted_app(tmp_path, script, approval="ask")

    async def before(pilot: Pilot[Any]) -> None:
        app.query_one(PromptInput).text = "greet properly"
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, ApprovalScreen))

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_question_overlay(snap_compare: Snap, tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [call("question", questions=QUESTIONS)])

    async def before(pilot: Pilot[Any]) -> None:
        app.query_one(PromptInput).text = "ask me"
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, QuestionScreen))

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_context_screen(snap_compare: Snap, tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [], store=stored_session(tmp_path), resume="snap")

    async def before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app.query_one(PromptInput).text = "/context"
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, ContextScreen))

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_settings_screen(snap_compare: Snap, tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [], approval="auto-edit")

    async def before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot, lambda: isinstance(app.screen, SettingsScreen))
        for field in app.screen.query(Input):  # a blinking cursor made the picture flaky
            field.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 40), run_before=before)
