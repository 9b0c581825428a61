"""User commands: `/name args` typed in the TUI or given to `tether run`, from prompt files and
skills.

Owns: `Command` (a prompt template with its frontmatter: `description`, `argument-hint`,
`model`, `allowed-tools`), `parse_invocation` (`/name args` → name and arguments; `//x` is
literal text), `split_args` and `substitute` (`$ARGUMENTS` and `$1`…`$9`; pure), `expand`
(the prompt a command sends), `parse_command_file` and `load_commands` (the prompt files of
`.tether/commands/*.md` in a trusted project and `<config>/commands/*.md`, then every skill).
Does not own: the built-in TUI commands (`tether.tui.commands`), the skills
(`tether.skills.catalog`).

Names: a prompt file's stem (`review.md` is `/review`); a project's file wins over the user's
of the same name, and both over a skill's. A template without any `$` placeholder gets the
arguments appended on a line `ARGUMENTS: …` (so none are lost).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.prompt.facts import SkillEntry
from tether.skills.catalog import read_skill
from tether.skills.spec import split_frontmatter, tool_names

CommandSource = Literal["project", "user", "skill"]
COMMAND_NAME_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
PROJECT_COMMANDS = Path(".tether") / "commands"
MAX_COMMAND_BYTES = 256 * 1024
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """A `/name` command.

    Attributes:
        name: what follows the slash.
        description: one line for completion lists and `/help`.
        argument_hint: the arguments it takes, e.g. `[file] [focus]`.
        model: the model its prompt runs on (`provider/model`), or None for the session's.
        allowed_tools: tools its run may call without asking (the TUI's approval).
        body: the prompt template (for a skill, its instructions).
        source: `project`, `user` or `skill`.
        location: the file it came from.
        grants: its `allowed-tools` may apply: False for a skill of a project not approved
            (`tether trust`): skills load unapproved, as text, and text must not grant tools.
    """

    name: str
    description: str
    argument_hint: str
    model: str | None
    allowed_tools: tuple[str, ...]
    body: str
    source: CommandSource
    location: str
    grants: bool = True


def parse_invocation(line: str) -> tuple[str, str] | None:
    """`"/review src/app.py"` → `("review", "src/app.py")`; None when `line` is not a
    command (no leading slash, only a slash, or `//…`, which sends a literal slash)."""
    text = line.strip()
    if not text.startswith("/") or text.startswith("//") or len(text) == 1:
        return None
    name, _, args = text[1:].partition(" ")
    if not name or "/" in name:  # `/usr/bin/x` is a path, not a command
        return None
    return name, args.strip()


def split_args(args: str) -> list[str]:
    """The arguments as words, shell-quoted words kept whole (`a "b c"` → `["a", "b c"]`);
    unbalanced quotes fall back to splitting on white space."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def substitute(template: str, args: str) -> str:
    """`template` with `$ARGUMENTS` replaced by `args` and `$1`…`$9` by its words (missing
    words are empty); a template without placeholders gets `ARGUMENTS: args` appended when
    `args` is not blank. Replacement text is never substituted again."""
    words = split_args(args)
    if not _PLACEHOLDER.search(template):
        return f"{template.rstrip()}\n\nARGUMENTS: {args}" if args.strip() else template

    def one(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "ARGUMENTS":
            return args
        i = int(key) - 1
        return words[i] if i < len(words) else ""

    return _PLACEHOLDER.sub(one, template)


def expand(command: Command, args: str) -> str:
    """The prompt `/name args` sends: a prompt file's template, substituted; for a skill, its
    instructions (substituted) inside a `<skill>` block naming its folder."""
    text = substitute(command.body, args)
    if command.source != "skill":
        return text
    folder = str(Path(command.location).parent)
    return f'<skill name="{command.name}" folder="{folder}">\n{text.strip()}\n</skill>'


def parse_command_file(
    text: str, *, name: str, location: str, source: CommandSource
) -> Command | str:
    """A command from a prompt file's `text`, or the one-line reason it is invalid."""
    split = split_frontmatter(text)
    if isinstance(split, str):
        return split
    meta, body = split
    if not body.strip():
        return "the prompt (the body) is empty"
    tools = tool_names(meta.get("allowed-tools", ""))
    model = meta.get("model")
    if tools is None:
        return "`allowed-tools` must be tool names"
    if model is not None and not isinstance(model, str):
        return "`model` must be text (provider/model)"
    return Command(
        name=name,
        description=" ".join(str(meta.get("description") or "").split()) or _first_line(body),
        argument_hint=str(meta.get("argument-hint") or ""),
        model=model or None,
        allowed_tools=tools,
        body=body.strip(),
        source=source,
        location=location,
    )


def _first_line(body: str) -> str:
    line = next((x.strip() for x in body.splitlines() if x.strip()), "")
    return line if len(line) <= 80 else line[:79] + "…"


def _files(folder: Path) -> Iterable[Path]:
    try:
        return sorted(p for p in folder.glob("*.md") if p.is_file())
    except OSError:
        return ()


def load_commands(
    cwd: Path,
    *,
    user_dir: Path,
    project_trusted: bool,
    skills: Iterable[SkillEntry] = (),
    warn: Callable[[str], None] = lambda _line: None,
) -> dict[str, Command]:
    """The commands of a session in `cwd` by name: `.tether/commands/*.md` (only when
    `project_trusted`), `<user_dir>/commands/*.md`, then the `skills` (a project skill's
    `allowed-tools` only when `project_trusted`: `Command.grants`). One warning line per
    invalid file; never raises."""
    out: dict[str, Command] = {}
    folders: list[tuple[Path, CommandSource]] = []
    if project_trusted:
        folders.append((cwd / PROJECT_COMMANDS, "project"))
    folders.append((user_dir / "commands", "user"))
    for folder, source in folders:
        for path in _files(folder):
            name = path.stem
            if not COMMAND_NAME_RX.match(name):
                warn(f"warning: command file {path} skipped: {name!r} is not a command name")
                continue
            try:
                if path.stat().st_size > MAX_COMMAND_BYTES:
                    warn(f"warning: command file {path} skipped: larger than 256 KiB")
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                warn(f"warning: command file {path} skipped: {exc.strerror or exc}")
                continue
            got = parse_command_file(text, name=name, location=str(path), source=source)
            if isinstance(got, str):
                warn(f"warning: command file {path} skipped: {got}")
                continue
            out.setdefault(name, got)
    for s in skills:
        if s.name in out:
            continue
        out[s.name] = Command(
            name=s.name,
            description=s.description,
            argument_hint=s.argument_hint,
            model=None,
            allowed_tools=(),
            body="",  # read at use: `skill_command`
            source="skill",
            location=s.location,
            grants=project_trusted or s.source != "project",
        )
    return out


def skill_command(command: Command) -> Command | str:
    """A skill's command with its body read now (the `SKILL.md` instructions), or why it
    cannot be (the skill became invalid)."""
    if command.source != "skill" or command.body:
        return command
    got = read_skill(Path(command.location).parent)
    if isinstance(got, list):
        return f"skill {command.name!r} is not valid: {'; '.join(got)}"
    return Command(
        name=command.name,
        description=command.description,
        argument_hint=command.argument_hint,
        model=None,
        allowed_tools=got.allowed_tools if command.grants else (),
        body=got.body,
        source="skill",
        location=command.location,
        grants=command.grants,
    )


def resolve(line: str, commands: Mapping[str, Command]) -> tuple[Command, str] | str | None:
    """`line` as a command: (the command with its body, the arguments); a one-line error for
    an unknown or broken command; None when `line` is not a `/name` command at all."""
    parsed = parse_invocation(line)
    if parsed is None:
        return None
    name, args = parsed
    command = commands.get(name)
    if command is None:
        known = ", ".join(f"/{n}" for n in sorted(commands)) or "none"
        return f"unknown command /{name} (commands: {known})"
    got = skill_command(command)
    if isinstance(got, str):
        return got
    return got, args
