"""The value types of the session store: header, loaded session, load report, listing row.

Owns: `SessionHeader`, `EventEntry`, `SkippedLine`, `LoadReport`, `LoadedSession`, `SessionInfo`.
Does not own: any I/O (see `tether.session.store`), nor the turn vocabulary (`tether.messages`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # not imported at run time: `tether sessions list` needs no pydantic
    from tether.messages import Turn


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionHeader:
    """The first line of a session file.

    On disk: `{"type":"session","version":1,"id":…,"created_ms":…,"cwd":…}` plus, for a fork,
    `"parent_session":…,"parent_entry":…`, and for a subagent's session (`tether.agent.subagents`)
    `"caller_session":…,"caller_tool_call":…,"agent_path":[…]`.

    Attributes:
        id: the session id (the file name is authoritative if they ever differ).
        version: the format version (1).
        created_ms: creation time, integer Unix milliseconds.
        cwd: the working directory the session was started in.
        parent_session: for a fork, the id of the session it branches from; else None.
        parent_entry: for a fork, the id of the parent's last entry it keeps; else None.
        caller_session: for a subagent's session, the id of the session whose `task` call ran
            it (its history is its own: nothing is inherited); else None.
        caller_tool_call: for a subagent's session, the id of that `task` tool call; else None.
        agent_path: for a subagent's session, the agent path (`["main", "task:<call id>"]`);
            else empty.
    """

    id: str
    version: int = 1
    created_ms: int
    cwd: str
    parent_session: str | None = None
    parent_entry: str | None = None
    caller_session: str | None = None
    caller_tool_call: str | None = None
    agent_path: tuple[str, ...] = ()

    @property
    def parent(self) -> tuple[str, str] | None:
        """`(parent_session, parent_entry)` for a fork, else None."""
        if self.parent_session is None or self.parent_entry is None:
            return None
        return (self.parent_session, self.parent_entry)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventEntry:
    """A well-formed entry that is not a turn: an `event` or an entry type this version ignores.

    On disk an event is `{"type":"event","id":…,"parent_id":…,"ts_ms":…,"kind":…,"data":{…}}`.

    Attributes:
        type: the entry type (`event`, or an unknown type kept verbatim).
        id: the entry id.
        parent_id: the previous entry's id, or None for the first entry.
        ts_ms: when it was written, integer Unix milliseconds.
        kind: for `event` entries, the event kind (e.g. `compaction`, `usage`); else None.
        data: for `event` entries, the `data` object; for unknown types, the whole record.
        after_turns: how many turns of `LoadedSession.turns` precede it (its position).
    """

    type: str
    id: str
    parent_id: str | None
    ts_ms: int
    kind: str | None
    data: Mapping[str, Any]
    after_turns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedLine:
    """One line the loader could not use.

    Attributes:
        path: the file it is in (a fork's report can name its parent's file).
        line: the line number, 1-based (the header is line 1).
        reason: why it was skipped (`invalid JSON: …`, `NUL bytes`, `duplicate entry id …`, …).
        excerpt: its first 80 characters, control characters escaped (`\\x00`).
    """

    path: Path
    line: int
    reason: str
    excerpt: str


def _ranges(lines: list[int]) -> str:
    """`[3, 4, 7]` → `3–4, 7`."""
    parts: list[str] = []
    start = prev = lines[0]
    for n in [*lines[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadReport:
    """What the loader skipped or repaired while reading (it never rewrites a file).

    Attributes:
        path: the session file loaded.
        skipped: lines not used, in reading order (a fork's parent lines come first).
        torn_tail: True when the file's last line had no newline and did not parse (a crash
            mid-append); it is dropped and not listed in `skipped`.
        salvaged: entries recovered from damaged lines (a complete entry after a torn prefix).
        isolated: torn tails an earlier load reported and its resume isolated on their own
            line (a `torn_line` event names each): skipped like `skipped`, but not reported
            again (not in `skipped`, `ok` and `describe` leave them out).
    """

    path: Path
    skipped: tuple[SkippedLine, ...] = ()
    torn_tail: bool = False
    salvaged: int = 0
    isolated: tuple[SkippedLine, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing was skipped, torn or salvaged."""
        return not self.skipped and not self.torn_tail and not self.salvaged

    def describe(self) -> str:
        """Human text, one clause per problem, or `no problems in <path>`.

        Example: `skipped 2 malformed lines (3–4) of /…/s1.jsonl; ignored a torn last line
        (interrupted write)`.
        """
        if self.ok:
            return f"no problems in {self.path}"
        clauses: list[str] = []
        by_path: dict[Path, list[int]] = {}
        for s in self.skipped:
            by_path.setdefault(s.path, []).append(s.line)
        for path, lines in by_path.items():
            noun = "line" if len(lines) == 1 else "lines"
            clauses.append(f"skipped {len(lines)} malformed {noun} ({_ranges(lines)}) of {path}")
        if self.torn_tail:
            clauses.append(f"ignored a torn last line (interrupted write) of {self.path}")
        if self.salvaged:
            noun = "entry" if self.salvaged == 1 else "entries"
            clauses.append(f"salvaged {self.salvaged} {noun} from damaged lines")
        return "; ".join(clauses)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedSession:
    """A session read back from disk; for a fork, the parent's chain up to the fork point first.

    Attributes:
        header: this session's header.
        path: this session's file.
        turns: the turns in order (parent chain, then own entries), duplicates and invalid
            turns removed.
        turn_ts_ms: `ts_ms` of each turn, parallel to `turns` (integer Unix milliseconds).
        events: non-turn entries in order (`after_turns` places each among the turns).
        last_entry_id: the id of the last usable entry (turn or event), the fork point for a
            fork without own entries, or None for an empty session.
        report: what was skipped or repaired.
    """

    header: SessionHeader
    path: Path
    turns: tuple[Turn, ...]
    turn_ts_ms: tuple[int, ...]
    events: tuple[EventEntry, ...]
    last_entry_id: str | None
    report: LoadReport


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """One row of `SessionStore.list()`, computed cheaply (no turn validation).

    Attributes:
        id: the session id (from the file name).
        path: the session file.
        created_ms: from the header; the file's mtime when the header is unreadable.
        modified_ms: the file's mtime, integer Unix milliseconds.
        cwd: from the header ("" when unreadable).
        turn_count: the turns a load holds: this file's turn entries it keeps, and for a fork
            its parent chain's up to the fork point too (skipped, duplicate and torn lines are
            not counted).
        preview: the first user text of the session's history (a fork's: its parent's first
            prompt), whitespace collapsed, at most 80 characters ("" when none).
        parent: `(parent_session, parent_entry)` for a fork, else None.
        error: why the file is not a tether session, or why a fork's history cannot be
            loaded (its parent is missing or lacks the fork point): a load would fail too;
            else None.
        skipped_lines: lines of this file a load skips (damaged header line included).
        caller: for a subagent's session, the id of the session whose `task` call ran it
            (its header's `caller_session`), else None.
        name: the session's name (its last `name` event: `--name`, `/rename`), else None.
    """

    id: str
    path: Path
    created_ms: int
    modified_ms: int
    cwd: str
    turn_count: int
    preview: str
    parent: tuple[str, str] | None = None
    error: str | None = None
    skipped_lines: int = 0
    caller: str | None = None
    name: str | None = None
