"""The TUI's commands that reach past the built-in list: the session's `/name args` commands
(prompt files and skills), `/memory`, `/init`, and the completion list shown while a `/name` is
typed.

Owns: `CompletionList` (a list under the transcript: each matching command with its argument
hint and description, or each matching path; one highlighted), `completion_entries` and
`completion_lines` (pure), `run_user_command` (a command's prompt sent,
with its `model` and `allowed-tools` for that run only), `memory` (the instruction files of the
session, opened in `$VISUAL` / `$EDITOR`), `INIT_PROMPT` (what `/init` asks the agent).
Does not own: the built-in commands (`tether.tui.commands`, `tether.tui.handlers`), loading
the commands (`tether.skills.commands`, `tether.agent.assembly.prompting.session_commands`).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual.app import SuspendNotSupported
from textual.widgets import Static

from tether.prompt.system import skills_listing
from tether.skills.commands import Command, expand, skill_command
from tether.tui.quick_memory import memory_files

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from tether.agent.agent import Agent
    from tether.providers.base import Provider

INIT_PROMPT = """\
Write an AGENTS.md for this project, in its root folder, for coding agents that will work here.
First look at the project: its layout, README, build and package files, test setup, CI
configuration, and any existing agent instruction files (AGENTS.md, CLAUDE.md, .cursorrules,
.github/copilot-instructions.md). Then write a short file (under about 150 lines) with what an
agent cannot guess: how to install, build, lint and run the tests (exact commands), the layout
of the code, conventions the code follows, and what to avoid. Only facts you checked. If an
AGENTS.md exists, improve it instead of replacing what is still true."""
"""The prompt `/init` sends."""

MAX_COMPLETIONS = 8


def completion_entries(
    prefix: str, commands: Sequence[tuple[str, str, str]]
) -> list[tuple[str, str]]:
    """Every command starting with a typed `prefix` (`/re`) as (name, `/name hint  description`);
    none when `prefix` is not a bare `/word`. `commands` are (name with slash, hint,
    description). Pure."""
    if not prefix.startswith("/") or " " in prefix or "\n" in prefix or prefix.startswith("//"):
        return []
    found = [c for c in commands if c[0].startswith(prefix)]
    return [(name, f"{name}{' ' + hint if hint else ''}  {desc}") for name, hint, desc in found]


def completion_lines(prefix: str, commands: Sequence[tuple[str, str, str]]) -> list[str]:
    """The completion list's first lines for a typed `prefix`: `completion_entries`' lines, at
    most `MAX_COMPLETIONS` (then a `… N more` line). Pure."""
    lines = [line for _name, line in completion_entries(prefix, commands)]
    if len(lines) > MAX_COMPLETIONS:
        lines = [*lines[:MAX_COMPLETIONS], f"… {len(lines) - MAX_COMPLETIONS} more"]
    return lines


def command_table(
    builtin: Sequence[tuple[str, str]], session: Mapping[str, Command]
) -> list[tuple[str, str, str]]:
    """Every command as (name with slash, argument hint, description): the built-in ones
    (their help split at the first double space), then the session's."""
    out: list[tuple[str, str, str]] = []
    for name, help_text in builtin:
        hint, sep, desc = help_text.partition("  ")
        out.append((name, hint, desc) if sep else (name, "", help_text))
    names = {n for n, _h, _d in out}
    for name, c in sorted(session.items()):
        if f"/{name}" not in names:
            out.append((f"/{name}", c.argument_hint, f"{c.description} ({c.source})"))
    return out


