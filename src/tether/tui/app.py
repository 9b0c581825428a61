"""The interactive session: `tether` / `tether chat` (a Textual app): the composition.

Owns: the screen's layout (transcript, todo panel, completions, prompt editor, footer), the
app's state (the open session, the run's worker, the queued prompts, the attached images), the
key table's actions and the wiring: each message, key and host callback handed to the part
that owns it; the notes (`note`), the footer's refresh, the desktop alert's gate (the terminal
not focused).
Does not own: building the agent (`tether.tui.opening`: also the embedded model's load in the
background), opening a session in the app (`tether.tui.session_open`), sending a prompt
(`tether.tui.sending`), running the agent, steering, cancelling (`tether.tui.run_control`),
the completion list's following of the prompt (`CompletionList.follow`, `tether.tui.completion`),
the commands (`tether.tui.handlers`, `/copy`: `tether.tui.clipboard`), the widgets
(`tether.tui.widgets`), the footer (`tether.tui.status`), the transcript, its windowing and
its keys (`tether.tui.transcript`), events → rows (`tether.tui.feed`), the approval prompt, the
question overlay and its bridge (`tether.tui.screens`), the safety net's keys and panels
(`tether.tui.safety`), images (`tether.tui.attach`), desktop notifications
(`tether.tui.notify`), Ctrl+G's editor (`tether.tui.editor`), double presses (`tether.tui.keys`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import TextArea
from textual.worker import Worker

from tether.agent.agent import Agent
from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.agent.events import AgentEvent, ErrorEvent, PlanEvent, TodoEvent, WarningEvent
from tether.agent.host import Host
from tether.messages import ContentBlock, ImageBlock
from tether.skills.commands import Command
from tether.tools.builtin.todo import latest_todo
from tether.tools.preview import edit_diff
from tether.tui.appearance import apply_saved_theme, theme_command
from tether.tui.attach import attach_pasted, clipboard_image, paste_image
from tether.tui.clipboard import copy_answer
from tether.tui.commands import COMMANDS, parse_command
from tether.tui.completion import Completer, menu_key
from tether.tui.editor import edit_prompt
from tether.tui.feed import Feed
from tether.tui.handlers import cycle_effort, run_command
from tether.tui.keys import DOUBLE_PRESS_S, DoublePress, app_bindings, apply_keybindings
from tether.tui.notify import alert_text
from tether.tui.opening import Factory, Opened, load_in_background
from tether.tui.pickers import Choice, PickerScreen
from tether.tui.run_control import cancel_tool, start_run, stop_run, turn_started
from tether.tui.safety import TodoPanel, cycle_mode, open_rewind
from tether.tui.screens import OverlayQuestions, ask_approval
from tether.tui.sending import send_prompt
from tether.tui.session_open import Opening, show_session, start_servers
from tether.tui.settings_screen import SettingsScreen
from tether.tui.status import StatusBar
from tether.tui.transcript import Transcript
from tether.tui.typeahead import driver_class as held_driver
from tether.tui.user_commands import CompletionList, command_table
from tether.tui.widgets import NoteRow, PromptInput, UserRow


class TetherApp(App[int]):
    """The interactive session over the agent `factory` builds.

    Args:
        factory: builds the agent for the app's host callbacks (`tether.tui.opening.open_agent` bound
            to the CLI's options; tests pass one over a `ScriptedProvider`).
        resume: a session id to resume at start, or None for a new session.
        pick: the sessions to offer at start (`tether chat --resume` without an id): the app
            opens on a picker of them (none picked: a new session), or None.
        clock: seconds, for the double presses (Ctrl+C quits, Esc Esc rewinds).
        elsewhere: for a session to resume at start, the folder it was started in and this
            one, when they differ and the first still exists (None: open it here): the app
            then asks where to open it (`open_in`, which the factory reads) before anything
            is built.
    """

    TITLE = "tether"
    BINDINGS = app_bindings()
    AUTO_FOCUS = "#prompt"
    """The prompt has the focus from the first frame: keys typed while `tether chat` started
    (the terminal buffers them) are read as soon as the app runs, before `on_mount`'s own
    focus call takes effect; with Textual's default (the first focusable widget, the
    transcript) they went to the transcript and were lost."""

    def __init__(
        self,
        factory: Factory,
        *,
        resume: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        pick: Callable[[], list[Choice]] | None = None,
        elsewhere: Callable[[str], tuple[Path, Path] | None] | None = None,
    ) -> None:
        super().__init__(driver_class=held_driver())  # type-ahead (`tether.tui.typeahead`)
        self.resume = resume
        self.pick = pick
        self.elsewhere = elsewhere
        self.open_in: Path | None = None
        """The folder the session opened at start works in, when the user picked its own
        folder over this one (`ask_where`); None: this one."""
        self.opened: Opened | None = None
        self.worker: Worker[None] | None = None
        self.busy = False
        self.queued: list[UserRow] = []
        self.queued_bangs: list[tuple[str, UserRow]] = []
        self.attached: list[ImageBlock] = []
        self.clipboard_image: Callable[[], ImageBlock | None] = clipboard_image
        self.write_terminal: Callable[[str], None] = self._write_terminal
        self.feed = Feed(
            lambda: self.transcript,
            history=lambda: self.agent.history,
            turn_started=lambda: turn_started(self),
            turn_ended=self.update_status,
            overwrite_diff=self._overwrite_diff,
        )
        self._ctrl_c = DoublePress(clock)
        self.completer = Completer(lambda: None if self.opened is None else self.agent.root)
        self.model_loading = False
        """The embedded model is loading in the background (the footer says so)."""
        self.start_error: str | None = None
        """Why the last session could not be opened (None once one opened): with no agent
        open at quit, the exit code is 1 (`action_quit`)."""
        self._esc = DoublePress(clock)
        self.plan: str | None = None  # a plan mode run's plan, shown once the run ends
        self._pending_events: list[AgentEvent] = []  # sent while no agent is open
        self.host = Host(
            on_event=self.on_agent_event,
            questions=OverlayQuestions(self, self.alert),
            approver=self.approve,
            note=self.note,
        )
        self.opening = Opening(factory, self.host)

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")
        yield TodoPanel(id="todo")
        yield CompletionList(id="completions")
        yield PromptInput(complete=self.complete, pasted=self.attach_pasted, menu_key=self.menu_key)
        yield StatusBar(id="status")

    def _overwrite_diff(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """A `write` call's diff against the existing file (`tether.tools.preview.edit_diff`),
        read when the call is shown, before it runs; None for a new file or another tool."""
        if name != "write" or self.opened is None:
            return None
        diff = edit_diff(self.agent.tool_context, name, arguments)
        return diff if diff is not None and not diff.startswith("--- /dev/null") else None

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def prompt_input(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def agent(self) -> Agent:
        assert self.opened is not None
        return self.opened.agent

    async def on_mount(self) -> None:
        self.set_interval(0.05, self.feed.flush)
        apply_keybindings(self, self.opening.pending.append)  # shown once the session opens
        self.query_one(PromptInput).focus()  # before the rows: a focus change restyles them all
        choices = self.pick() if self.pick is not None else []
        if choices:  # `--resume` without an id: the picker first
            screen = PickerScreen("resume which session? (this folder's first)", choices)
            self.push_screen(screen, callback=self._picked)
            return
        if self.opened is None and self.resume is not None and self.ask_where(self.resume):
            return
        await self.open_session(self.resume)

    def _picked(self, key: str | None) -> None:
        """The session picked at start (None: a new one)."""
        if key is not None and self.ask_where(key):
            return
        self.run_worker(self.open_session(key))

    def ask_where(self, resume: str) -> bool:
        """When session `resume` was started in another folder that still exists, ask where
        to open it: there (its files, the default) or here; Esc quits, nothing opened. True:
        asked (the session opens once answered)."""
        folders = self.elsewhere(resume) if self.elsewhere is not None else None
        if folders is None:
            return False
        there, here = folders
        choices = [
            Choice(str(there), f"there: {there} (where it was started; its tools work there)"),
            Choice("", f"here: {here} (its tools work on this folder instead)"),
        ]
        title = f"session {resume} was started in another folder: open it where?"

        def picked(key: str | None) -> None:
            if key is None:
                self.exit(0)
                return
            self.open_in = Path(key) if key else None
            self.run_worker(self.open_session(resume))

        self.push_screen(PickerScreen(title, choices), callback=picked)
        return True

    def preopen(self) -> None:
        """Build the agent now, before the app runs (an embedded model loads once the app
        is up: `open_session`). Errors are shown once the app is up. Not when the session is
        picked once the app runs, or it must ask where to open it (`ask_where`)."""
        if self.pick is not None:
            return
        if self.resume is not None and self.elsewhere is not None and self.elsewhere(self.resume):
            return
        self.start_error = self.opening.preopen(self.resume)

    async def open_session(self, resume: str | None) -> None:
        """Build the agent (new session, or `resume`), start its embedded model's load, show
        it (`tether.tui.session_open`)."""
        opened, error, pending = self.opening.build(resume)
        pending += self._early_notes(pending)
        if opened is None:
            if error is not None:
                self.start_error, self.opened = error, None
                pending.append(error)
            self._show(pending)
            return
        self.opened, self.start_error = opened, None
        self.model_loading = load_in_background(opened, lambda note: self._model_loaded(opened, note))
        agent = opened.agent
        apply_saved_theme(self, agent.config.tui.theme, self.note)
        if agent.config.tui.vim and self.prompt_input.vim is None:
            self.prompt_input.set_vim(True)
        await show_session(self, opened, pending)
        self.query_one(TodoPanel).show_items(latest_todo(agent.history))
        await start_servers(self, opened)
        self.update_status()

    def _early_notes(self, said: list[str]) -> list[str]:
        """The warnings and errors the agent sent while it was built (`on_agent_event`: a
        trust warning, before the screen existed), as note lines shown after the history,
        but those a setup note in `said` already tells (the trust warning is both a note and
        an event); its other events then are dropped (no run yet)."""
        events, self._pending_events = self._pending_events, []
        return [
            f"{e.type}: {e.kind}: {e.message}"
            for e in events
            if isinstance(e, ErrorEvent | WarningEvent)
            and not any(e.message in line for line in said)
        ]

    def _model_loaded(self, opened: Opened, note: str | None) -> None:
        """The embedded model's load ended (`note`: it failed; the next request tries again)."""
        if opened is self.opened:  # else a session switched since
            self.model_loading = False
            self._show([note] if note is not None else [])
            self.update_status()

    def note(self, text: str) -> None:
        """Show a line from tether in the transcript."""
        try:
            transcript = self.transcript
        except Exception:  # before the screen is composed: shown once it is
            self.opening.pending.append(text)
            return
        transcript.add(NoteRow(text))

    def _show(self, lines: list[str]) -> None:
        for line in lines:
            self.note(line)

    def update_status(self) -> None:
        """Refresh the footer."""
        agent = None if self.opened is None else self.opened.agent
        bar = self.query_one(StatusBar)
        bar.show(agent, busy=self.busy, queued=len(self.queued), loading=self.model_loading)

    # -- events ------------------------------------------------------------------------------

    def on_agent_event(self, event: AgentEvent) -> None:
        """Called by the agent (same event loop) with each event (`Feed`). A display fault
        is a note, never the agent's problem (the agent would fail the call it came from).
        An event sent while no agent is open (it is being built, in `preopen` before the
        screen exists or in `open_session`) is shown after the history (`_early_notes`)."""
        if self.opened is None:
            self._pending_events.append(event)
            return
        try:
            if isinstance(event, TodoEvent):
                self.query_one(TodoPanel).show_items(event.items)
            elif isinstance(event, PlanEvent):
                self.plan = event.text
            self.feed.on_event(event)
        except Exception as exc:
            self.note(f"display error on a {event.type} event: {type(exc).__name__}: {exc}")

    # -- input -------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        """A `/command` is run (`tether.tui.handlers`), anything else sent
        (`tether.tui.sending`)."""
        text = message.text
        command = parse_command(text)
        if command is not None:
            await self.run_command(command.name, command.arg)
            return
        await send_prompt(self, text)

    def set_prompt(self, text: str, *, keep_typed: bool = False) -> None:
        """Put `text` in the prompt editor (`keep_typed`: not over something typed)."""
        prompt = self.query_one(PromptInput)
        if not (keep_typed and prompt.text):
            prompt.text = text
            prompt.move_cursor(prompt.document.end)

    def attach_pasted(self, text: str) -> bool:
        """A pasted image file path attaches the image (`tether.tui.attach`)."""
        return attach_pasted(self, text, None if self.opened is None else self.agent.root)

    async def action_paste_image(self) -> None:
        """Ctrl+V: the clipboard's image, else text (`tether.tui.attach.paste_image`)."""
        await paste_image(self, PromptInput)

    def start_run(
        self, prompt: str | list[ContentBlock] | None, *, command: Command | None = None
    ) -> None:
        """Run the agent on `prompt` (`tether.tui.run_control.start_run`)."""
        start_run(self, prompt, command)

    def command_table(self) -> list[tuple[str, str, str]]:
        """Every command: (name, argument hint, description), built-in then the session's."""
        return command_table(COMMANDS, self.opened.commands if self.opened else {})

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """The completion list follows what is typed (`CompletionList.follow`)."""
        if isinstance(event.text_area, PromptInput):
            self._follow_prompt(event.text_area.text)

    def _follow_prompt(self, text: str) -> None:
        table = self.command_table
        self.query_one(CompletionList).follow(text, lambda t: self.completer.entries(t, table()))

    def menu_key(self, key: str) -> bool:
        """A key of the prompt while the completion list shows (`tether.tui.completion`). The
        list is brought up to the prompt's text first: keys typed fast (a paste, tmux) can
        reach here before the text's Changed message, and Enter must not take an entry
        computed for an older text."""
        self._follow_prompt(self.prompt_input.text)
        return menu_key(self.query_one(CompletionList), self.prompt_input, key)

    def complete(self, text: str) -> str | None:
        """Tab: complete a `/command` or the last `@path` word (`tether.tui.completion`)."""
        return self.completer.complete(text, [n for n, _h, _d in self.command_table()])

    # -- commands ----------------------------------------------------------------------------

    def copy_answer(self, arg: str = "") -> None:
        """`/copy [N|pick]` (`tether.tui.clipboard.copy_answer`)."""
        copy_answer(self, arg, os.environ)

    def pick_theme(self, arg: str) -> None:
        """`/theme [name]` (`tether.tui.appearance`)."""
        theme_command(self, arg, self.note)

    async def run_command(self, name: str, arg: str) -> None:
        """Run `/name arg` (`tether.tui.handlers`)."""
        await run_command(self, name, arg)

    # -- overlays ----------------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The `Approver`: the approval prompt (`tether.tui.screens.ask_approval`)."""
        self.alert(f"approve {request.call.name}?")
        return await ask_approval(self, request, self.note)

    def alert(self, body: str) -> None:
        """Notify the desktop (`tui.notify`: `tether.tui.notify`) when the terminal is not
        focused (Textual's `app_focus`, from the terminal's focus reports)."""
        if self.app_focus or self.opened is None:
            return
        text = alert_text(self.agent.config.tui.notify, body, os.environ)
        if text is not None:
            self.write_terminal(text)

    def _write_terminal(self, text: str) -> None:
        driver = self._driver  # the sequence goes out with the screen's own output
        if driver is not None and not self.is_headless:
            driver.write(text)

    # -- keys --------------------------------------------------------------------------------

    def action_cancel_request(self) -> None:
        """Esc: cancel the request; when idle, Esc twice opens the rewind picker."""
        if self.busy and self.worker is not None:
            self.worker.cancel()
            return
        if self._esc.pressed():
            open_rewind(self)

    def action_next_mode(self) -> None:
        """Shift+Tab: ask → auto-edit → plan (`tether.tui.safety.cycle_mode`); while the
        completion list shows under the prompt: the entry above."""
        if isinstance(self.focused, PromptInput) and self.menu_key("shift+tab"):
            return
        cycle_mode(self)

    def action_cycle_effort(self) -> None:
        cycle_effort(self)

    def action_external_editor(self) -> None:
        """Ctrl+G: the prompt in `$VISUAL` / `$EDITOR` (`tether.tui.editor`), not under an overlay."""
        if len(self.screen_stack) == 1:
            edit_prompt(self, self.prompt_input)

    def action_cancel_tool(self) -> None:
        cancel_tool(self)

    def action_settings(self) -> None:
        if self.opened is not None:
            self.push_screen(SettingsScreen(self.agent), callback=self._settings_done)

    def _settings_done(self, note: str | None) -> None:
        if note:
            self.note(note)
        self.update_status()

    def action_toggle_last(self) -> None:
        self.transcript.toggle_last()

    async def action_transcript_start(self) -> None:
        """Ctrl+Home: the transcript's first turn (mounted on demand)."""
        await self.transcript.jump_start()

    async def action_transcript_end(self) -> None:
        """Ctrl+End: the transcript's end."""
        await self.transcript.jump_end()

    def action_transcript_page(self, pages: int) -> None:
        """PageUp / PageDown in the editor: scroll the transcript."""
        self.transcript.page(pages)

    async def action_ctrl_c(self) -> None:
        """Ctrl+C: cancel a running request, as Esc does (Claude Code's habit); twice quits."""
        if self._ctrl_c.pressed():
            await self.action_quit()
            return
        if self.busy and self.worker is not None:
            self.worker.cancel()
        self.notify("Press Ctrl+C again to quit", timeout=DOUBLE_PRESS_S)

    async def action_quit(self) -> None:
        """Cancel a running request (its partial turn is persisted), close the session, exit:
        0, or 1 when no agent is open because it could not start (`start_error`)."""
        await stop_run(self)
        if self.opened is not None:
            await self.opened.aclose()
        self.exit(1 if self.opened is None and self.start_error is not None else 0)

