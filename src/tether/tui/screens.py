"""The TUI's overlays: the approval prompt and the question overlay (modal screens).

Owns: `ApprovalScreen` (shows the call: its kind, arguments, the diff of an edit; keys
y = allow once, a = allow for this session, n = deny with a typed reason, Esc = deny) and
r = always allow: the rules shown are added for good, the app writes them to the user settings;
`QuestionScreen` (1-4 questions, each a header chip and 2-16 options; the highlighted
option's preview is shown; Space toggles in a multi-select; a free-text row; Enter answers,
Esc abandons). Each dismisses with its answer; `ask_approval` and `ask_questions` show one and
wait for it (the app's `Approver` and `QuestionBridge`).
Does not own: the gate (`tether.agent.approval`), the question schema (`tether.tools.context`).
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
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.errors import ConfigError
from tether.permissions.store import add_allow_rules
from tether.tools.context import ABANDONED, Answer, QuestionSpec


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


async def ask_questions(app: App[Any], questions: Sequence[QuestionSpec]) -> list[Answer]:
    """Show the question overlay over `app` and wait for the answers (none: abandoned)."""
    done: asyncio.Future[list[Answer]] = asyncio.get_running_loop().create_future()

    def finish(answers: list[Answer] | None) -> None:
        if not done.done():
            done.set_result(answers or [])

    app.push_screen(QuestionScreen(tuple(questions)), callback=finish)
    return await done


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Asks whether one tool call may run."""

    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical { width: 90%; height: auto; max-height: 90%;
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


class QuestionScreen(ModalScreen[list[Answer]]):
    """Puts the model's questions to the user, one after the other."""

    DEFAULT_CSS = """
    QuestionScreen { align: center middle; }
    QuestionScreen > Vertical { width: 90%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1; }
    QuestionScreen #chip { background: $accent; color: $text; width: auto; padding: 0 1; }
    QuestionScreen #options { height: auto; max-height: 18; }
    QuestionScreen #preview { max-height: 10; color: $text-muted; }
    """
    BINDINGS = [  # noqa: RUF012
        Binding("escape", "abandon", "abandon"),
        Binding("space", "toggle_option", "choose", show=False),
    ]

    def __init__(self, questions: tuple[QuestionSpec, ...]) -> None:
        super().__init__()
        self.questions = questions
        self.index = 0
        self.answers: list[Answer] = []
        self.chosen: set[str] = set()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="chip")
            yield Static("", id="question")
            yield OptionList(id="options")
            yield Static("", id="preview")
            yield Input(placeholder="or type your own answer (Enter)", id="free")
            yield Static(
                Text("↑↓ choose · Enter answer · Space toggle (multi-select) · Esc abandon"),
                id="keys",
            )

    def on_mount(self) -> None:
        self._show()

    @property
    def current(self) -> QuestionSpec:
        return self.questions[self.index]

    def _show(self) -> None:
        q = self.current
        self.chosen = set()
        chip = f"{q.header}  ({self.index + 1}/{len(self.questions)})"
        self.query_one("#chip", Static).update(Text(chip))
        multi = "  (choose several with Space)" if q.multi_select else ""
        self.query_one("#question", Static).update(Text(q.question + multi, style="bold"))
        options = self.query_one("#options", OptionList)
        options.clear_options()
        options.add_options([self._option(i) for i in range(len(q.options))])
        options.highlighted = 0
        options.focus()
        self.query_one("#free", Input).value = ""
        self._preview(0)

    def _option(self, i: int) -> Option:
        o = self.current.options[i]
        mark = ""
        if self.current.multi_select:
            mark = "[x] " if o.label in self.chosen else "[ ] "
        text = Text(mark + o.label, style="bold")
        if o.description:
            text.append(f"  {o.description}", style="dim")
        return Option(text, id=str(i))

    def _preview(self, i: int | None) -> None:
        preview = self.current.options[i].preview if i is not None else None
        self.query_one("#preview", Static).update(Text(preview or ""))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._preview(event.option_index)

    def action_toggle_option(self) -> None:
        options = self.query_one("#options", OptionList)
        i = options.highlighted
        if not self.current.multi_select or i is None or not options.has_focus:
            return
        label = self.current.options[i].label
        self.chosen ^= {label}
        options.replace_option_prompt_at_index(i, self._option(i).prompt)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        label = self.current.options[event.option_index].label
        if self.current.multi_select and self.chosen:
            labels = tuple(o.label for o in self.current.options if o.label in self.chosen)
            self._answer(Answer(labels=labels))
        else:
            self._answer(Answer(labels=(label,)))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self._answer(Answer(text=event.value.strip()))

    def _answer(self, answer: Answer) -> None:
        self.answers.append(answer)
        self.index += 1
        if self.index >= len(self.questions):
            self.dismiss(self.answers)
        else:
            self._show()

    def action_abandon(self) -> None:
        rest = len(self.questions) - len(self.answers)
        self.dismiss([*self.answers, *([ABANDONED] * rest)])
