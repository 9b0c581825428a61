"""The skill catalog: finding `SKILL.md` folders on disk and merging them with the skills an
extension adds, under the `skills` settings.

Owns: `skill_folders` (where skills are looked for, in precedence order), `discover` (the
skills found there: one warning line per invalid skill, never an exception), `merge` (the
catalog: `skills.enabled`, `skills.allow` / `skills.deny`; an extension's skill is kept even
under an allowlist), `BUILTIN_SKILLS_DIR` (the skills tether itself adds: how to write a
skill) and `load_catalog`, which does all of it for a session.
Does not own: the spec's rules (`tether.skills.spec`), the `skill` tool
(`tether.skills.tool`), the listing in the system prompt (`tether.prompt.system`).

Where skills are found, first found wins for a name: the project's `.agents/skills/` and
`.tether/skills/` (in the working folder, then each folder above it up to the project root),
the user's `<config>/skills/`, then `~/.claude/skills/`. Project skills load without
`tether trust`: they are text, and their scripts run only through the sandboxed tools.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.prompt.facts import SkillEntry, SkillSource
from tether.skills.spec import Skill, parse_skill

SKILL_FILE = "SKILL.md"
PROJECT_SKILL_DIRS = (".agents/skills", ".tether/skills")
MAX_SKILL_FILE_BYTES = 256 * 1024
BUILTIN_SKILLS_DIR = Path(__file__).resolve().parent / "builtin"
"""The skills tether adds to every catalog as an extension (kept under an allowlist)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """A skill found on disk, with where it came from."""

    skill: Skill
    source: SkillSource


def skill_folders(
    cwd: Path, root: Path, user_dir: Path, home: Path
) -> list[tuple[Path, SkillSource]]:
    """The folders holding skill folders, in precedence order (module docstring)."""
    chain = [cwd]
    if cwd != root and cwd.is_relative_to(root):
        here = cwd
        while here != root:
            here = here.parent
            chain.append(here)
    out: list[tuple[Path, SkillSource]] = [
        (folder / d, "project") for folder in chain for d in PROJECT_SKILL_DIRS
    ]
    out.append((user_dir / "skills", "user"))
    out.append((home / ".claude" / "skills", "claude"))
    return out


def read_skill(folder: Path) -> Skill | list[str]:
    """The skill in `folder` (its `SKILL.md`), or the problems that make it invalid."""
    path = folder / SKILL_FILE
    try:
        if path.stat().st_size > MAX_SKILL_FILE_BYTES:
            return [f"{SKILL_FILE} is larger than {MAX_SKILL_FILE_BYTES // 1024} KiB"]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [f"cannot read {SKILL_FILE}: {exc.strerror or exc}"]
    return parse_skill(text, folder_name=folder.name, location=str(path.resolve()))


def discover(
    folders: Sequence[tuple[Path, SkillSource]], warn: Callable[[str], None]
) -> list[Found]:
    """The valid skills in `folders` (each a folder of skill folders), first found wins for
    a name; `warn` gets one line per invalid skill."""
    found: dict[str, Found] = {}
    for base, source in folders:
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir() or not (Path(entry.path) / SKILL_FILE).is_file():
                continue
            got = read_skill(Path(entry.path))
            if isinstance(got, list):
                warn(f"warning: skill {Path(entry.path)} skipped: {'; '.join(got)}")
                continue
            found.setdefault(got.name, Found(skill=got, source=source))
    return list(found.values())


def merge(
    found: Sequence[Found],
    extensions: Sequence[Skill],
    *,
    enabled: bool,
    allow: Sequence[str] | None,
    deny: Sequence[str],
) -> list[Found]:
    """The catalog: the skills found, kept when `enabled`, `allow` (None: every name) names
    them and `deny` does not, then the extensions' skills not already found (tether's own
    authoring skill: kept under an allowlist and with skills disabled, so a user can still ask
    for a skill to be written; `deny` still removes them), in that order."""
    denied = set(deny)
    if not enabled:
        return [Found(skill=s, source="extension") for s in extensions if s.name not in denied]
    allowed = None if allow is None else set(allow)
    out = {
        f.skill.name: f
        for f in found
        if f.skill.name not in denied and (allowed is None or f.skill.name in allowed)
    }
    for skill in extensions:
        if skill.name not in denied and skill.name not in out:
            out[skill.name] = Found(skill=skill, source="extension")
    return list(out.values())


def builtin_skills(warn: Callable[[str], None]) -> list[Skill]:
    """The skills tether adds as an extension (`BUILTIN_SKILLS_DIR`)."""
    return [f.skill for f in discover([(BUILTIN_SKILLS_DIR, "extension")], warn)]


def load_catalog(
    cwd: Path,
    root: Path,
    *,
    user_dir: Path,
    home: Path,
    enabled: bool,
    allow: Sequence[str] | None,
    deny: Sequence[str],
    extensions: Sequence[Skill] = (),
    builtin: bool = True,
    warn: Callable[[str], None] = lambda _line: None,
) -> list[Found]:
    """The catalog of a session in `cwd` (project `root`): discovery, tether's own skills
    (unless not `builtin`) and `extensions`, merged under the settings (see `merge`)."""
    if not enabled:
        return []
    found = discover(skill_folders(cwd, root, user_dir, home), warn)
    return merge(
        found,
        [*(builtin_skills(warn) if builtin else ()), *extensions],
        enabled=enabled,
        allow=allow,
        deny=deny,
    )


def entries(catalog: Sequence[Found]) -> tuple[SkillEntry, ...]:
    """The catalog as the system prompt lists it."""
    return tuple(
        SkillEntry(
            name=f.skill.name,
            description=f.skill.description,
            location=f.skill.location,
            source=f.source,
            argument_hint=f.skill.argument_hint,
        )
        for f in catalog
    )
