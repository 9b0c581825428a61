"""The TUI's read-only lists: `/agents` (the named subagents and where each comes from), `/mcp`
(the MCP servers: state, tools, why one is down), `/permissions` (the allow / ask / deny rules
in force and their files), `/hooks` (the shell hooks and `hooks.on_failure`), and the lines of
`/tasks` (the background shells: state, age, the last lines of output, how to stop one).

Owns: `ListScreen` (a panel of text lines; Esc or q closes it), the line builders
(`agents_lines`, `mcp_lines`, `permissions_lines`, `hooks_lines`, `shell_lines`) and
`open_view` (what `tether.tui.handlers` calls for the four commands).
Does not own: loading the settings and agent files (`tether.settings.trust.trusted_settings`),
the servers (`tether.agent.assembly.servers`), the rules (`tether.permissions`), the shells
(`tether.tools.exec.background`; stopping one is `tether.tui.shell_commands.tasks`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from tether.agent.events import EnvEvent
from tether.agent.subagents import TASK_TOOL
from tether.settings.files import LoadedSettings, settings_path
from tether.settings.trust import trusted_settings
from tether.tui.panels import PanelScreen

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.tools.exec.background import Shell
    from tether.tui.host import AppHost

VIEWS = ("agents", "mcp", "permissions", "hooks")
HOOK_POINTS = ("before_tool", "after_tool", "user_prompt", "before_compaction", "stop")
TAIL_LINES = 3
"""The last lines of a background shell's output `/tasks` shows."""
_TAIL_BYTES = 8192


class ListScreen(PanelScreen):
    """A titled panel of text lines (scrolls; Esc or q closes it)."""

    def __init__(self, title: str, lines: Sequence[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = tuple(lines)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text), classes="title")
            with VerticalScroll():
                yield Static(Text("\n".join(self.lines)), id="lines")
            yield Static(Text("↑↓ PgUp PgDn scroll · Esc close"), classes="keys")


def _shown(path: Path, root: Path) -> str:
    """`path` relative to `root` when inside it, `~/…` inside the home, else absolute."""
    if path.is_relative_to(root):
        return str(path.relative_to(root))
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def agents_lines(agent: Agent, loaded: LoadedSettings, refused: str | None) -> list[str]:
    """`/agents`: each named subagent, where it comes from and what it overrides, its
    description, tools and model; the agent files skipped; which ones this session lacks."""
    root = agent.root
    session = agent.config.agents.named
    lines: list[str] = []
    if not agent.config.agents.task_tool or agent.registry.get(TASK_TOOL) is None:
        lines.append("the `task` tool is not offered in this session (agents.task_tool)")
    if not loaded.agents and not session:
        lines.append(
            "no named subagents: add agents.<name> to a settings file, or a Markdown file to "
            ".tether/agents/, .claude/agents/, <config>/agents/ or ~/.claude/agents/"
        )
    for d in loaded.agents:
        a = d.settings
        what = {"settings": "settings", "tether": "file", "claude": "Claude Code file"}[d.kind]
        lines.append(f"{d.name}" + (f" — {a.description}" if a.description else ""))
        lines.append(f"    from: {d.scope} {what} {_shown(d.location, root)}")
        tools = "all of yours" if a.tools is None else ", ".join(a.tools) or "none"
        if a.disallowed_tools:
            tools += f" (never: {', '.join(a.disallowed_tools)})"
        lines.append(f"    tools: {tools} · model: {a.model or 'yours'}"
                     + (" · isolation: worktree" if a.isolation == "worktree" else ""))
        if d.shadows:
            lines.append(f"    overrides: {', '.join(_shown(p, root) for p in d.shadows)}")
        if d.name not in session:
            lines.append("    (not in this session: a new session (/new) reads it)")
    for name in session:
        if not any(d.name == name for d in loaded.agents):
            lines.append(f"{name}  (this session only: its file is gone or changed)")
    lines += loaded.warnings
    if refused is not None:
        lines.append(f"note: {refused}")
    return lines


def mcp_lines(agent: Agent, states: Mapping[str, EnvEvent]) -> list[str]:
    """`/mcp`: each configured server: its state (up with its tool count, down with why,
    disabled, not started), how it is reached."""
    servers = agent.config.mcp.servers
    if not servers:
        return ["no MCP servers (mcp.servers in a settings file; `tether mcp add NAME -- CMD`)"]
    lines: list[str] = []
    for name, spec in servers.items():
        data = spec.model_dump(exclude_none=True)
        how = " ".join([str(data.get("command", "")), *map(str, data.get("args", []))]).strip()
        how = how or str(data.get("url", ""))
        if not spec.enabled:
            state = "disabled"
        elif (event := states.get(name)) is None:
            state = "not started"
        elif event.state == "up":
            state = f"up · {event.detail}"
        else:
            state = "down"
        lines.append(f"{name}  {state}  {how}")
        event = states.get(name)
        if spec.enabled and event is not None and event.state != "up" and event.detail:
            lines.append(f"    error: {event.detail}")
    return lines


def _files(loaded: LoadedSettings, root: Path) -> list[str]:
    """`user settings: PATH` and `project settings: PATH` for the files read."""
    return [f"{_scope(path, root)}: {path}" for path in loaded.sources]


def _scope(path: Path, root: Path) -> str:
    return "project settings" if path == settings_path("project", root) else "user settings"


