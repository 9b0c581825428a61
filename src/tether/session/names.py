"""Session names: `--name`, `/rename`, and `--resume NAME`.

A name is an appended `name` event (`{"name": "..."}`; sessions are append-only, so a rename
is one more event and the last one counts). A new name is refused when another session
carries it (`check_free`: `--name`, `/rename`), so a name finds one session; one given twice
before that check (or by hand) resolves to the newest session carrying it, the folder's first.

Owns: `NAME_EVENT`, `check_name` (one line, at most `MAX_NAME` characters), `name_of` (the
name among a file's entries, for the listing), `session_name` (a loaded session's),
`named` (the session rows a name picks), `check_free` (no other session has it).
Does not own: writing the event (`SessionWriter.append_event`), listing (`SessionStore.list`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from tether.errors import ConfigError
from tether.session.model import LoadedSession, SessionInfo
from tether.session.reader import Entry

NAME_EVENT = "name"
"""The event kind naming a session."""
MAX_NAME = 100
"""The longest name, in characters."""


def check_name(name: str) -> str:
    """`name` stripped, when it is a usable name.

    Raises:
        ConfigError: empty, more than one line, or longer than `MAX_NAME` (one line).
    """
    name = name.strip()
    if not name:
        raise ConfigError("a session name cannot be empty")
    if "\n" in name or "\r" in name:
        raise ConfigError("a session name is one line")
    if len(name) > MAX_NAME:
        raise ConfigError(f"a session name is at most {MAX_NAME} characters ({len(name)} given)")
    return name


def _value(data: object) -> str | None:
    value = cast(Any, data).get("name") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def name_of(entries: Iterable[Entry]) -> str | None:
    """The name the last `name` event among `entries` gives, or None."""
    name: str | None = None
    for item in entries:
        if item.type == "event" and item.record.get("kind") == NAME_EVENT:
            name = _value(item.record.get("data")) or name
    return name


def session_name(loaded: LoadedSession) -> str | None:
    """A loaded session's name (its last `name` event), or None."""
    for event in reversed(loaded.events):
        if event.kind == NAME_EVENT and (value := _value(dict(event.data))):
            return value
    return None


def named(rows: Sequence[SessionInfo], name: str, cwd: Path | None = None) -> list[SessionInfo]:
    """The rows named `name` (`rows` newest first, as `SessionStore.list` gives them), those
    started in `cwd` first."""
    found = [r for r in rows if r.name == name and r.error is None]
    if cwd is None:
        return found
    here = [r for r in found if r.cwd and Path(r.cwd) == cwd]
    return here + [r for r in found if r not in here]


def check_free(rows: Sequence[SessionInfo], name: str, own_id: str | None = None) -> None:
    """Refuse `name` when a session other than `own_id` carries it.

    Raises:
        ConfigError: one line naming the session that has it and how to reach it.
    """
    for row in rows:
        if row.name == name and row.id != own_id and row.error is None:
            where = f", started in {row.cwd}" if row.cwd else ""
            raise ConfigError(
                f"a session is already named {name!r} ({row.id}{where}): "
                f"--resume {name!r} goes on with it; choose another name"
            )
