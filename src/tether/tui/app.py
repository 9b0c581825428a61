"""The interactive session: `tether` / `tether chat` (a Textual app).

Owns: the screen (transcript, prompt editor, footer), turning agent events into transcript rows,
running the agent as a worker (Esc cancels it: the loop persists the partial turn), steering
(a prompt sent while the agent works is queued with `Agent.steer` and shown as queued until
the next turn boundary takes it), the slash commands (`tether.tui.commands`), the approval
prompt (an `Approver`) and the question overlay (a `QuestionBridge`), Ctrl+K (cancel the
running tool call), Ctrl+C twice (quit).
Does not own: building the agent (`tether.tui.opening`), the widgets (`tether.tui.widgets`),
the overlays (`tether.tui.screens`).

A resumed session shows its last `max_rows` turns (default 60); earlier ones are summed up
in one line (they stay in the session and in the model's context).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible
from textual.worker import Worker

from tether.agent.approval import APPROVAL_MODES, ApprovalDecision, ApprovalRequest
from tether.agent.events import (
    AgentEvent,
    CompactionEndEvent,
    DiscardEvent,
    DoneEvent,
    ErrorEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
)
from tether.agent.loop import Agent
from tether.compaction.pressure import effective_window, estimate_tokens, text_tokens
from tether.errors import ConfigError, RunError
from tether.messages import TextBlock, ThinkingBlock, ToolCallBlock, Turn
from tether.providers.pricing import turns_cost_usd, turns_usage, usage_line
from tether.tools.question import Answer, QuestionSpec
from tether.tui.commands import (
    COMMANDS,
    KEYS,
    complete_command,
    complete_path,
    context_bar,
    gauge_text,
    parse_command,
)
from tether.tui.opening import Factory, Hooks, Opened
from tether.tui.panels import ContextScreen, TimelineScreen, context_rows_of
from tether.tui.screens import ApprovalScreen, QuestionScreen
from tether.tui.settings_screen import SettingsScreen
from tether.tui.widgets import (
    PERSISTED_RE,
    AssistantRow,
    MarkerRow,
    NoteRow,
    PromptInput,
    StatusBar,
    ThinkingRow,
    ToolRow,
    UserRow,
)
from tether.wire.markers import is_marker

QUIT_WINDOW_S = 2.0
"""Two Ctrl+C presses within this many seconds quit."""


class _Bridge:
    """The `QuestionBridge` of the app: the question overlay."""

    def __init__(self, app: TetherApp) -> None:
        self.app = app

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        return await self.app.ask_questions(tuple(questions))


class TetherApp(App[int]):
    """The interactive session over the agent `factory` builds.

    Args:
        factory: builds the agent for the app's hooks (`tether.tui.opening.open_agent` bound
            to the CLI's options; tests pass one over a `ScriptedProvider`).
        resume: a session id to resume at start, or None for a new session.
        max_rows: turns of a resumed session shown at start (the rest are summed up).
        clock: seconds, for the Ctrl+C window.
    """

    TITLE = "tether"
    CSS = """
    #transcript { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("escape", "cancel_request", "cancel", show=False),
        Binding("ctrl+c", "ctrl_c", "quit", priority=True, show=False),
        Binding("ctrl+k", "cancel_tool", "cancel tool", priority=True, show=False),
        Binding("ctrl+o", "toggle_last", "expand", priority=True, show=False),
        Binding("f2", "settings", "settings", show=False),
    ]

    def __init__(
        self,
        factory: Factory,
        *,
        resume: str | None = None,
        max_rows: int = 60,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.factory = factory
        self.resume = resume
        self.max_rows = max_rows
        self.clock = clock
        self.opened: Opened | None = None
        self.worker: Worker[None] | None = None
        self.busy = False
        self.queued: list[UserRow] = []
        self.tool_rows: dict[str, ToolRow] = {}
        self._text: AssistantRow | None = None
        self._thinking: ThinkingRow | None = None
        self._last_ctrl_c: float | None = None
        self._paths: list[str] | None = None
        self._preopened: Opened | None = None
        self._preopen_failed = False
        self._pending_notes: list[str] = []
        self._flushing = False
        self._next_flush = 0.0
        self.hooks = Hooks(
            on_event=self.on_agent_event,
            questions=_Bridge(self),
            approver=self.approve,
            note=self.note,
        )

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="transcript")
        yield PromptInput(complete=self.complete)
        yield StatusBar(id="status")

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#transcript", VerticalScroll)

    @property
    def agent(self) -> Agent:
        assert self.opened is not None
        return self.opened.agent

    async def on_mount(self) -> None:
        self.set_interval(0.05, self._flush_text)
        await self._open(self.resume)
        self.query_one(PromptInput).focus()

    def preopen(self) -> None:
        """Build the agent now, before the app runs, and load an embedded model (llama.cpp
        points the process's stderr, Textual's output, at /dev/null while it loads). Errors
        are shown once the app is up."""
        try:
            self._preopened = self.factory(self.hooks, self.resume)
        except Exception as exc:
            self._pending_notes.append(f"cannot start the agent: {exc}")
            self._preopen_failed = True
            return
        provider = self._preopened.agent.provider
        if provider.name == "local":
            from tether.providers.local import load_model

            path = getattr(provider, "model_path", None)
            n_ctx = getattr(provider, "n_ctx", None)
            if isinstance(path, Path) and isinstance(n_ctx, int):
                load_model(path, n_ctx)

    async def _open(self, resume: str | None) -> None:
        for line in self._pending_notes:
            self.note(line)
        self._pending_notes.clear()
        if self._preopen_failed:
            self._preopen_failed = False
            return
        try:
            if self._preopened is not None:
                self.opened, self._preopened = self._preopened, None
            else:
                self.opened = self.factory(self.hooks, resume)
        except (ConfigError, OSError) as exc:
            self.note(f"cannot start the agent: {exc}")
            self.opened = None
            return
        except Exception as exc:  # SessionError and the like: say it, keep the app up
            self.note(f"cannot open the session: {exc}")
            self.opened = None
            return
        await self._render_history(self.opened.agent.history)
        try:
            await self.opened.start()
        except Exception as exc:
            self.note(f"warning: MCP servers did not start: {exc}")
        self.update_status()

    async def _render_history(self, history: Sequence[Turn]) -> None:
        rows: list[Widget] = []
        hidden = max(0, len(history) - self.max_rows)
        if hidden:
            rows.append(NoteRow(f"… {hidden} earlier turns (in the session, not shown)"))
        calls: dict[str, ToolRow] = {}
        for turn in history[hidden:]:
            if is_marker(turn):
                rows.append(MarkerRow(0, 0, turn.text) if turn.text else MarkerRow(0, 0))
                continue
            for block in turn.content:
                if isinstance(block, TextBlock) and block.text.strip():
                    rows.append(
                        UserRow(block.text) if turn.role == "user" else AssistantRow(block.text)
                    )
                elif isinstance(block, ThinkingBlock) and block.text:
                    rows.append(ThinkingRow(block.text))
                elif isinstance(block, ToolCallBlock):
                    row = ToolRow(block.id, block.name, block.arguments)
                    calls[block.id] = row
                    rows.append(row)
            for result in turn.tool_results:
                if (row := calls.get(result.tool_call_id)) is not None:
                    row.finish(result.text, is_error=result.is_error, duration_ms=None)
        if rows:
            await self.transcript.mount_all(rows)
            self.transcript.scroll_end(animate=False)

    async def _mount(self, row: Widget) -> None:
        await self.transcript.mount(row)
        self.transcript.scroll_end(animate=False)

    def note(self, text: str) -> None:
        """Show a line from tether in the transcript."""
        try:
            transcript = self.transcript
        except Exception:  # before the screen is composed: shown once it is
            self._pending_notes.append(text)
            return
        transcript.mount(NoteRow(text))
        transcript.scroll_end(animate=False)

    def update_status(self) -> None:
        """Refresh the footer."""
        bar = self.query_one(StatusBar)
        if self.opened is None:
            bar.update("no agent")
            return
        agent = self.opened.agent
        ratio, approx = self._pressure()
        history = agent.history
        usage = usage_line(turns_usage(history), turns_cost_usd(history))
        mode = "SAFE" if agent.safe_mode else f"approval: {agent.approval_mode}"
        busy = " · working" if self.busy else ""
        queued = f" · {len(self.queued)} queued" if self.queued else ""
        model = f"{agent.provider.name}/{agent.provider.model}"
        bar.update(f"{model} · {gauge_text(ratio, approx)} · {usage} · {mode}{busy}{queued}")

    def _pressure(self) -> tuple[float | None, bool]:
        agent = self.agent
        compaction = agent.compaction
        if compaction is None:
            return None, True
        monitor = compaction.monitor
        if monitor.pressure is not None:
            return monitor.pressure.ratio, monitor.pressure.is_approximate
        window = effective_window(monitor.limits, monitor.policy)
        return estimate_tokens(agent.current_view()) / max(window, 1), True

    # -- events ------------------------------------------------------------------------------

    def on_agent_event(self, event: AgentEvent) -> None:
        """Called by the agent (same event loop) with each event."""
        if isinstance(event, TextDeltaEvent):
            if self._text is None:
                self._text = AssistantRow()
                self.transcript.mount(self._text)
            self._text.add(event.text)
            return  # rendered and scrolled by `_flush_text`
        if isinstance(event, ThinkingDeltaEvent):
            if self._thinking is None:
                self._thinking = ThinkingRow()
                self.transcript.mount(self._thinking)
            self._thinking.add(event.text)
            return
        if isinstance(event, TurnStartEvent):
            self._end_blocks()
            if not self.agent.pending_steering:
                for row in self.queued:
                    row.sent()
                self.queued.clear()
            self.update_status()
        elif isinstance(event, ToolCallEvent):
            self._end_blocks()
            row = ToolRow(event.id, event.name, event.arguments)
            self.tool_rows[event.id] = row
            self.transcript.mount(row)
        elif isinstance(event, ToolResultEvent):
            if (row := self.tool_rows.pop(event.tool_call_id, None)) is not None:
                row.finish(event.content, is_error=event.is_error, duration_ms=event.duration_ms)
        elif isinstance(event, CompactionEndEvent):
            if event.marker_id is not None:
                summary = next(
                    (t.text for t in reversed(self.agent.history) if t.id == event.marker_id), ""
                )
                self.transcript.mount(MarkerRow(event.tokens_before, event.tokens_after, summary))
            elif event.error:
                self.transcript.mount(NoteRow(f"compaction: {event.error}"))
        elif isinstance(event, DiscardEvent):
            if self._text is not None:
                self._text.remove()
            self._text = None
        elif isinstance(event, ErrorEvent | WarningEvent):
            self.transcript.mount(NoteRow(f"{event.type}: {event.kind}: {event.message}"))
        elif isinstance(event, TurnEndEvent | DoneEvent):
            self._end_blocks()
            self.update_status()
        self.transcript.scroll_end(animate=False)

    def _end_blocks(self) -> None:
        if self._text is not None:
            self._text.flush()
        self._text = None
        self._thinking = None

    async def _flush_text(self) -> None:
        """Render streamed text: at most every 50 ms, and never more than a quarter of the
        time (the wait after a render is three times what it cost), so keys stay responsive
        while a long paragraph streams."""
        row = self._text
        now = time.perf_counter()
        if row is None or self._flushing or now < self._next_flush:
            return
        self._flushing = True
        try:
            if await row.flush_async():
                self.transcript.scroll_end(animate=False)
        finally:
            self._flushing = False
            self._next_flush = time.perf_counter() + 3 * (time.perf_counter() - now)

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
        if self.busy:
            self.agent.steer(text)
            row = UserRow(text, queued=True)
            self.queued.append(row)
            await self._mount(row)
            self.update_status()
            return
        await self._mount(UserRow(text))
        self.start_run(text)

    def start_run(self, prompt: str | None) -> None:
        """Run the agent on `prompt` as a worker."""
        self.busy = True
        self.update_status()
        self.worker = self.run_worker(self._run(prompt), group="agent", exit_on_error=False)

    async def _run(self, prompt: str | None) -> None:
        try:
            while True:
                try:
                    await self.agent.run(prompt)
                except RunError as exc:
                    self.note(f"error: {exc}")
                    break
                except (ConfigError, OSError) as exc:  # e.g. a model that cannot take the tools
                    self.note(f"error: {exc}")
                    break
                except asyncio.CancelledError:
                    self.note("cancelled (the partial turn is saved)")
                    raise
                left = self.agent.take_steering()
                if not left:
                    break
                for row in self.queued:
                    row.sent()
                self.queued.clear()
                prompt = "\n\n".join(left)
        finally:
            self._end_blocks()
            self.busy = False
            self.update_status()

    def complete(self, text: str) -> str | None:
        """Tab: complete a `/command` or the last `@path` word (inside the working folder)."""
        if text.startswith("/") and " " not in text:
            found = complete_command(text)
            return _common(text, found)
        head, _, word = text.rpartition(" ")
        if not word.startswith("@") or self.opened is None:
            return None
        found = complete_path(word[1:], self._files())
        done = _common(word[1:], found)
        if done is None:
            return None
        return f"{head} @{done}" if head else f"@{done}"

    def _files(self) -> list[str]:
        if self._paths is None:
            root = self.agent.root
            paths: list[str] = []
            for folder, dirs, names in os.walk(root):
                dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
                rel = Path(folder).relative_to(root)
                paths += [str(rel / n) if str(rel) != "." else n for n in names]
                if len(paths) > 5000:
                    break
            self._paths = paths
        return self._paths

    # -- commands ----------------------------------------------------------------------------

    async def run_command(self, name: str, arg: str) -> None:
        """Run `/name arg`."""
        if name in ("quit", "exit", "q"):
            await self.action_quit()
            return
        if name == "help":
            lines = [f"{c:<10} {h}" for c, h in COMMANDS] + [""] + [f"{k:<22} {a}" for k, a in KEYS]
            self.note("\n".join(lines))
            return
        if self.opened is None:
            self.note("no agent")
            return
        agent = self.agent
        try:
            if name == "compact":
                if self.busy:
                    self.note("/compact: wait until the agent is idle (or Esc)")
                    return
                self.busy = True
                self.update_status()
                self.worker = self.run_worker(self._compact(arg or None), group="agent")
            elif name == "safe":
                if arg not in ("on", "off"):
                    self.note("usage: /safe on|off")
                    return
                agent.set_safe_mode(arg == "on")
                self.note(f"safe mode {arg}")
            elif name == "approval":
                if arg not in APPROVAL_MODES:
                    self.note(f"usage: /approval {'|'.join(APPROVAL_MODES)}")
                    return
                agent.set_approval_mode(arg)  # pyright: ignore[reportArgumentType]
                self.note(f"approval mode: {arg}")
            elif name == "model":
                if not arg:
                    self.note(f"model: {agent.provider.name}/{agent.provider.model}")
                    return
                agent.switch_model(arg)
                self.note(f"model: {agent.provider.name}/{agent.provider.model}")
            elif name == "new":
                if self.busy:
                    self.note("/new: wait until the agent is idle (or Esc)")
                    return
                await self._switch(None)
                self.note("new session")
            elif name in ("sessions", "fork"):
                await self._session_command(name, arg)
            elif name == "usage":
                history = agent.history
                self.note(f"usage: {usage_line(turns_usage(history), turns_cost_usd(history))}")
            elif name == "context":
                self.push_screen(ContextScreen(context_rows_of(agent), agent.limits.context_window))
            elif name == "timeline":
                w, h = self.size
                self.push_screen(TimelineScreen(agent.history, width=w - 8, height=h - 14))
            elif name == "settings":
                self.action_settings()
            else:
                self.note(f"unknown command /{name}: /help lists them")
        except ConfigError as exc:
            self.note(f"/{name}: {exc}")
        self.update_status()

    async def _switch(self, resume: str | None) -> None:
        """Close the current session and open `resume` (None: a new one)."""
        assert self.opened is not None
        await self.opened.aclose()
        await self.transcript.remove_children()
        self.tool_rows.clear()
        await self._open(resume)

    async def _session_command(self, name: str, arg: str) -> None:
        """`/sessions [id]` and `/fork`."""
        assert self.opened is not None
        store = self.opened.store
        if store is None:
            self.note(f"/{name}: this session is not stored")
            return
        if self.busy:
            self.note(f"/{name}: wait until the agent is idle (or Esc)")
            return
        if name == "sessions" and not arg:
            lines = [
                f"{i.id}  {i.turn_count:>5} turns  {(i.preview or '')[:60]}" for i in store.list()
            ]
            self.note("\n".join(["sessions (newest first; /sessions ID resumes):", *lines[:30]]))
            return
        if name == "sessions":
            if not store.exists(arg):
                self.note(f"/sessions: no session {arg!r}")
                return
            await self._switch(arg)
            self.note(f"resumed {arg}")
            return
        writer, history = self.opened.writer, self.agent.history
        if writer is None or not history:
            self.note("/fork: nothing to fork yet")
            return
        fork = store.create(None, cwd=str(self.agent.root), parent=(writer.id, history[-1].id))
        fork.close()
        parent = writer.id
        await self._switch(fork.id)
        self.note(f"forked {parent} → {fork.id}")

    async def _compact(self, focus: str | None) -> None:
        try:
            if not await self.agent.compact_now(focus):
                self.note("nothing to compact")
        except RunError as exc:
            self.note(f"compaction failed: {exc}")
        finally:
            self.busy = False
            self.update_status()

    def context_text(self) -> str:
        """What fills the window: system, tools, user and assistant turns, tool results,
        persisted-output stubs, summaries (tokens, estimated), as a bar."""
        agent = self.agent
        view = agent.current_view()
        parts: dict[str, int] = {"system": text_tokens(agent.system or "")}
        tools = [str(t.spec()) for t in agent.registry]
        parts["tools"] = sum(text_tokens(t) for t in tools)
        for key in ("user", "assistant", "results", "persisted", "summaries"):
            parts[key] = 0
        for turn in view:
            tokens = estimate_tokens((turn,))
            if is_marker(turn):
                parts["summaries"] += tokens
            elif turn.tool_results:
                key = "persisted" if PERSISTED_RE.search(turn.text or "") else "results"
                parts[key] += tokens
            else:
                parts[turn.role if turn.role in ("user", "assistant") else "user"] += tokens
        window = agent.limits.context_window
        lines = context_bar(list(parts.items()), window)
        return "\n".join([f"context of {len(view)} turns:", *lines])

    # -- overlays ----------------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The `Approver`: the approval prompt."""
        done: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()

        def finish(decision: ApprovalDecision | None) -> None:
            if not done.done():
                done.set_result(decision or ApprovalDecision.deny())

        self.push_screen(ApprovalScreen(request), callback=finish)
        return await done

    async def ask_questions(self, questions: tuple[QuestionSpec, ...]) -> list[Answer]:
        """The question overlay."""
        done: asyncio.Future[list[Answer]] = asyncio.get_running_loop().create_future()

        def finish(answers: list[Answer] | None) -> None:
            if not done.done():
                done.set_result(answers or [])

        self.push_screen(QuestionScreen(questions), callback=finish)
        return await done

    # -- keys --------------------------------------------------------------------------------

    def action_cancel_request(self) -> None:
        if self.busy and self.worker is not None:
            self.worker.cancel()

    def action_cancel_tool(self) -> None:
        for call_id in reversed(list(self.tool_rows)):
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

    async def action_ctrl_c(self) -> None:
        now = self.clock()
        if self._last_ctrl_c is not None and now - self._last_ctrl_c <= QUIT_WINDOW_S:
            await self.action_quit()
            return
        self._last_ctrl_c = now
        self.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW_S)

    async def action_quit(self) -> None:
        """Cancel a running request (its partial turn is persisted), close the session, exit."""
        if self.worker is not None and self.busy:
            self.worker.cancel()
            for _ in range(200):
                if not self.busy:
                    break
                await asyncio.sleep(0.01)
        if self.opened is not None:
            await self.opened.aclose()
        self.exit(0)


def _common(prefix: str, found: Sequence[str]) -> str | None:
    """The longest common prefix of `found` when it extends `prefix`, else None."""
    if not found:
        return None
    common = os.path.commonprefix(list(found))  # noqa: RUF071 - text, not paths
    return common if len(common) > len(prefix) or len(found) == 1 else None