class CompletionList(Static):
    """The completions of what is typed (hidden when there are none): one entry highlighted,
    `MAX_COMPLETIONS` lines shown around it (`… N more` for the rest). Each entry is (the value
    accepting it puts in the prompt, its line)."""

    DEFAULT_CSS = """
    CompletionList { height: auto; max-height: 10; padding: 0 1; color: $text-muted;
        background: $panel; display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: list[tuple[str, str]] = []
        self.index = 0
        self.dismissed: str | None = None
        """The prompt text the list was closed for (an entry taken, Esc): shut until it changes."""
        self.shown_for: str | None = None
        """The prompt text these entries were computed for."""

    @property
    def is_open(self) -> bool:
        return bool(self.display and self.entries)

    @property
    def current(self) -> str | None:
        """The highlighted entry's value."""
        return self.entries[self.index][0] if self.is_open else None

    def show(self, entries: Sequence[tuple[str, str]], text: str | None = None) -> None:
        """Show these entries (value, line) for the prompt's `text`, the first highlighted;
        hide the list when there are none."""
        self.entries = list(entries)
        self.shown_for = text
        self.index = 0
        self._render_entries()

    def follow(self, text: str, entries: Callable[[str], Sequence[tuple[str, str]]]) -> None:
        """Follow the prompt's `text` (a bare `/name`, an `@path`): show `entries(text)`, unless
        they are shown already or the list was closed for this very text (an entry taken, Esc)."""
        if text == self.shown_for or text == self.dismissed:
            return
        self.dismissed = None
        self.show(entries(text), text)

    def move(self, delta: int) -> None:
        """Highlight the entry `delta` rows down (wrapping round)."""
        if self.entries:
            self.index = (self.index + delta) % len(self.entries)
            self._render_entries()

    def close(self, text: str) -> None:
        """Hide the list until the prompt's text is no longer `text`."""
        self.dismissed = text
        self.shown_for = None
        self.display = False

    def _render_entries(self) -> None:
        n = len(self.entries)
        start = min(max(self.index - MAX_COMPLETIONS // 2, 0), max(n - MAX_COMPLETIONS, 0))
        end = min(start + MAX_COMPLETIONS, n)
        body = Text()
        if start:
            body.append(f"… {start} more\n")
        for i in range(start, end):
            line = self.entries[i][1]
            body.append(line, style="reverse bold" if i == self.index else "")
            if i < end - 1:
                body.append("\n")
        if end < n:
            body.append(f"\n… {n - end} more")
        self.update(body)
        self.display = bool(self.entries)


class UserCommandHost(Protocol):
    """The app as these commands see it."""

    @property
    def agent(self) -> Agent: ...

    busy: bool

    def note(self, text: str) -> None: ...

    def start_run(self, prompt: str | None, *, command: Command | None = None) -> None: ...

    def suspend(self) -> AbstractContextManager[None]: ...


def run_user_command(app: UserCommandHost, command: Command, args: str) -> None:
    """Send `command`'s prompt for `args` (a skill's instructions read now); one note when it
    cannot be sent."""
    if app.busy:
        app.note(f"/{command.name}: wait until the agent is idle (or Esc)")
        return
    got = skill_command(command)
    if isinstance(got, str):
        app.note(f"/{command.name}: {got}")
        return
    app.start_run(expand(got, args), command=got)


class CommandRun:
    """A command's `model` and `allowed-tools`, applied to the agent for one run and undone
    after it (`with CommandRun(agent, command):`)."""

    def __init__(self, agent: Agent, command: Command | None) -> None:
        self.agent = agent
        self.command = command
        self._model: list[Provider] | None = None
        self._added: set[str] = set()

    def __enter__(self) -> CommandRun:
        c = self.command
        if c is None:
            return self
        if c.model:
            self._model = list(self.agent.chain)
            self.agent.switch_model(c.model)  # ConfigError: an unknown model, nothing sent
        allowed = self.agent.approval.allowed_tools
        self._added = set(c.allowed_tools) - allowed
        allowed.update(self._added)
        return self

    def __exit__(self, *exc: object) -> None:
        self.agent.approval.allowed_tools.difference_update(self._added)
        if self._model is not None:
            self.agent.switch_model(self._model)


def context_lines(agent: Agent) -> list[str]:
    """What `/context` says the system prompt is made of: the base, the instruction files
    (with sizes and the cap's note) and the skills listed."""
    context = agent.session.context
    if context is None:
        return ["system prompt: only the one given (no session facts)"]
    base = (
        "tether's default"
        if agent.parts.run.base is None and agent.config.run.system is None
        else "given (--system)"
    )
    env = context.environment
    lines = [f"system prompt: {base} + environment of {env.date} ({env.cwd})"]
    if context.instructions:
        files = ", ".join(f"{f.name} ({f.size_bytes:,} bytes)" for f in context.instructions)
        lines.append(f"instruction files: {files}")
    else:
        lines.append("instruction files: none (/init asks the agent to write an AGENTS.md)")
    if context.instructions_note:
        lines.append(context.instructions_note)
    listed, left = skills_listing(context.skills, context.skills_budget_chars)
    names = ", ".join(s.name for s in listed) or "none"
    lines.append(f"skills: {names}" + (f" (+{left} not listed for space)" if left else ""))
    return lines


FALLBACK_EDITORS = ("nano", "vi")
"""Without `$VISUAL` / `$EDITOR`, the first of these installed (git falls back to vi too)."""


def editor_command() -> list[str] | None:
    """`$VISUAL`, else `$EDITOR`, as an argv; neither set: `FALLBACK_EDITORS`' first one
    installed when stdin is a terminal to hand over; else None."""
    for var in ("VISUAL", "EDITOR"):
        value = os.environ.get(var, "").strip()
        if value:
            return shlex.split(value)
    if sys.stdin is not None and sys.stdin.isatty():
        for name in FALLBACK_EDITORS:
            if (found := shutil.which(name)) is not None:
                return [found]
    return None


def _digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def memory(app: UserCommandHost) -> None:
    """`/memory`: list the session's instruction files (the project's `AGENTS.md` when there
    is none) and open them in the editor; say which changed (a new session reads them: this
    one keeps its system prompt byte for byte)."""
    agent = app.agent
    context = agent.session.context
    instructions = context.instructions if context is not None else ()
    files = [f.path for f in instructions]
    loaded = {os.path.realpath(p) for p in files}
    added = [str(p) for p in memory_files(agent) if os.path.realpath(p) not in loaded]
    lines = ["instruction files of this session:"]
    if files:
        lines += [f"  {f.name}  {f.size_bytes:,} bytes  ({f.path})" for f in instructions]
    elif not added:
        files = [str(agent.root / "AGENTS.md")]
        lines.append(f"  none loaded; /memory opens {files[0]} (/init asks the agent to write it)")
    else:
        lines.append("  none loaded")
    lines += [f"  {p}  (#: read by the next session)" for p in added]
    files += added
    argv = editor_command()
    if argv is None:
        app.note("\n".join([*lines, "set $EDITOR (or $VISUAL) to edit them from here"]))
        return
    app.note("\n".join(lines))
    before = {p: _digest(p) for p in files}
    try:
        try:
            with app.suspend():
                subprocess.run([*argv, *files], check=False)
        except SuspendNotSupported:  # no terminal to hand over (a headless app): run it as is
            subprocess.run([*argv, *files], check=False, stdin=subprocess.DEVNULL)
    except OSError as exc:
        app.note(f"/memory: cannot start the editor: {exc}")
        return
    changed = [p for p in files if _digest(p) != before[p]]
    if changed:
        app.note(
            f"changed: {', '.join(changed)}; this session keeps the version it started with, "
            "/new starts one that reads them"
        )
