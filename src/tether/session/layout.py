"""Where sessions live on disk, how their ids look, and the default clock and id factory.

Owns: the sessions root (`default_root`), session-id validation (`validate_session_id`), the
default wall clock (`wall_clock_ms`) and id factory (`new_id`), and the artifact sub-folder names.
Does not own: reading or writing session files (`tether.session.reader`, `.writer`, `.store`).

Layout under the root::

    <root>/<session_id>.jsonl              one header line, then one entry per line
    <root>/<session_id>/tool-results/      persisted tool outputs (created lazily)
    <root>/<session_id>/tasks/             background task logs (created lazily)
    <root>/<session_id>/mcp-warnings/      MCP diagnostics (created lazily)
    <root>/<session_id>/images/            image bytes the session's turns refer to (lazily)
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal

import platformdirs

from tether.errors import SessionError

SESSION_SUFFIX = ".jsonl"
"""The session file's suffix: `<root>/<session_id>.jsonl`."""

ArtifactKind = Literal["tool-results", "tasks", "mcp-warnings", "images"]
"""The artifact sub-folders of `<root>/<session_id>/`."""

ARTIFACT_KINDS: tuple[ArtifactKind, ...] = ("tool-results", "tasks", "mcp-warnings", "images")

TETHER_HOME_ENV = "TETHER_HOME"
"""Environment variable overriding the data dir: sessions go to `$TETHER_HOME/sessions`."""

_ID_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def default_root() -> Path:
    """The default sessions root, resolved now (not cached).

    Returns:
        `$TETHER_HOME/sessions` when `TETHER_HOME` is set and non-empty (`~` expanded), else
        `platformdirs.user_data_path("tether") / "sessions"` (e.g.
        `~/.local/share/tether/sessions` on Linux). The folder is not created here.
    """
    home = os.environ.get(TETHER_HOME_ENV, "")
    if home:
        return Path(home).expanduser() / "sessions"
    return platformdirs.user_data_path("tether") / "sessions"


def validate_session_id(session_id: str) -> str:
    """Check that a session id is safe to use as a file name under the root.

    Rules: 1 to 128 characters from `[A-Za-z0-9._-]`, no leading dot (so no `.`, `..` or hidden
    files), hence no path separator, and not ending in `.jsonl` (its artifact folder would then
    collide with another session's file).

    Args:
        session_id: the id given by a user (`--session`), a header, or an id factory.

    Returns:
        The id, unchanged.

    Raises:
        SessionError: the id breaks a rule; the message quotes it (repr, so control characters
            show).
    """
    if not isinstance(session_id, str) or not _ID_RE.fullmatch(session_id):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise SessionError(
            f"invalid session id {session_id!r}: use 1-128 characters from [A-Za-z0-9._-], "
            "not starting with a dot"
        )
    if session_id.endswith(SESSION_SUFFIX):
        raise SessionError(f"invalid session id {session_id!r}: must not end with {SESSION_SUFFIX}")
    return session_id


def wall_clock_ms() -> int:
    """The wall clock as integer Unix milliseconds."""
    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A fresh, time-sortable id: `YYYYMMDD-HHMMSS-<8 hex>` (UTC, 32 random bits).

    Lexicographic order follows creation time at one-second resolution; the random suffix keeps
    ids created within the same second distinct. Always passes `validate_session_id`.
    """
    global _stamp
    now = int(time.time())
    if now != _stamp[0]:  # the stamp is formatted once a second, not once an id
        _stamp = (now, time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)))
    try:
        suffix = _suffixes.pop()
    except IndexError:
        raw = os.urandom(4 * SUFFIXES_PER_DRAW).hex()
        _suffixes.extend(raw[i : i + 8] for i in range(8, len(raw), 8))
        suffix = raw[:8]
    return f"{_stamp[1]}-{suffix}"


_stamp: tuple[int, str] = (-1, "")
"""The second `new_id` last formatted, and its stamp."""

SUFFIXES_PER_DRAW = 256
"""`new_id`'s random suffixes come from one `os.urandom` call per this many ids (an event id
per tool call: a `getrandom` syscall each was ~1 µs of a turn)."""

_suffixes: list[str] = []
"""Random suffixes drawn and not used yet (8 hex each); emptied in a forked child, which must
not repeat its parent's."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_suffixes.clear)
