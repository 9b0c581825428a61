"""Pure assembly of scanned session lines into a `LoadedSession` or a `SessionInfo` row.

Owns: turn validation, duplicate-id removal, event extraction (`assemble`), and the cheap
listing summary of one file (`summarize`).
Does not own: any I/O (`tether.session.store` reads the files), line parsing
(`tether.session.reader`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tether.errors import SessionError
from tether.session.model import (
    EventEntry,
    LoadedSession,
    LoadReport,
    SessionHeader,
    SessionInfo,
    SkippedLine,
)
from tether.session.names import name_of
from tether.session.reader import TORN_EVENT, Entry, TurnEntry, excerpt, scan_bytes

if TYPE_CHECKING:  # imported on use: `tether sessions list` needs no pydantic
    from tether.messages import Turn

_TURN_LINE = b'\n{"type":"turn"'
_SPACE = re.compile(r"\s+")


def assemble(
    header: SessionHeader,
    path: Path,
    timeline: Sequence[Entry | SkippedLine],
    torn_tail: bool,
) -> LoadedSession:
    """Build the loaded view from a timeline (a fork's parent prefix, then own lines).

    Turns are validated with the `tether.messages` codec; a turn that fails, or whose id
    differs from its entry id, is skipped and reported. Of entries sharing an id the first is
    kept and the rest reported. Non-turn entries become `EventEntry` values. A skipped line
    that a `torn_line` event names (a torn tail a resume isolated after a load reported it)
    is moved to the report's `isolated`: reported once, not on every load after.

    Args:
        header: the session's own header.
        path: the session's own file.
        timeline: entries and already-skipped lines, in history order.
        torn_tail: whether the session's own file ends in a torn line.

    Returns:
        The loaded session with its report.
    """
    turns: list[Turn] = []
    turn_ts: list[int] = []
    events: list[EventEntry] = []
    skipped: list[SkippedLine] = []
    first_line: dict[str, Entry] = {}
    salvaged: list[Entry] = []
    isolated: set[tuple[Path, int]] = set()  # torn tails a resume isolated (`TORN_EVENT`)
    last: str | None = header.parent_entry
    for item in timeline:
        if isinstance(item, TurnEntry):  # the common case first: a writer's turn line
            eid = item.id
            if eid not in first_line and item.turn.id == eid:
                first_line[eid] = item
                last = eid
                turns.append(item.turn)
                turn_ts.append(item.ts_ms)
                continue
        elif isinstance(item, SkippedLine):
            skipped.append(item)
            continue
        problem = ""
        seen = first_line.get(item.id)
        turn: Turn | None = None
        if seen is not None:
            where = "" if seen.path == item.path else f" of {seen.path.name}"
            problem = f"duplicate entry id {item.id!r} (first on line {seen.line}{where})"
        elif item.type == "turn":
            turn, problem = _turn_of(item)
        if problem:
            skipped.append(_skip(item, problem))
            continue
        first_line[item.id] = item
        if item.salvaged:
            salvaged.append(item)
        last = item.id
        if turn is not None:
            turns.append(turn)
            turn_ts.append(item.ts_ms)
        else:
            event = _event_of(item, len(turns))
            if event.kind == TORN_EVENT and isinstance(line := event.data.get("line"), int):
                isolated.add((item.path, line))
            events.append(event)
    if isolated:  # reported once, as the torn tail, by the load before the resume
        known = tuple(x for x in skipped if (x.path, x.line) in isolated)
        skipped = [x for x in skipped if (x.path, x.line) not in isolated]
        salvaged = [x for x in salvaged if (x.path, x.line) not in isolated]
    else:
        known = ()
    report = LoadReport(
        path=path,
        skipped=tuple(skipped),
        torn_tail=torn_tail,
        salvaged=len(salvaged),
        isolated=known,
    )
    return LoadedSession(
        header=header,
        path=path,
        turns=tuple(turns),
        turn_ts_ms=tuple(turn_ts),
        events=tuple(events),
        last_entry_id=last,
        report=report,
    )


def _skip(item: Entry, reason: str) -> SkippedLine:
    if item.turn is not None:  # decoded in one pass: the line is as written (compact JSON)
        text = item.raw[:320].decode("utf-8", "replace")
    else:
        text = json.dumps(item.record, ensure_ascii=False, separators=(",", ":"))
    return SkippedLine(
        path=item.path, line=item.line, reason=reason, excerpt=excerpt(text[:80].encode())
    )


def _turn_of(item: Entry) -> tuple[Turn | None, str]:
    if item.turn is not None:
        turn = item.turn
        if turn.id != item.id:
            return None, f"turn id {turn.id!r} differs from its entry id {item.id!r}"
        return turn, ""
    from pydantic import ValidationError

    from tether.messages import turn_from_dict

    raw = item.record.get("turn")
    if not isinstance(raw, dict):
        return None, f"turn entry {item.id!r} without a turn object"
    try:
        turn = turn_from_dict(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        return None, f"invalid turn {item.id!r}: {loc}: {first['msg']} ({exc.error_count()} errors)"
    if turn.id != item.id:
        return None, f"turn id {turn.id!r} differs from its entry id {item.id!r}"
    return turn, ""


def _event_of(item: Entry, after_turns: int) -> EventEntry:
    rec = item.record
    kind = rec.get("kind")
    data = rec.get("data")
    is_event = item.type == "event"
    return EventEntry(
        type=item.type,
        id=item.id,
        parent_id=item.parent_id,
        ts_ms=item.ts_ms,
        kind=kind if is_event and isinstance(kind, str) else None,
        data=data if is_event and isinstance(data, dict) else rec,  # pyright: ignore[reportUnknownArgumentType]
        after_turns=after_turns,
    )


def _first_user_text(data: bytes, max_turns: int = 64) -> str:
    """The first text block of the first user turn among the first `max_turns` turn lines."""
    pos = data.find(_TURN_LINE)
    for _ in range(max_turns):
        if pos < 0:
            return ""
        end = data.find(b"\n", pos + 1)
        line = data[pos + 1 : end if end >= 0 else len(data)]
        pos = data.find(_TURN_LINE, pos + 1)
        if b'"role":"user"' not in line:
            continue
        try:
            turn = json.loads(line)["turn"]
            texts = [b["text"] for b in turn["content"] if b.get("type") == "text"]
        except (ValueError, RecursionError, KeyError, TypeError, AttributeError):
            continue
        if texts and isinstance(texts[0], str):
            return texts[0]
    return ""


def _countable_turn(item: Entry) -> bool:
    """A turn entry `assemble` would keep, short of full validation: a `turn` object whose id
    is the entry id (a line the scan decoded straight into a typed turn is one when its ids
    agree)."""
    if item.turn is not None:
        return item.turn.id == item.id
    turn: object = item.record.get("turn")
    return item.type == "turn" and isinstance(turn, dict) and cast(Any, turn).get("id") == item.id


def _count(items: Sequence[Entry | SkippedLine]) -> tuple[int, int]:
    """(turns a load keeps, lines it skips) of a file's or a fork's timeline, short of full
    turn validation: skipped, duplicate-id and unusable turn lines are not turns."""
    seen: set[str] = set()
    turns = skipped = 0
    for item in items:
        if isinstance(item, SkippedLine) or item.id in seen:
            skipped += 1
        else:
            seen.add(item.id)
            if _countable_turn(item):
                turns += 1
            elif item.type == "turn":
                skipped += 1
    return turns, skipped


def _user_text(item: Entry) -> str | None:
    """The first text block of a user turn entry, else None."""
    if item.turn is not None:
        if item.turn.role != "user":
            return None
        return next((b.text for b in item.turn.content if b.type == "text"), None)
    turn: object = item.record.get("turn")
    if item.type != "turn" or not isinstance(turn, dict):
        return None
    t = cast(dict[str, Any], turn)
    blocks: object = t.get("content")
    if t.get("role") != "user" or not isinstance(blocks, list):
        return None
    for b in cast(list[Any], blocks):
        if isinstance(b, dict) and cast(dict[str, Any], b).get("type") == "text":
            text: object = cast(dict[str, Any], b).get("text")
            return text if isinstance(text, str) else None
    return None


def held(timeline: Sequence[Entry | SkippedLine]) -> tuple[int, str]:
    """(turn count, preview) of a fork's whole history: its parent chain's entries up to the
    fork point, then its own (`SessionStore._timeline`), counted as `summarize` counts one
    file's; the preview is the history's first user text (the parent's first prompt)."""
    turns, _ = _count(timeline)
    first = next(
        (
            text
            for item in timeline
            if not isinstance(item, SkippedLine) and (text := _user_text(item)) is not None
        ),
        "",
    )
    return turns, _SPACE.sub(" ", first).strip()[:80]


def summarize(sid: str, path: Path, data: bytes, modified_ms: int) -> SessionInfo:
    """The `SessionStore.list()` row of one file's bytes (turns not fully validated).

    The file is read by the same rules as a load (`scan_bytes`): a damaged header that a load
    stands in for is listed, not an error; skipped, duplicate and torn lines are not turns;
    a line salvaged by a load is one.

    Args:
        sid: the session id (from the file name).
        path: the file.
        data: its bytes.
        modified_ms: its mtime, integer Unix milliseconds.

    Returns:
        The row; `error` is set (and `created_ms` is the mtime) when the file is not a session.
    """
    try:
        scan = scan_bytes(data, path)
    except SessionError as exc:
        return SessionInfo(
            id=sid, path=path, created_ms=modified_ms, modified_ms=modified_ms, cwd="",
            turn_count=0, preview="", error=str(exc),
        )  # fmt: skip
    header = scan.header
    turns, skipped = _count(scan.items)
    preview = _SPACE.sub(" ", _first_user_text(data)).strip()[:80]
    name = name_of(i for i in scan.items if not isinstance(i, SkippedLine))
    return SessionInfo(
        id=sid,
        path=path,
        created_ms=header.created_ms,
        modified_ms=modified_ms,
        cwd=header.cwd,
        turn_count=turns,
        preview=preview,
        parent=header.parent,
        skipped_lines=skipped,
        caller=header.caller_session,
        name=name,
    )

