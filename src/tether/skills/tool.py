"""The `skill` tool: the model asks for a skill by name and gets its instructions and the list
of its files (progressive disclosure: the system prompt lists only names and descriptions).

Owns: `skill_tool` (the tool over a catalog's entries), `skill_read_roots` (the skill folders
`read` may open read-only although they are outside the working folder: a narrow, explicit
allowance, `tether.sandbox.policy.PathPolicy.read_roots`) and `skill_text` (what a call
returns).
Does not own: the catalog (`tether.skills.catalog`), path checks (`tether.tools.builtin.files`).

A call with an unknown name is an is_error result listing the names. The skill's `SKILL.md`
is read again at each call (an edit shows at once); a skill that became invalid is an
is_error result with its problems.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import Field

from tether.prompt.facts import SkillEntry
from tether.skills.catalog import SKILL_FILE, read_skill
from tether.tools.base import Tool, tool
from tether.tools.context import ToolOutput

SKILL_TOOL = "skill"
MAX_LISTED_FILES = 100
_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})


def skill_files(folder: Path) -> list[str]:
    """The files of a skill folder (relative, sorted, at most `MAX_LISTED_FILES`; version
    control and cache folders skipped)."""
    out: list[str] = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = Path(here).relative_to(folder)
        for n in sorted(names):
            out.append((rel / n).as_posix() if rel.parts else n)
            if len(out) >= MAX_LISTED_FILES:
                return out
    return out


def skill_text(
    entry: SkillEntry, body: str, files: Sequence[str], *, hidden_from_bash: bool
) -> str:
    """A call's result: a header naming the skill and its folder, the instructions, then the
    files."""
    folder = str(Path(entry.location).parent)
    lines = [f'<skill name="{entry.name}" folder="{folder}">', body.strip(), "</skill>"]
    others = [f for f in files if f != SKILL_FILE]
    if others:
        more = " (first 100)" if len(files) >= MAX_LISTED_FILES else ""
        lines.append(
            f"Files of this skill{more}, relative to {folder}/ (open them with `read` and the "
            "full path):"
        )
        lines += [f"- {f}" for f in others]
    if hidden_from_bash:
        lines.append(
            "This skill's folder is in tether's config folder, which the sandbox hides from "
            "`bash`: read its scripts, or copy what you need into the working folder to run it."
        )
    return "\n".join(lines)


def skill_tool(skills: Sequence[SkillEntry], *, user_dir: Path | None = None) -> Tool:
    """The `skill` tool over the catalog `skills`; `user_dir`, the user config folder (its
    skills' scripts cannot run under the sandbox: the result says so)."""
    by_name = {s.name: s for s in skills}
    config = None if user_dir is None else os.path.realpath(user_dir)

    def skill(name: Annotated[str, Field(min_length=1, max_length=64)]) -> ToolOutput:
        """Load a skill: its instructions and the list of its files. Call it before a task
        that a skill of the system prompt's listing covers.

        Args:
            name: the skill's name, as listed.
        """
        entry = by_name.get(name)
        if entry is None:
            known = ", ".join(sorted(by_name)) or "none"
            return ToolOutput(f"no skill named {name!r}; the skills are: {known}", is_error=True)
        folder = Path(entry.location).parent
        got = read_skill(folder)
        if isinstance(got, list):
            return ToolOutput(f"skill {name!r} is no longer valid: {'; '.join(got)}", is_error=True)
        real = os.path.realpath(folder)
        hidden = config is not None and (real == config or real.startswith(config + os.sep))
        return ToolOutput(skill_text(entry, got.body, skill_files(folder), hidden_from_bash=hidden))

    return tool(skill, name=SKILL_TOOL, safe=True)


def skill_read_roots(skills: Sequence[SkillEntry], refused: Sequence[Path]) -> tuple[str, ...]:
    """The real paths of the skill folders `read` may open (read-only), leaving out any that
    is, or holds, one of `refused` (the home folder, tether's config and data folders: a
    skill folder that is a link to `~` must not open the whole home)."""
    bad = [os.path.realpath(p) for p in refused]
    out: list[str] = []
    for s in skills:
        real = os.path.realpath(Path(s.location).parent)
        if real == os.sep or any(
            b == real or b.startswith(real.rstrip(os.sep) + os.sep) for b in bad
        ):
            continue
        out.append(real)
    return tuple(dict.fromkeys(out))
