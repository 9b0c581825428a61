"""Named subagents defined in Markdown files, read into the same `SubagentSettings` the
settings' `agents.<name>` entries are.

Owns: where agent files are found (`agent_folders`), reading one (`parse_agent_file`: YAML
frontmatter and a body, never raising), Claude Code's names (its tool names through
`CLAUDE_CODE_TOOLS`, its model aliases), and merging the files with the settings' own named
agents (`merge_agents`: which definition of a name wins, and where each came from).
Does not own: trust (`tether.settings.trust` decides whether a project's files are read at
all), running a subagent (`tether.agent.subagents`).

A file (`reviewer.md`):

    ---
    name: reviewer            # optional in tether's folders: the file's stem
    description: Reviews a diff for bugs
    tools: Read, Grep, Glob   # a comma (or space) list, or a YAML list; omitted: all tools
    disallowedTools: Bash     # left out of what it is offered
    model: sonnet             # provider/model, or Claude Code's sonnet / opus / haiku / inherit
    isolation: worktree       # optional, as `agents.<name>.isolation`
    ---
    You review diffs. ...     # the body: its system prompt

Where they are, and which definition of a name wins (first first):

    1. the project's settings.json, `agents.<name>`       (a trusted project only)
    2. <project>/.tether/agents/*.md                      (a trusted project only)
    3. <project>/.claude/agents/*.md                      (a trusted project only)
    4. the user's settings.json, `agents.<name>`
    5. <user config dir>/agents/*.md
    6. ~/.claude/agents/*.md

The project beats the user, as in the settings; in one scope the settings file beats a file,
and tether's folder beats Claude Code's. The winner is taken whole (no field of a lower
definition is merged in). Other frontmatter keys (Claude Code's `color`, `permissionMode`,
`hooks`, ...) are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import frontmatter
import yaml
from pydantic import ValidationError

from tether.settings.model import AGENT_NAME_PATTERN, AgentsSettings, SubagentSettings
from tether.settings.rules import CLAUDE_CODE_TOOLS

AgentScope = Literal["project", "user"]
AgentKind = Literal["settings", "tether", "claude"]
"""Where a definition is written: a settings file, tether's agent folder, Claude Code's."""

PROJECT_AGENT_DIRS: tuple[tuple[str, AgentKind], ...] = (
    (".tether/agents", "tether"),
    (".claude/agents", "claude"),
)
MAX_AGENT_FILE_BYTES = 256 * 1024
CLAUDE_MODEL_ALIASES: Mapping[str, str | None] = {
    "inherit": None,
    "sonnet": "anthropic/claude-sonnet-4-5",
    "opus": "anthropic/claude-opus-4-5",
    "haiku": "anthropic/claude-haiku-4-5",
}
"""Claude Code's `model` aliases: `inherit` is the caller's own model (None); a family is
its newest model on the `anthropic` provider."""
_NAME_RX = re.compile(AGENT_NAME_PATTERN)
_CALL_FORM = re.compile(r"^([A-Za-z0-9_.\-]+)\(.*\)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefinition:
    """One named subagent and where it came from.

    Attributes:
        name: its name (`task`'s `agent`).
        settings: the definition.
        scope: `project` or `user`.
        kind: `settings` (a settings file's `agents.<name>`), `tether` (`.tether/agents/`,
            `<config>/agents/`) or `claude` (`.claude/agents/`, `~/.claude/agents/`).
        location: the file it was read from.
        shadows: the other definitions of the name it wins over (their files).
    """

    name: str
    settings: SubagentSettings
    scope: AgentScope
    kind: AgentKind
    location: Path
    shadows: tuple[Path, ...] = ()


def agent_folders(
    root: Path | None, *, user_dir: Path, home: Path
) -> list[tuple[Path, AgentScope, AgentKind]]:
    """The folders agent files are read from, first first (module docstring); `root` None:
    no project's (an untrusted project's files are not read)."""
    out: list[tuple[Path, AgentScope, AgentKind]] = []
    if root is not None:
        out.extend((root / d, "project", kind) for d, kind in PROJECT_AGENT_DIRS)
    out.append((user_dir / "agents", "user", "tether"))
    out.append((home / ".claude" / "agents", "user", "claude"))
    return out


def _split(text: str) -> tuple[dict[str, Any], str] | str:
    handler = frontmatter.detect_format(text, frontmatter.handlers)
    if handler is None:
        return {}, text
    try:
        head, body = handler.split(text)
        raw: Any = handler.load(head)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        lines = str(exc).strip().splitlines()
        return f"the frontmatter does not parse: {lines[0] if lines else type(exc).__name__}"
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return f"the frontmatter is a {type(raw).__name__}, not a mapping"
    return cast(dict[str, Any], raw), body


def tool_name(written: str) -> str:
    """A tool name as an agent file writes it, as tether's: Claude Code's names mapped
    (`Read` → `read`, `WebFetch` → `web_fetch`, `Task(x)` / `Agent` → `task`); MCP tools
    (`mcp__server__tool`) as written."""
    name = written.strip()
    m = _CALL_FORM.match(name)
    if m is not None:
        name = m.group(1)
    if name.startswith("mcp__"):
        return name
    low = name.lower()
    if low == "agent":
        return "task"
    return CLAUDE_CODE_TOOLS.get(low, low)


def _tools(value: Any, key: str) -> list[str] | str:
    if isinstance(value, str):
        words = [w for w in re.split(r"[,\s]+", value) if w]
    elif isinstance(value, list) and all(isinstance(v, str) for v in cast(list[Any], value)):
        words = cast(list[str], value)
    else:
        return f"`{key}` must be tool names (a comma list or a YAML list)"
    return list(dict.fromkeys(tool_name(w) for w in words))


def model_name(written: str) -> str | None:
    """A `model` as an agent file writes it: `provider/model` as is, Claude Code's aliases
    (`CLAUDE_MODEL_ALIASES`; `inherit`: None), a bare `claude-…` id on `anthropic`."""
    text = written.strip()
    if text.lower() in CLAUDE_MODEL_ALIASES:
        return CLAUDE_MODEL_ALIASES[text.lower()]
    if "/" not in text and text.lower().startswith("claude-"):
        return f"anthropic/{text}"
    return text


def parse_agent_file(text: str, *, stem: str) -> tuple[str, SubagentSettings] | str:
    """The agent a file's `text` defines (its name: the frontmatter's `name`, else `stem`),
    or the one-line reason it is not valid. Pure; never raises."""
    split = _split(text)
    if isinstance(split, str):
        return split
    meta, body = split
    name = meta.get("name", stem)
    if not isinstance(name, str) or not _NAME_RX.match(name):
        return f"`name` {name!r} is not a subagent name (letters, digits, `_`, `-`, `.`)"
    data: dict[str, Any] = {}
    description = meta.get("description")
    if description is not None:
        if not isinstance(description, str):
            return "`description` must be text"
        data["description"] = " ".join(description.split())
    for key in ("tools", "disallowedTools", "disallowed_tools"):
        if meta.get(key) is not None:
            got = _tools(meta[key], key)
            if isinstance(got, str):
                return got
            data["tools" if key == "tools" else "disallowed_tools"] = got
    model = meta.get("model")
    if model is not None:
        if not isinstance(model, str) or not model.strip():
            return "`model` must be text (provider/model, or sonnet, opus, haiku, inherit)"
        data["model"] = model_name(model)
    if meta.get("isolation") is not None:
        data["isolation"] = meta["isolation"]
    data["system"] = body.strip() or None
    try:
        return name, SubagentSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else str(first["msg"])


def read_folder(
    folder: Path, warn: Callable[[str], None]
) -> list[tuple[str, SubagentSettings, Path]]:
    """The agents of the `*.md` files in `folder` (by file name; a name two files give: the
    first, with a warning); one warning line per file that is not valid."""
    try:
        files = sorted(p for p in folder.glob("*.md") if p.is_file())
    except OSError:
        return []
    out: dict[str, tuple[str, SubagentSettings, Path]] = {}
    for path in files:
        try:
            if path.stat().st_size > MAX_AGENT_FILE_BYTES:
                warn(f"warning: agent file {path} skipped: larger than 256 KiB")
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            warn(f"warning: agent file {path} skipped: {exc.strerror or exc}")
            continue
        got = parse_agent_file(text, stem=path.stem)
        if isinstance(got, str):
            warn(f"warning: agent file {path} skipped: {got}")
            continue
        name, settings = got
        if name in out:
            warn(f"warning: agent file {path} skipped: {out[name][2].name} names {name!r} too")
            continue
        out[name] = (name, settings, path)
    return list(out.values())


def merge_agents(
    json_agents: AgentsSettings,
    json_origin: Mapping[str, tuple[AgentScope, Path]],
    folders: Iterable[tuple[Path, AgentScope, AgentKind]],
    warn: Callable[[str], None],
) -> list[AgentDefinition]:
    """Every named subagent: the settings' own (`json_agents.named`, each with the scope and
    file that defined it, `json_origin`) and the files of `folders`, one definition per name
    by the order in the module docstring (the winner lists the files it shadows)."""
    candidates: list[tuple[int, AgentDefinition]] = []
    for name, entry in json_agents.named.items():
        scope, path = json_origin.get(name, ("user", Path("settings.json")))
        rank = 0 if scope == "project" else 3
        candidates.append(
            (rank, AgentDefinition(name=name, settings=entry, scope=scope, kind="settings",
                                   location=path))
        )
    for folder, scope, kind in folders:
        rank = (1 if kind == "tether" else 2) + (0 if scope == "project" else 3)
        for name, settings, path in read_folder(folder, warn):
            candidates.append(
                (rank, AgentDefinition(name=name, settings=settings, scope=scope, kind=kind,
                                       location=path))
            )
    by_name: dict[str, list[AgentDefinition]] = {}
    for _, d in sorted(candidates, key=lambda c: c[0]):  # stable: settings order kept
        by_name.setdefault(d.name, []).append(d)
    out: list[AgentDefinition] = []
    for d in candidates:  # the settings' order, then the files'
        defs = by_name.get(d[1].name)
        if defs is None:
            continue
        winner, *rest = defs
        out.append(
            AgentDefinition(name=winner.name, settings=winner.settings, scope=winner.scope,
                            kind=winner.kind, location=winner.location,
                            shadows=tuple(r.location for r in rest))
        )
        del by_name[d[1].name]
    return out

