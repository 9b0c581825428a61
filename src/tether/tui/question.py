"""The question overlay: the `question` tool's 1-4 questions put to the user, reviewed, then
submitted together.

Owns: `QuestionScreen`. One page per question (a tab strip on top: each question's header, ✓
once answered, and Submit): its options in a menu ending in an action row, a free-text input
under it. Enter or Space on an option selects it (a single-select question; Enter then moves the
highlight to the action row) or toggles it (multi-select), and so does its number (1-9); a
typed answer (Enter in the input) replaces the options' choice. The action row is Submit when there is one question (it commits),
else Next: the last Next leads to the review page (each question with its answer) whose Submit
row commits them all; Left / Right move between pages. Nothing is answered before Submit; Esc
abandons every question. The highlighted option's description and preview are shown under the
menu, the preview through the transcript's Markdown (a preview without a fence is shown as a
code block, its language guessed), so code is highlighted as in the transcript. ↑ from the
input goes back to the menu.
Does not own: waiting for the answers (`tether.tui.screens.ask_questions`), the question schema
(`tether.tools.context`).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from tether.tools.context import ABANDONED, Answer, QuestionSpec

SUBMIT = "submit"
NEXT = "next"


def preview_markdown(preview: str) -> str:
    """A preview as the transcript's Markdown shows it: as written when it holds a code fence,
    else as one fenced block (monospace, its language guessed by the highlighter). Pure."""
    if "```" in preview or "~~~" in preview:
        return preview
    return f"```\n{preview.rstrip()}\n```"


class QuestionScreen(ModalScreen[list[Answer]]):
    """Puts the model's questions to the user; dismisses with one answer per question."""

    DEFAULT_CSS = """
    QuestionScreen { align: center middle; }
    QuestionScreen > Vertical { width: 90%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1; }
    QuestionScreen #chip { width: 1fr; height: auto; }
    QuestionScreen #options { height: auto; max-height: 14; }
    QuestionScreen #detail { height: auto; max-height: 14; overflow-y: auto; }
    QuestionScreen #description { color: $text-muted; height: auto; }
    QuestionScreen #preview { height: auto; margin: 0; padding: 0; }
    QuestionScreen #hint { color: $warning; height: auto; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("escape", "abandon", "abandon"),
        Binding("space", "toggle_option", "choose", show=False),
        Binding("left", "page(-1)", "previous question", show=False),
        Binding("right", "page(1)", "next question", show=False),
        Binding("up", "to_menu", "back to the options", show=False),
        *(Binding(str(n), f"number({n})", f"option {n}", show=False) for n in range(1, 10)),
    ]

    def __init__(self, questions: tuple[QuestionSpec, ...]) -> None:
        super().__init__()
        self.questions = questions
        self.page = 0
        """The question shown (`len(questions)`: the review page)."""
        self.chosen: list[set[str]] = [set() for _ in questions]
        self.typed: list[str | None] = [None for _ in questions]

    # -- what the user answered ---------------------------------------------------------------

    def answer(self, i: int) -> Answer | None:
        """Question `i`'s answer so far (None: none yet)."""
        if self.typed[i]:
            return Answer(text=self.typed[i])
        if self.chosen[i]:
            options = self.questions[i].options
            return Answer(labels=tuple(o.label for o in options if o.label in self.chosen[i]))
        return None

    def answers(self) -> list[Answer]:
        """Every question's answer (an unanswered one: abandoned)."""
        return [self.answer(i) or ABANDONED for i in range(len(self.questions))]

    @property
    def reviewing(self) -> bool:
        return self.page >= len(self.questions)

    # -- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="chip")
            yield Static("", id="question")
            yield OptionList(id="options")
            with Vertical(id="detail"):
                yield Static("", id="description")
                yield Markdown("", id="preview")
            yield Input(placeholder="or type your own answer (Enter)", id="free")
            yield Static("", id="hint")
            yield Static("", id="keys")

    def on_mount(self) -> None:
        self._show()

    def _tabs(self) -> Text:
        tabs = Text()
        pages = [q.header for q in self.questions] + (["Submit"] if len(self.questions) > 1 else [])
        for i, name in enumerate(pages):
            done = i < len(self.questions) and self.answer(i) is not None
            label = f" {'✓' if done else '☐' if i < len(self.questions) else '→'} {name} "
            tabs.append(label, style="bold reverse" if i == self.page else "")
            tabs.append(" ")
        return tabs

    def _show(self, highlight: int = 0) -> None:
        """Show the current page (question or review), `highlight` the row highlighted."""
        self.query_one("#chip", Static).update(self._tabs())
        self.query_one("#hint", Static).update("")
        options = self.query_one("#options", OptionList)
        options.clear_options()
        free = self.query_one("#free", Input)
        if self.reviewing:
            self.query_one("#question", Static).update(Text("Review your answers", style="bold"))
            options.add_options(self._review_rows())
            free.display = False
            keys = "Enter on Submit sends · Enter on a question changes it · ← → pages · Esc abandons"
        else:
            q = self.questions[self.page]
            multi = "  (several: Enter or Space toggles)" if q.multi_select else ""
            self.query_one("#question", Static).update(Text(q.question + multi, style="bold"))
            options.add_options([self._option(i) for i in range(len(q.options))])
            options.add_option(None)  # a separator
            options.add_option(self._action())
            free.display = True
            free.value = self.typed[self.page] or ""
            where = "Submit sends" if len(self.questions) == 1 else "← → pages"
            keys = f"↑↓ choose · Enter select · Tab: type an answer · {where} · Esc abandons"
        self.query_one("#keys", Static).update(Text(keys, style="dim"))
        options.highlighted = highlight
        options.focus()
        self._detail(highlight)

    def _option(self, i: int) -> Option:
        q = self.questions[self.page]
        label = q.options[i].label
        on = label in self.chosen[self.page]
        mark = ("[x] " if on else "[ ] ") if q.multi_select else ("(•) " if on else "( ) ")
        number = f"{i + 1}. " if i < 9 else "   "
        return Option(Text(number + mark + label, style="bold" if on else ""), id=f"o{i}")

    def _action(self) -> Option:
        if len(self.questions) == 1:
            return Option(Text("Submit", style="bold"), id=SUBMIT)
        last = self.page == len(self.questions) - 1
        return Option(Text("Review answers ›" if last else "Next ›", style="bold"), id=NEXT)

    def _review_rows(self) -> list[Option | None]:
        rows: list[Option | None] = []
        for i, q in enumerate(self.questions):
            got = self.answer(i)
            if got is None:
                said = Text("not answered (sent as skipped)", style="italic")
            else:
                said = Text(got.text if got.text is not None else ", ".join(got.labels))
            rows.append(Option(Text(f"{q.header}: ", style="bold") + said, id=f"q{i}"))
        rows.append(None)
        rows.append(Option(Text("Submit answers", style="bold"), id=SUBMIT))
        return rows

    def _detail(self, i: int | None) -> None:
        """The highlighted option's description and preview (nothing for other rows)."""
        description, preview = "", ""
        if not self.reviewing and i is not None and i < len(self.questions[self.page].options):
            o = self.questions[self.page].options[i]
            description, preview = o.description or "", o.preview or ""
        self.query_one("#description", Static).update(Text(description))
        md = self.query_one("#preview", Markdown)
        md.display = bool(preview)
        md.update(preview_markdown(preview) if preview else "")

    def _action_row(self) -> int:
        return self.query_one("#options", OptionList).option_count - 1

    # -- keys ----------------------------------------------------------------------------------

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._detail(event.option_index)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        key = event.option.id or ""
        if key == SUBMIT:
            self._submit()
        elif key == NEXT:
            self._go(self.page + 1)
        elif key.startswith("q"):  # the review page: back to that question
            self._go(int(key[1:]))
        elif key.startswith("o"):
            self._choose(int(key[1:]), jump=True)

    def _choose(self, i: int, *, jump: bool) -> None:
        """Option `i` of the page selected (single-select: then the action row highlighted
        when `jump`) or toggled (multi-select)."""
        q = self.questions[self.page]
        label = q.options[i].label
        if q.multi_select:
            self.chosen[self.page] ^= {label}
        else:
            self.chosen[self.page] = {label}
            jump_to = self._action_row() if jump else i
            self.typed[self.page] = None
            self._show(jump_to)
            return
        self.typed[self.page] = None
        self._show(i)

    def action_toggle_option(self) -> None:
        options = self.query_one("#options", OptionList)
        i = options.highlighted
        if self.reviewing or i is None or not options.has_focus:
            return
        if i < len(self.questions[self.page].options):
            self._choose(i, jump=False)

    def action_number(self, n: int) -> None:
        """A digit on the menu: option `n` selected (as Enter on it) or toggled."""
        if self.reviewing or isinstance(self.focused, Input):
            return
        if n <= len(self.questions[self.page].options):
            self._choose(n - 1, jump=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.typed[self.page] = text or None
        if text and not self.questions[self.page].multi_select:
            self.chosen[self.page] = set()
        self._show(self._action_row() if text else 0)

    def action_page(self, delta: int) -> None:
        if isinstance(self.focused, Input):
            return
        self._go(self.page + delta)

    def action_to_menu(self) -> None:
        """↑ in the input: back to the menu (on its last row)."""
        if isinstance(self.focused, Input):
            options = self.query_one("#options", OptionList)
            options.focus()
            options.highlighted = self._action_row()

    def _go(self, page: int) -> None:
        last = len(self.questions) if len(self.questions) > 1 else 0
        page = max(0, min(page, last))
        if page != self.page:
            self.page = page
            self._show()

    def _submit(self) -> None:
        if len(self.questions) == 1 and self.answer(0) is None:
            hint = "choose an option or type an answer first (Esc abandons)"
            self.query_one("#hint", Static).update(hint)
            return
        self.dismiss(self.answers())

    def action_abandon(self) -> None:
        self.dismiss([ABANDONED] * len(self.questions))
