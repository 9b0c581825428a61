"""The interactive session: `tether` / `tether chat` (a Textual app).

Owns: the screen's layout (transcript, todo panel, completions, prompt editor, footer), opening
a session, running the agent as a worker (Esc cancels it: the loop persists the partial turn),
steering (a prompt sent while the agent works is queued with `Agent.steer` and shown as queued
until the next turn boundary takes it), sending a prompt (a `/command`, or text too large for
the window: refused and kept in the editor), and the key table, each key handed to the part
that owns it.
Does not own: building the agent (`tether.tui.opening`), the widgets (`tether.tui.widgets`),
the footer (`tether.tui.status`), the transcript and its windowing (`tether.tui.transcript`),
events → rows (`tether.tui.feed`), running the commands (`tether.tui.handlers`), the approval
prompt and the question overlay (`tether.tui.screens`), the safety net's keys and panels
(`tether.tui.safety`: Esc Esc rewinds, Shift+Tab cycles the modes, the plan approval, the todo
panel), images (`tether.tui.attach`: Ctrl+V, a pasted image path, `@shot.png`), desktop
notifications (`tether.tui.notify`), the overlays' viewer (`tether.tui.viewer`), Ctrl+G's
editor (`tether.tui.editor`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence

from textual.app import App, ComposeResult
from textual.widgets import Collapsible, TextArea
from textual.worker import Worker

from tether.agent.agent import Agent
from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.agent.attachments import image_refusal
from tether.agent.events import AgentEvent, ErrorEvent, PlanEvent, TodoEvent, WarningEvent
from tether.agent.host import Host
from tether.agent.input_fit import fixed_tokens, input_overflow
from tether.agent.mentions import mention_chip, mention_content, resolve_mentions
from tether.agent.sessions import stored_host_outputs
from tether.errors import ConfigError, RunError
from tether.messages import ContentBlock, ImageBlock
from tether.skills.commands import Command
from tether.tools.builtin.todo import latest_todo
from tether.tools.context import Answer, QuestionSpec
from tether.tui.appearance import apply_saved_theme, theme_command
from tether.tui.attach import attach_pasted, clipboard_image, image_chip, paste_image
from tether.tui.clipboard import answer_choices, copy_command
from tether.tui.commands import COMMANDS, parse_command
from tether.tui.completion import Completer, menu_key
from tether.tui.editor import edit_prompt
from tether.tui.feed import Feed
from tether.tui.handlers import cycle_effort, run_command
from tether.tui.keys import app_bindings, apply_keybindings
from tether.tui.notify import alert_text
from tether.tui.opening import Factory, Opened, load_embedded
from tether.tui.pickers import Choice, PickerScreen
from tether.tui.rows import history_rows, stored_subagents
from tether.tui.safety import PlanScreen, TodoPanel, cycle_mode, open_rewind, plan_done
from tether.tui.screens import ask_approval, ask_questions
from tether.tui.settings_screen import SettingsScreen
from tether.tui.shell_commands import run_queued_bangs
from tether.tui.status import StatusBar
from tether.tui.transcript import Transcript
from tether.tui.user_commands import CommandRun, CompletionList, command_table
from tether.tui.welcome import Welcome
from tether.tui.widgets import NoteRow, PromptInput, UserRow

QUIT_WINDOW_S = 2.0
"""Two Ctrl+C presses within this many seconds quit."""
Notice = ErrorEvent | WarningEvent
"""The events the transcript shows as one note line (as `Feed` does)."""


class _Bridge:
    """The `QuestionBridge` of the app: the question overlay."""

    def __init__(self, app: TetherApp) -> None:
        self.app = app

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        self.app.alert("a question is waiting for you")
        return await ask_questions(self.app, questions)


class TetherApp(App[int]):
    """The interactive session over the agent `factory` builds.

    Args:
        factory: builds the agent for the app's host callbacks (`tether.tui.opening.open_agent` bound
            to the CLI's options; tests pass one over a `ScriptedProvider`).
        resume: a session id to resume at start, or None for a new session.
        pick: the sessions to offer at start (`tether chat --resume` without an id): the app
            opens on a picker of them (none picked: a new session), or None.
        clock: seconds, for the Ctrl+C window.
    """

    TITLE = "tether"
    BINDINGS = app_bindings()

    def __init__(
        self,
        factory: Factory,
        *,
        resume: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        pick: Callable[[], list[Choice]] | None = None,
    ) -> None:
        super().__init__()
        self.factory = factory
        self.resume = resume
        self.pick = pick
        self.clock = clock
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
            turn_started=self._turn_started,
            turn_ended=self.update_status,
        )
        self._last_ctrl_c: float | None = None
        self.completer = Completer(lambda: None if self.opened is None else self.agent.root)
        self._preopened: Opened | None = None
        self._preopen_failed = False
        self.start_error: str | None = None
        """Why the last session could not be opened (None once one opened): with no agent
        open at quit, the exit code is 1 (`action_quit`)."""
        self._pending_notes: list[str] = []
        self._pending_events: list[AgentEvent] = []  # before the screen exists (`preopen`)
        self._last_esc: float | None = None
        self._plan: str | None = None  # a plan mode run's plan, shown once the run ends
        self.host = Host(
            on_event=self.on_agent_event,
            questions=_Bridge(self),
            approver=self.approve,
            note=self.note,
        )

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")
        yield TodoPanel(id="todo")
        yield CompletionList(id="completions")
        yield PromptInput(complete=self.complete, pasted=self.attach_pasted, menu_key=self.menu_key)
        yield StatusBar(id="status")

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
        apply_keybindings(self, self._pending_notes.append)  # shown once the session opens
        self.query_one(PromptInput).focus()  # before the rows: a focus change restyles them all
        choices = self.pick() if self.pick is not None else []
        if choices:  # `--resume` without an id: the picker first
            screen = PickerScreen("resume which session? (this folder's first)", choices)
            self.push_screen(screen, callback=self._picked)
            return
        await self.open_session(self.resume)

    def _picked(self, key: str | None) -> None:
        """The session picked at start (None: a new one)."""
        self.run_worker(self.open_session(key))

    def preopen(self) -> None:
        """Build the agent now, before the app runs, and start an embedded model's child
        process (its progress lines go to stderr before Textual owns the terminal). Errors
        are shown once the app is up."""
        if self.pick is not None:  # the session is picked once the app runs
            return
        try:
            self._preopened = self.factory(self.host, self.resume)
        except Exception as exc:
            self.start_error = f"cannot start the agent: {exc}"
            self._pending_notes.append(self.start_error)
            self._preopen_failed = True
            return
        note = load_embedded(self._preopened)  # a crash in its child process: shown, app opens
        if note is not None:
            self._pending_notes.append(note)

    async def open_session(self, resume: str | None) -> None:
        """Build the agent (new session, or `resume`) and show its history (the notes kept
        for the start after it: showing the history clears the transcript)."""
        pending, self._pending_notes = self._pending_notes, []
        if self._preopen_failed:
            self._preopen_failed = False
            self._show(pending)
            return
        try:
            if self._preopened is not None:
                self.opened, self._preopened = self._preopened, None
            else:
                self.opened = self.factory(self.host, resume)
        except (ConfigError, OSError) as exc:
            self.start_error = f"cannot start the agent: {exc}"
            self._show([*pending, *self._early_notes(), self.start_error])
            self.opened = None
            return
        except Exception as exc:  # SessionError and the like: say it, keep the app up
            self.start_error = f"cannot open the session: {exc}"
            self._show([*pending, *self._early_notes(), self.start_error])
            self.opened = None
            return
        self.start_error = None
        pending += self._early_notes()
        agent = self.opened.agent
        apply_saved_theme(self, agent.config.tui.theme, self.note)
        if agent.config.tui.vim and self.prompt_input.vim is None:
            self.prompt_input.set_vim(True)
        subagents = stored_subagents(self.opened.store, agent.session.id)
        loaded = agent.session.loaded
        outputs = stored_host_outputs(loaded.events) if loaded is not None else ()
        await self.transcript.show_history(history_rows(agent.history, subagents, outputs))
        self._show(pending)
        if not agent.history:  # a new session opens on where you are and what was loaded
            self.transcript.add(Welcome(agent))
        self.query_one(TodoPanel).show_items(latest_todo(agent.history))
        try:
            await self.opened.start()
        except Exception as exc:
            self.note(f"warning: MCP servers did not start: {exc}")
        self.update_status()

    def _early_notes(self) -> list[str]:
        """The warnings and errors the agent sent while it was built (`on_agent_event`), as
        the transcript's note lines; its other events then are dropped (no run yet)."""
        events, self._pending_events = self._pending_events, []
        return [f"{e.type}: {e.kind}: {e.message}" for e in events if isinstance(e, Notice)]

    def note(self, text: str) -> None:
        """Show a line from tether in the transcript."""
        try:
            transcript = self.transcript
        except Exception:  # before the screen is composed: shown once it is
            self._pending_notes.append(text)
            return
        transcript.add(NoteRow(text))

    def _show(self, lines: list[str]) -> None:
        for line in lines:
            self.note(line)

    def update_status(self) -> None:
        """Refresh the footer."""
        agent = None if self.opened is None else self.opened.agent
        self.query_one(StatusBar).show(agent, busy=self.busy, queued=len(self.queued))

    # -- events ------------------------------------------------------------------------------

    def _turn_started(self) -> None:
        """A turn boundary: the queued steering rows are sent once the agent took them all."""
        if not self.agent.pending_steering:
            for row in self.queued:
                row.sent()
            self.queued.clear()
        self.update_status()

    def on_agent_event(self, event: AgentEvent) -> None:
        """Called by the agent (same event loop) with each event (`Feed`). A display fault
        is a note, never the agent's problem (the agent would fail the call it came from).
        An event sent while the agent is built (in `preopen`, before the screen exists, or
        in `open_session`, before the history clears the transcript: a trust warning) is
        shown after the history."""
        if self.opened is None:
            self._pending_events.append(event)
            return
        try:
            if isinstance(event, TodoEvent):
                self.query_one(TodoPanel).show_items(event.items)
            elif isinstance(event, PlanEvent):
                self._plan = event.text
            self.feed.on_event(event)
        except Exception as exc:
            self.note(f"display error on a {event.type} event: {type(exc).__name__}: {exc}")

    # -- input -------------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text
        command = parse_command(text)
        if command is not None:
            await self.run_command(command.name, command.arg)
            return
        if text.strip().startswith("//"):
            text = text.strip()[1:]
        if self.opened is None:
            self.note("no agent: fix the problem above and restart")
            return
        try:
            found = resolve_mentions(text, self.agent.root)  # `@path`: files, folders, images
            images = [*self.attached, *found.images]
            refusal = image_refusal(self.agent.provider, len(images))
            if refusal is not None or ((images or found.blocks) and self.busy):
                raise ConfigError(refusal or "@files and images go with a new prompt: wait until it is idle")
            too_large = input_overflow(
                text,
                self.agent.limits.context_window,
                attached=[b.text for b in found.blocks],
                fixed_tokens=fixed_tokens(self.agent),
            )
            if too_large is not None:
                raise ConfigError(too_large)
        except ConfigError as exc:
            self.set_prompt(message.text, keep_typed=True)
            self.note(f"not sent: {exc}")
            return
        for line in found.notes:
            self.note(line)
        await self.transcript.jump_end()
        await self.query(Welcome).remove()  # the first message: the opening panel goes
        if self.busy:
            self.agent.steer(text)
            row = UserRow(text, queued=True)
            self.queued.append(row)
            self.transcript.add(row)
            self.update_status()
            return
        chips = [*(mention_chip(b) or "" for b in found.blocks), *(image_chip(i) for i in images)]
        self.transcript.add(UserRow(text, images=chips))
        self.start_run(mention_content(text, found, self.attached))
        self.attached = []

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
        """Run the agent on `prompt` as a worker (for a `/name` command: with its `model` and
        `allowed-tools` for this run)."""
        self.busy = True
        self.update_status()
        work = self._run(prompt, command)
        self.worker = self.run_worker(work, group="agent", exit_on_error=False)

    async def _run(
        self, prompt: str | list[ContentBlock] | None, command: Command | None = None
    ) -> None:
        self.feed.forget_errors()
        cancelled = False
        try:
            while True:
                try:
                    with CommandRun(self.agent, command):
                        await self.agent.run(prompt)
                except RunError as exc:
                    if not self.feed.error_shown(exc.kind, exc.message):  # its event said it
                        self.note(f"error: {exc}")
                    break
                except (ConfigError, OSError) as exc:  # e.g. a model that cannot take the tools
                    self.note(f"error: {exc}")
                    break
                except asyncio.CancelledError:
                    self.note("cancelled (the partial turn is saved)")
                    cancelled = True
                    raise
                left = self.agent.take_steering()
                if not left:
                    break
                for row in self.queued:
                    row.sent()
                self.queued.clear()
                prompt = "\n\n".join(left)
        finally:
            self.feed.end_blocks()
            self.completer.forget()  # the run may have written files
            self.busy = False
            self.update_status()
            self.alert("the run ended")
            plan, self._plan = self._plan, None
            if plan is not None and self.agent.plan_mode:
                self.push_screen(PlanScreen(plan), callback=lambda mode: plan_done(self, mode))
            run_queued_bangs(self, cancelled=cancelled)  # the `!cmd`s typed meanwhile

    def command_table(self) -> list[tuple[str, str, str]]:
        """Every command: (name, argument hint, description), built-in then the session's."""
        return command_table(COMMANDS, self.opened.commands if self.opened else {})

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """The completion list follows what is typed (a bare `/name`, an `@path`), unless it
        was closed for this very text (an entry taken, Esc)."""
        if isinstance(event.text_area, PromptInput):
            self._follow_prompt(event.text_area.text)

    def _follow_prompt(self, text: str) -> None:
        menu = self.query_one(CompletionList)
        if text == menu.shown_for or text == menu.dismissed:
            return
        menu.dismissed = None
        menu.show(self.completer.entries(text, self.command_table()), text)

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
        """`/copy [N|pick]`: an answer to the clipboard (`tether.tui.clipboard`); `pick`: chosen
        in a picker of them all."""
        history = self.agent.history
        if arg.strip() != "pick":
            copy_command(self, history, os.environ, arg)
            return
        choices = answer_choices(history)
        if not choices:
            copy_command(self, history, os.environ)  # says there is no answer yet
            return

        def picked(key: str | None) -> None:
            if key is not None:
                copy_command(self, self.agent.history, os.environ, key)

        self.push_screen(PickerScreen("copy which answer? (newest first)", choices), callback=picked)

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
        now = self.clock()
        if self._last_esc is not None and now - self._last_esc <= QUIT_WINDOW_S:
            self._last_esc = None
            open_rewind(self)
            return
        self._last_esc = now

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
        for call_id in reversed(list(self.feed.tool_rows)):
            if self.agent.cancel_tool(call_id):
                self.note(f"cancelled tool call {call_id}")
                return
        self.note("no tool call is running")

    def action_settings(self) -> None:
        if self.opened is not None:
            self.push_screen(SettingsScreen(self.agent), callback=self._settings_done)

    def _settings_done(self, note: str | None) -> None:
        if note:
            self.note(note)
        self.update_status()

    def action_toggle_last(self) -> None:
        rows = list(self.transcript.query(Collapsible))
        if rows:
            rows[-1].collapsed = not rows[-1].collapsed

    async def action_transcript_start(self) -> None:
        """Ctrl+Home: the transcript's first turn (mounted on demand)."""
        await self.transcript.jump_start()

    async def action_transcript_end(self) -> None:
        """Ctrl+End: the transcript's end."""
        await self.transcript.jump_end()

    def action_transcript_page(self, pages: int) -> None:
        """PageUp / PageDown in the editor: scroll the transcript."""
        transcript = self.transcript
        if pages < 0:
            transcript.scroll_page_up(animate=False)
        else:
            transcript.scroll_page_down(animate=False)
        transcript.check()

    async def action_ctrl_c(self) -> None:
        now = self.clock()
        if self._last_ctrl_c is not None and now - self._last_ctrl_c <= QUIT_WINDOW_S:
            await self.action_quit()
            return
        self._last_ctrl_c = now
        self.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW_S)

    async def action_quit(self) -> None:
        """Cancel a running request (its partial turn is persisted), close the session, exit:
        0, or 1 when no agent is open because it could not start (`start_error`)."""
        if self.worker is not None and self.busy:
            self.worker.cancel()
            for _ in range(200):
                if not self.busy:
                    break
                await asyncio.sleep(0.01)
        if self.opened is not None:
            await self.opened.aclose()
        self.exit(1 if self.opened is None and self.start_error is not None else 0)

