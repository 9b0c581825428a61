"""The TUI's slash commands and key table (pure: text in, data out).

Owns: parsing a `/command args` line (`parse_command`), the command list for completion and
`/help` (`COMMANDS`), the key table (`KEYS`), and the footer / `/context` text helpers
(`gauge_text`, `context_bar`).
Does not own: running a command (`tether.tui.app`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

COMMANDS: tuple[tuple[str, str], ...] = (
    ("/compact", "[focus]  summarize the session now, keeping the focus"),
    ("/safe", "on|off  safe mode: only read-only tools"),
    ("/approval", "ask|auto-edit|read-only|auto  when to ask before a tool call"),
    ("/plan", "[on|off|goal]  plan mode: read-only tools, the agent ends with a plan to approve"),
    ("/rewind", "files and/or conversation back to before a message (Esc Esc); a picker"),
    ("/model", "[provider/model]  switch the model from the next request on (a picker without one)"),
    ("/effort", "[low|medium|high|max|default]  reasoning effort (Ctrl+T cycles it)"),
    ("/add-dir", "PATH[:ro]  let the tools use this folder too (:ro read-only)"),
    ("/new", "start a new session (/clear does the same)"),
    ("/resume", "[id|name]  resume a session (a picker of this folder's sessions without one)"),
    ("/rename", "NAME  name this session (tether chat --resume NAME opens it)"),
    ("/sessions", "[id]  list the stored sessions, or resume one"),
    ("/fork", "continue in a new session branched from this one (this one is kept)"),
    ("/context", "what fills the context window: a bar, then each turn's tokens"),
    ("/memory", "the instruction files of this session (AGENTS.md...), opened in $EDITOR"),
    ("/init", "ask the agent to write an AGENTS.md for this project"),
    ("/timeline", "tokens per request of this session, compactions and switches marked"),
    ("/settings", "the effective settings; change this session's (F2)"),
    ("/usage", "this session's tokens and cost, and the plan's limits the provider stated"),
    ("/export", "[md|html|jsonl] [FILE]  write this session to a file (default: ID.html)"),
    ("/tasks", "[stop ID]  the background shells: state, age, last output; or stop one"),
    ("/agents", "the named subagents (settings, agent files) and where each comes from"),
    ("/mcp", "the MCP servers: state, tools, why one is down"),
    ("/permissions", "the allow / ask / deny rules in force and their files"),
    ("/hooks", "the configured hooks and hooks.on_failure"),
    ("/tool", "[NAME {json}]  call a tool yourself (secret ones too); without a name: list them"),
    ("/copy", "[N|pick]  copy the last answer (N: the Nth back; pick: choose) to the clipboard"),
    ("/theme", "[name]  the colours: one of Textual's themes (a picker without one), saved"),
    ("/vim", "[on|off]  vim mode in the prompt: Esc normal mode, i / a insert (tui.vim: on at start)"),
    ("/help", "commands and keys"),
    ("/quit", "leave (the session is saved)"),
)
"""(command, help) in the order `/help` shows them."""

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send (while the agent works: queue, sent at the next turn boundary)"),
    ("Shift+Enter / Ctrl+J", "new line"),
    ("Up / Down", "previous / next prompt (on the first / last line); in the completion list: move"),
    ("Tab", "take the completion list's entry (/command, @path); Esc shuts the list"),
    ("Ctrl+G", "edit the prompt in $VISUAL / $EDITOR (taken back when you save and quit)"),
    ("Ctrl+V", "attach the clipboard's image (without one: paste text)"),
    ("!command", "run it in the sandbox (queued while the agent works); it and its output go with your next message"),
    ("#text", "add the line to AGENTS.md (project or user, picked next); read from the next session"),
    ("Esc", "cancel the current request (the partial turn is saved)"),
    ("Esc Esc", "when idle: rewind to before a message (/rewind)"),
    ("Ctrl+K", "cancel the running tool call (it returns `cancelled`; the run goes on)"),
    ("Ctrl+O", "expand / collapse the last tool row, thinking or summary"),
    ("Shift+Tab", "next mode: ask → auto-edit → plan (in the completion list: the entry above)"),
    ("Ctrl+T", "next reasoning effort: default → low → medium → high → max"),
    ("Ctrl+Up", "focus the rows above (Enter expands a row)"),
    ("o", "on a focused tool row: open its saved output file (pages; Esc closes)"),
    ("PageUp / PageDown", "scroll the transcript"),
    ("Ctrl+Home / Ctrl+End", "the transcript's first turn / its end"),
    ("F2", "settings: change model, approval, safe mode, compaction for this session"),
    ("Ctrl+C Ctrl+C", "quit (one Ctrl+C cancels a running request, as Esc)"),
)
"""(key, action) for `/help` and the keys table of docs/tui.md."""


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed slash command: `name` without the slash, `arg` the rest (stripped)."""

    name: str
    arg: str


def parse_command(line: str) -> Command | None:
    """`"/compact keep names"` → `Command("compact", "keep names")`; `"!ls -la"` →
    `Command("!", "ls -la")` (a shell command, `tether.tui.shell_commands`); `"#use uv"` (one
    line) → `Command("#", "use uv")` (quick memory, `tether.tui.quick_memory`); None for a line
    that is not a command (no leading slash or `!`, or `//...` which sends a literal slash)."""
    text = line.strip()
    if text.startswith("!"):
        return Command("!", text[1:].strip())
    if text.startswith("#") and "\n" not in text:  # quick memory (`tether.tui.quick_memory`)
        return Command("#", text[1:].strip())
    if not text.startswith("/") or text.startswith("//") or len(text) == 1:
        return None
    name, _, arg = text[1:].partition(" ")
    return Command(name.lower(), arg.strip())


def gauge_text(ratio: float | None, approximate: bool) -> str:
    """The footer's context gauge: `ctx 42%`, `ctx ~42%` when estimated, `ctx –` unknown."""
    if ratio is None:
        return "ctx –"
    return f"ctx {'~' if approximate else ''}{ratio * 100:.0f}%"


def context_bar(parts: Sequence[tuple[str, int]], window: int, width: int = 50) -> list[str]:
    """Lines drawing what fills the window: one bar of `width` cells split between `parts`
    ((label, tokens), drawn with one letter each), then one line per part with its tokens and
    share of `window` (tokens, >= 1)."""
    window = max(window, 1)
    bar = ""
    for label, tokens in parts:
        cells = round(tokens / window * width)
        bar += (label[:1].upper() or "?") * cells
    bar = bar[:width].ljust(width, "·")
    lines = [f"[{bar}] of {window} tokens"]
    for label, tokens in parts:
        lines.append(f"  {label[:1].upper()} {label:<18} {tokens:>8} tokens {tokens / window:6.1%}")
    return lines


def complete_prompt(text: str, commands: Sequence[str]) -> str | None:
    """Tab on a `/command`: `text` completed (of `commands`) as far as the candidates agree,
    or None when nothing extends it (an `@path` is `tether.tui.completion`'s)."""
    if text.startswith("/") and " " not in text:
        return _common(text, [n for n in commands if n.startswith(text)])
    return None


def _common(prefix: str, found: Sequence[str]) -> str | None:
    """The longest common prefix of `found` when it extends `prefix`, else None."""
    if not found:
        return None
    common = os.path.commonprefix(list(found))  # noqa: RUF071 - text, not paths
    return common if len(common) > len(prefix) or len(found) == 1 else None