def _sources(
    loaded: LoadedSettings, root: Path, section: str, keys: Sequence[str]
) -> dict[str, str]:
    """`"key:item"` → which settings file lists `item` under `section.key` (the first):
    `user settings` or `project settings`."""
    out: dict[str, str] = {}
    for path, layer in zip(loaded.sources, loaded.layers, strict=True):
        part = layer.get(section)
        if not isinstance(part, dict):
            continue
        for key in keys:
            items = cast(dict[str, Any], part).get(key)
            for item in cast(list[Any], items) if isinstance(items, list) else []:
                text: Any = cast(dict[str, Any], item).get("command") if isinstance(item, dict) else item
                out.setdefault(f"{key}:{str(text).strip()}", _scope(path, root))
    return out


def permissions_lines(agent: Agent, loaded: LoadedSettings, refused: str | None) -> list[str]:
    """`/permissions`: the rules in force, deny first, each with the file it came from (an
    `allow` added in this session: `this session`), then what decides a call no rule names."""
    rules = agent.parts.tool_calls.approval.rules
    sources = _sources(loaded, agent.root, "permissions", ("allow", "ask", "deny"))
    lines: list[str] = []
    for action in ("deny", "ask", "allow"):
        for rule in rules.listed(action):
            added = action == "allow" and rule not in rules.allow  # "always allow", here
            where = sources.get(f"{action}:{rule.text}") or (
                "this session (always allowed)" if added else "the session's config"
            )
            lines.append(f"{action:<6} {rule.text:<40} {where}")
    if not lines:
        lines.append("no permission rules (permissions.allow / ask / deny in a settings file)")
    mode = "safe mode" if agent.safe_mode else f"approval mode {agent.approval_mode}"
    lines += ["", f"a call no rule decides: the {mode} decides (Shift+Tab, /approval)"]
    lines += _files(loaded, agent.root)
    if refused is not None:
        lines.append(f"note: {refused}")
    return lines


def hooks_lines(agent: Agent, loaded: LoadedSettings, refused: str | None) -> list[str]:
    """`/hooks`: `on_failure` and the default time limit, then each point's shell hooks
    (command, the tools it checks, its time limit, its file) and library hooks."""
    hooks = agent.config.hooks
    sources = _sources(loaded, agent.root, "hooks", HOOK_POINTS)
    lines = [
        f"on_failure: {hooks.on_failure} (a before_tool hook that fails "
        f"{'refuses the call' if hooks.on_failure == 'deny' else 'lets the call run'}) · "
        f"timeout: {hooks.timeout_s:g} s"
    ]
    library = agent.parts.library_hooks
    count = 0
    for point in HOOK_POINTS:
        for h in cast(list[Any], getattr(hooks, point)):
            count += 1
            tools = "every tool" if h.tools is None else ", ".join(h.tools)
            limit = f"{h.timeout_s:g} s" if h.timeout_s is not None else "default"
            where = sources.get(f"{point}:{h.command.strip()}", "-")
            scope = f" · {tools}" if point in ("before_tool", "after_tool") else ""
            lines.append(f"{point:<17} {h.command}")
            lines.append(f"{'':<17} timeout {limit}{scope} · {where}")
        fns = len(getattr(library, point)) if library is not None else 0
        if fns:
            count += fns
            lines.append(f"{point:<17} {fns} library hook{'s' if fns != 1 else ''}")
    if not count:
        lines.append("no hooks (hooks.before_tool, after_tool, ... in a settings file)")
    lines += ["", *_files(loaded, agent.root)]
    if refused is not None:
        lines.append(f"note: {refused} (its hooks too)")
    return lines


def age(seconds: float) -> str:
    """`12 s`, `4 min`, `2 h 05 min`."""
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def tail(shell: Shell, redact: Callable[[str], str], count: int = TAIL_LINES) -> list[str]:
    """The last `count` lines of a shell's output, from its log file (the model's unread
    output is left as it is)."""
    if shell.log is None:
        return ["(its output goes to the agent only: this session keeps no files)"]
    try:
        with shell.log.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(size - _TAIL_BYTES, 0))
            data = f.read()
    except OSError:
        return ["(no output yet)"]
    text = redact(data.decode("utf-8", errors="replace"))
    lines = [line.rstrip() for line in text.splitlines() if line.strip()][-count:]
    return lines or ["(no output yet)"]


def shell_lines(
    shells: Sequence[Shell], redact: Callable[[str], str], now: float | None = None
) -> list[str]:
    """`/tasks`: each shell's id, state, age and command, its last lines of output, its log
    file, and how to stop it."""
    clock = time.monotonic() if now is None else now
    lines = ["background shells:"]
    for s in shells:
        since = age(clock - s.started)
        state = f"running for {since}" if s.running else f"{s.state()} · started {since} ago"
        lines.append(f"  {s.id}  {state}")
        lines.append(f"    $ {s.command}")
        lines += [f"    │ {line[:200]}" for line in tail(s, redact)]
        if s.log is not None:
            lines.append(f"    output file: {s.log}")
        if s.running:
            lines.append(f"    stop it: /tasks stop {s.id}")
    return lines


def open_view(app: AppHost, name: str) -> None:
    """Show `/agents`, `/mcp`, `/permissions` or `/hooks` for the app's agent.

    Raises:
        ConfigError: a settings file that does not load now.
    """
    agent = app.agent
    if name == "mcp":
        app.push_screen(ListScreen("MCP servers (mcp.servers)", mcp_lines(agent, app.feed.mcp)))
        return
    loaded, refused = trusted_settings(agent.root)
    if name == "agents":
        title = "subagents (the task tool's `agent`; files are read when a session starts)"
        app.push_screen(ListScreen(title, agents_lines(agent, loaded, refused)))
    elif name == "permissions":
        title = "permission rules in force (deny, then ask, then allow)"
        app.push_screen(ListScreen(title, permissions_lines(agent, loaded, refused)))
    else:
        title = "hooks (shell commands at points of the loop)"
        app.push_screen(ListScreen(title, hooks_lines(agent, loaded, refused)))
