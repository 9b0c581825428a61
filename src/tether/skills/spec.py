"""Agent Skills by the open spec (agentskills.io), and prompt files: parsing and validation.
Pure: text in, data or problems out.

Owns: `split_frontmatter` (YAML frontmatter and body, never raising), `parse_skill` (a
`SKILL.md`: its frontmatter checked against the spec), `check_skill_meta` (the rules), and
`Skill` (a valid skill).
Does not own: finding skills on disk (`tether.skills.catalog`), the `skill` tool
(`tether.skills.tool`), commands (`tether.skills.commands`).

The spec's frontmatter (agentskills.io/specification): `name` (required; at most 64
characters of lowercase letters, digits and hyphens, no hyphen first, last or doubled; equal
to the skill folder's name), `description` (required, non-empty, at most 1,024 characters),
`license`, `compatibility` (at most 500 characters), `metadata` (a map of strings),
`allowed-tools` (space-separated tool names; experimental). tether also reads
`argument-hint` (shown beside the command in completion lists). Other keys are ignored
(other agents add their own). The reference library (`skills-ref`) says it is for
demonstration only, not production, so the rules are implemented here over
python-frontmatter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import frontmatter
import yaml

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
NAME_RX = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
"""A skill name: lowercase letters and digits in groups joined by single hyphens."""


def split_frontmatter(text: str) -> tuple[dict[str, Any], str] | str:
    """`(frontmatter mapping, body)` of a Markdown file (an empty mapping when it has none),
    or the one-line reason the frontmatter cannot be read. Never raises."""
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


def tool_names(value: Any) -> tuple[str, ...] | None:
    """`allowed-tools` as names: a space- or comma-separated string or a list of strings;
    None when it is neither."""
    if isinstance(value, str):
        return tuple(n for n in re.split(r"[\s,]+", value) if n)
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[Any], value)):
        return tuple(cast(list[str], value))
    return None


def check_skill_meta(meta: Mapping[str, Any], folder_name: str) -> list[str]:
    """The spec's rules broken by a skill's frontmatter `meta` (empty when valid), one
    sentence each."""
    problems: list[str] = []
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        problems.append("`name` is missing")
    else:
        if len(name) > MAX_NAME_CHARS:
            problems.append(f"`name` is longer than {MAX_NAME_CHARS} characters")
        if not NAME_RX.match(name):
            problems.append(
                f"`name` {name!r} must be lowercase letters, digits and single hyphens "
                "(not first or last)"
            )
        if name != folder_name:
            problems.append(f"`name` {name!r} differs from its folder's name {folder_name!r}")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        problems.append("`description` is missing or empty")
    elif len(description) > MAX_DESCRIPTION_CHARS:
        problems.append(f"`description` is longer than {MAX_DESCRIPTION_CHARS} characters")
    if "license" in meta and not isinstance(meta["license"], str):
        problems.append("`license` must be text")
    compatibility = meta.get("compatibility")
    if compatibility is not None and (
        not isinstance(compatibility, str) or len(compatibility) > MAX_COMPATIBILITY_CHARS
    ):
        problems.append(
            f"`compatibility` must be text of at most {MAX_COMPATIBILITY_CHARS} characters"
        )
    metadata = meta.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(
            isinstance(k, str) and isinstance(v, str)
            for k, v in cast(dict[Any, Any], metadata).items()
        )
    ):
        problems.append("`metadata` must map text keys to text values")
    if "allowed-tools" in meta and tool_names(meta["allowed-tools"]) is None:
        problems.append("`allowed-tools` must be space-separated tool names")
    hint = meta.get("argument-hint")
    if hint is not None and not isinstance(hint, str):
        problems.append("`argument-hint` must be text")
    return problems


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """A valid skill.

    Attributes:
        name: its name (= its folder's name).
        description: what it does and when to use it.
        body: the instructions (`SKILL.md` after the frontmatter).
        location: the `SKILL.md` path (absolute).
        license / compatibility: as written, or None.
        allowed_tools: the tools it names (experimental in the spec; informational here).
        metadata: its string map.
        argument_hint: shown beside its command (`/name`) in completion lists.
    """

    name: str
    description: str
    body: str
    location: str
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=lambda: {})
    argument_hint: str = ""


def parse_skill(text: str, *, folder_name: str, location: str) -> Skill | list[str]:
    """A skill from its `SKILL.md` `text`, or the problems that make it invalid (never
    raises).

    Args:
        text: the file's content.
        folder_name: the name of the folder holding it (the skill's name must equal it).
        location: the file's absolute path.
    """
    split = split_frontmatter(text)
    if isinstance(split, str):
        return [split]
    meta, body = split
    if not meta:
        return ["no YAML frontmatter (`---` lines with `name` and `description`)"]
    problems = check_skill_meta(meta, folder_name)
    if problems:
        return problems
    return Skill(
        name=str(meta["name"]),
        description=" ".join(str(meta["description"]).split()),
        body=body.strip(),
        location=location,
        license=cast(str | None, meta.get("license")),
        compatibility=cast(str | None, meta.get("compatibility")),
        allowed_tools=tool_names(meta.get("allowed-tools", "")) or (),
        metadata=dict(cast(dict[str, str], meta.get("metadata") or {})),
        argument_hint=str(meta.get("argument-hint") or ""),
    )
