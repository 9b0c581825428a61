"""The TUI's overlays: the approval prompt and the question overlay (modal screens).

Owns: `ApprovalScreen` (shows the call: its kind, arguments, the diff of an edit; keys
y = allow once, a = allow for this session, n = deny with a typed reason, Esc = deny) and
r = always allow: the rules shown are added for good, the app writes them to the user settings;
`ask_approval` and `ask_questions` show the approval prompt or the question overlay
(`tether.tui.question.QuestionScreen`) and wait for the answer (the app's `Approver`, and
`OverlayQuestions`, the app's `QuestionBridge` to the overlay).
Does not own: the gate (`tether.agent.approval`), the question overlay itself
(`tether.tui.question`), the question schema (`tether.tools.context`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.errors import ConfigError
from tether.permissions.store import add_allow_rules
from tether.tools.context import Answer, QuestionSpec
from tether.tui.question import QuestionScreen

__all__ = ["ApprovalScreen", "OverlayQuestions", "QuestionScreen", "ask_approval", "ask_questions"]


async def ask_approval(
    app: App[Any], request: ApprovalRequest, note: Callable[[str], None]
) -> ApprovalDecision:
    """Show the approval prompt for `request` over `app` and wait for the decision; "always
    allow" rules are written to the user settings (`note` says where, or why not)."""
    done: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()

    def finish(decision: ApprovalDecision | None) -> None:
        if decision is not None and decision.rules:  # "always allow": saved for good
            try:
                path = add_allow_rules(decision.rules)
                note(f"always allowed: {', '.join(decision.rules)} (saved to {path})")
            except ConfigError as exc:
                note(f"the rule was not saved: {exc}")
        if not done.done():
            done.set_result(decision or ApprovalDecision.deny())

    app.push_screen(ApprovalScreen(request), callback=finish)
    return await done


class OverlayQuestions:
    """The app's `QuestionBridge` (`tether.agent.host`): the desktop alerted (`alert`), then
    the question overlay over `app`."""

    def __init__(self, app: App[Any], alert: Callable[[str], None]) -> None:
        self.app = app
        self.alert = alert

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        self.alert("a question is waiting for you")
        return await ask_questions(self.app, questions)


async def ask_questions(app: App[Any], questions: Sequence[QuestionSpec]) -> list[Answer]:
    """Show the question overlay over `app` and wait for the answers (none: abandoned)."""
    done: asyncio.Future[list[Answer]] = asyncio.get_running_loop().create_future()

    def finish(answers: list[Answer] | None) -> None:
        if not done.done():
            done.set_result(answers or [])

    app.push_screen(QuestionScreen(tuple(questions)), callback=finish)
    return await done


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Asks whether one tool call may run: a box over the whole width at the bottom (over the
    prompt, like Claude Code's inline ask), so the transcript above stays whole; centred and
    narrower, the transcript showed through at its sides as fragments."""

    DEFAULT_CSS = """
    ApprovalScreen { align: center bottom; }
    ApprovalScreen > Vertical { width: 100%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1; }
    ApprovalScreen #call { height: auto; max-height: 20; }
    ApprovalScreen #reason { display: none; }
    ApprovalScreen #reason.shown { display: block; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("y", "once", "allow once"),
        Binding("a", "session", "allow for this session"),
        Binding("r", "always", "always allow (saves the rule)"),
        Binding("n", "deny", "deny"),
        Binding("escape", "cancel", "deny"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        call = self.request.call
        with Vertical():
            yield Static(Text(f"Allow {call.name} ({self.request.kind})?", style="bold"))
            with VerticalScroll(id="call"):
                if self.request.diff:
                    yield Static(Syntax(self.request.diff, "diff", theme="ansi_dark"))
                else:
                    shown = json.dumps(call.arguments, indent=2, ensure_ascii=False)
                    yield Static(Text(shown))
            if self.request.reason:
                yield Static(Text(f"asked: {self.request.reason}", style="italic"))
            keys = "[y] allow once   [a] allow for this session   [n] deny with a reason"
            if self.request.suggested:
                keys += f"\n[r] always allow: {', '.join(self.request.suggested)} (saved to your settings)"
            yield Static(Text(keys))
            yield Input(placeholder="why not? (Enter sends the denial)", id="reason")

    def action_once(self) -> None:
        self.dismiss(ApprovalDecision.once())

    def action_session(self) -> None:
        self.dismiss(ApprovalDecision.for_session())

    def action_always(self) -> None:
        if self.request.suggested:
            self.dismiss(ApprovalDecision.always(self.request.suggested))

    def action_deny(self) -> None:
        reason = self.query_one("#reason", Input)
        reason.add_class("shown")
        reason.focus()

    def action_cancel(self) -> None:
        self.dismiss(ApprovalDecision.deny())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(ApprovalDecision.deny(event.value))
