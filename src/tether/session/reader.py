"""Reading session files line by line: header, entry envelopes, damage reports, salvage.

Owns: splitting a session file's bytes into lines, parsing the header (`parse_header`), parsing
entry envelopes with salvage of a complete entry fused after a torn prefix (`parse_line`),
scanning a whole file (`scan_bytes`), finding the last entry id from the end of an open file
(`last_entry_id`) and the line number of a torn last line (`torn_line_number`). Never writes.
Does not own: turn validation, duplicate removal or fork chains (`tether.session.store`).

Rules:
    - Lines are split on `\\n` bytes only (never on other Unicode line breaks).
    - Line 1 must be the session header, else `SessionError` (the file is not a tether session).
    - A blank (whitespace-only) line is ignored silently: it holds no data.
    - A well-formed entry is a JSON object with a non-empty string `type` (not `session`), a
      non-empty string `id`, a `parent_id` key (string or null) and an integer `ts_ms`.
    - A line that does not parse is searched for `{"type":` starts; every one that decodes to a
      well-formed entry is kept (salvaged). The line is still reported, since bytes were lost.
    - A line that is a well-formed entry once its invalid UTF-8 bytes are decoded as U+FFFD is
      kept (`salvaged`, so the load report names the damage): two bad bytes inside a text
      block cost two characters, not the turn.
    - The last line, when it has no newline and is damaged, is a torn tail: flagged, not listed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, make_dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, cast

from tether.errors import SessionError
from tether.session.layout import validate_session_id
from tether.session.model import SessionHeader, SkippedLine

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from tether.messages import Turn

FORMAT_VERSION = 1
"""The session file format version this code reads and writes."""

TORN_EVENT = "torn_line"
"""The event `SessionStore.open_for_append` writes after isolating a torn last line (data:
`{"line": N}`, the fragment's 1-based line in the same file): a load skips that line without
reporting it again (a load before the resume reported it as the torn tail)."""

_START = '{"type":'
_DECODER = json.JSONDecoder()
_SURROGATE = re.compile("[\udc80-\udcff]")
_MAX_HEADER_BYTES = 1 << 20


@dataclass(slots=True, kw_only=True)
class RawEntry:
    """A well-formed entry envelope, before turn validation. Read-only by convention: not
    `frozen`, because a frozen dataclass's `__init__` sets each field through
    `object.__setattr__`, 2 µs more per entry: 13 % of loading a 100 MB session
    (bench/session_load.py).

    Attributes:
        path: the file it was read from.
        line: its 1-based line number in that file.
        type: the entry type (`turn`, `event`, or unknown).
        id: the entry id.
        parent_id: the previous entry's id or None.
        ts_ms: write time, integer Unix milliseconds.
        record: the whole decoded JSON object (empty for a turn line decoded straight into
            its `turn`; `raw` then holds the line).
        salvaged: True when recovered from a damaged line.
        turn: the typed turn of a `turn` line decoded in one pass (`parse_line`'s fast path),
            else None (the loader validates `record["turn"]`).
        raw: the line's bytes when `turn` is set, else b"".
    """

    path: Path
    line: int
    type: str
    id: str
    parent_id: str | None
    ts_ms: int
    record: dict[str, Any]
    salvaged: bool = False
    turn: Turn | None = None
    raw: bytes = b""


class TurnEntry:
    """A well-formed `turn` line as the writer writes it, decoded and validated in one pass
    (`scan_bytes`' fast path): the envelope and its typed turn, with no `RawEntry` built (that
    was 1.5 µs per line, a tenth of loading a 100 MB session, bench/session_load.py), and its
    bytes not kept (they are sliced again from the file's contents when a report quotes them).
    The instances are of a subclass made on first use (`_turn_line_class`: pydantic fills the
    envelope fields; `scan_bytes` sets `source`, `line` and `start`). Read-only by convention.

    Attributes:
        source: the file and its contents, `(path, data)`.
        line: its 1-based line number in that file.
        start: the offset of the line in the contents.
        type: `turn`.
        id: the entry id (non-empty).
        parent_id: the previous entry's id or None.
        ts_ms: write time, integer Unix milliseconds.
        turn: the typed turn.
        salvaged: always False (a salvaged entry is a `RawEntry`).
        record: always empty (the line is `raw`; its turn is `turn`).
    """

    __slots__ = ("line", "source", "start")
    salvaged: ClassVar[bool] = False
    record: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    source: tuple[Path, bytes]
    line: int
    start: int
    if TYPE_CHECKING:  # the fields of the subclass `_turn_line_class` makes
        type: str
        id: str
        parent_id: str | None
        ts_ms: int
        turn: Turn

    @property
    def path(self) -> Path:
        """The file it was read from."""
        return self.source[0]

    @property
    def raw(self) -> bytes:
        """The line's bytes, without its newline."""
        data = self.source[1]
        end = data.find(b"\n", self.start)
        return data[self.start : end if end >= 0 else len(data)]


Entry = RawEntry | TurnEntry
"""A well-formed entry: a general one (`RawEntry`) or a writer's turn line (`TurnEntry`)."""


@cache
def _turn_line_class() -> Any:
    """The shape of a well-formed `turn` entry line (envelope + typed turn), decoded and
    validated in one pass (see `scan_bytes`); built on first use (pydantic is imported then).
    Not frozen: `scan_bytes` sets the `TurnEntry` slots (`path`, `line`, `raw`) it inherits."""
    from typing import Annotated, Literal

    from pydantic import Field, StrictInt

    from tether.messages import Turn

    fields: list[tuple[str, Any]] = [
        ("type", Literal["turn"]),
        ("id", Annotated[str, Field(min_length=1)]),
        ("parent_id", str | None),
        ("ts_ms", StrictInt),
        ("turn", Turn),
    ]
    return make_dataclass("TurnLine", fields, slots=True, bases=(TurnEntry,))


@cache
def _turn_line_codec() -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(_turn_line_class())


def turn_line_decoder() -> Callable[[bytes], Any]:
    """The one-pass decoder of a writer's turn line (pydantic-core's own `validate_json`, not
    the `TypeAdapter` wrapper: 0.6 µs less per line). Raises `ValueError` (pydantic's
    `ValidationError`) when the line is anything else."""
    return _turn_line_codec().validator.validate_json


_TURN_PREFIX = b'{"type":"turn","id":'


def _fast_turn_line(raw: bytes, path: Path, line: int) -> RawEntry | None:
    """Fast path of `parse_line`: a turn line as the writer writes it, decoded straight into
    its typed turn in one pass; None when the line is anything else. A None line takes
    `parse_line`'s general path, which decides exactly as before (so does a lone surrogate
    escape: the one-pass decoder rejects it, the general path decodes it)."""
    try:
        e = turn_line_decoder()(raw)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None
    return RawEntry(
        path=path,
        line=line,
        type="turn",
        id=e.id,
        parent_id=e.parent_id,
        ts_ms=e.ts_ms,
        record={},
        turn=e.turn,
        raw=raw,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class FileScan:
    """One file read: its header, then entries and skipped lines in file order.

    Attributes:
        path: the file.
        header: its parsed header.
        items: `RawEntry`, `TurnEntry` and `SkippedLine` values in line order.
        torn_tail: True when the last line had no newline and was (partly) unusable.
    """

    path: Path
    header: SessionHeader
    items: tuple[Entry | SkippedLine, ...]
    torn_tail: bool


def excerpt(raw: bytes, limit: int = 80) -> str:
    """The first `limit` characters of a line, invalid UTF-8 and control characters escaped."""
    text = raw[: limit * 4].decode("utf-8", "backslashreplace")[:limit]
    return "".join(
        c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else repr(c)[1:-1]
        for c in text
    )


def _envelope(obj: object) -> tuple[dict[str, Any] | None, str]:
    """Check an entry envelope. Returns (the record, "") or (None, why it is not an entry)."""
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    rec = cast(dict[str, Any], obj)
    etype = rec.get("type")
    if not isinstance(etype, str) or not etype:
        return None, "entry without a type"
    if etype == "session":
        return None, "a second session header"
    eid = rec.get("id")
    if not isinstance(eid, str) or not eid:
        return None, f"{etype} entry without an id"
    parent = rec.get("parent_id", 0)
    if parent is not None and not isinstance(parent, str):
        return None, f"{etype} entry {eid!r} without a parent_id"
    ts = rec.get("ts_ms")
    if not isinstance(ts, int) or isinstance(ts, bool):
        return None, f"{etype} entry {eid!r} without an integer ts_ms"
    return rec, ""


def _raw_entry(rec: dict[str, Any], path: Path, line: int, *, salvaged: bool) -> RawEntry:
    return RawEntry(
        path=path,
        line=line,
        type=rec["type"],
        id=rec["id"],
        parent_id=rec["parent_id"],
        ts_ms=rec["ts_ms"],
        record=rec,
        salvaged=salvaged,
    )


def _why_unparsable(raw: bytes, exc: Exception) -> str:
    if b"\x00" in raw:
        return "NUL bytes"
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid UTF-8 at byte {exc.start}"
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at column {exc.colno}"
    return "invalid JSON: nested too deeply"


def _salvage(raw: bytes, path: Path, line: int) -> list[RawEntry]:
    """Every well-formed entry that starts with `{"type":` somewhere in a damaged line."""
    text = raw.decode("utf-8", "surrogateescape")
    found: list[RawEntry] = []
    pos = text.find(_START)
    while pos != -1:
        try:
            obj, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find(_START, pos + 1)
            continue
        rec, _ = _envelope(obj)
        if rec is not None and not _SURROGATE.search(text, pos, end):
            found.append(_raw_entry(rec, path, line, salvaged=True))
            pos = text.find(_START, end)
        else:
            pos = text.find(_START, pos + 1)
    return found


def parse_line(raw: bytes, path: Path, line: int) -> tuple[list[RawEntry], str]:
    """Parse one line (without its newline) into entries.

    Args:
        raw: the line's bytes.
        path: the file, recorded in each entry.
        line: the 1-based line number, recorded in each entry.

    Returns:
        `(entries, problem)`: the entries found (one for a clean line, zero or more salvaged from
        a damaged one) and "" for a clean or blank line, else why the line is damaged.
    """
    if raw.startswith(_TURN_PREFIX) and (entry := _fast_turn_line(raw, path, line)) is not None:
        return [entry], ""
    if not raw.strip():
        return [], ""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        replaced = _replaced_entry(raw, path, line)
        if replaced is not None:
            return [replaced], ""
        return _salvage(raw, path, line), _why_unparsable(raw, exc)
    except (ValueError, RecursionError) as exc:
        return _salvage(raw, path, line), _why_unparsable(raw, exc)
    rec, why = _envelope(obj)
    if rec is None:
        return [], why
    return [_raw_entry(rec, path, line, salvaged=False)], ""


def _replaced_entry(raw: bytes, path: Path, line: int) -> RawEntry | None:
    """The entry a line holds once its invalid UTF-8 is decoded as U+FFFD (marked salvaged),
    or None when it is still not a well-formed entry."""
    if b"\x00" in raw:
        return None
    try:
        obj = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    rec, _ = _envelope(obj)
    return None if rec is None else _raw_entry(rec, path, line, salvaged=True)


def _header_error(path: Path, what: str) -> SessionError:
    return SessionError(f"{path} is not a tether session: {what}")


def parse_header(raw: bytes, path: Path) -> SessionHeader:
    """Parse line 1 of a session file.

    Args:
        raw: the first line's bytes, without its newline.
        path: the file, for error messages.

    Returns:
        The header.

    Raises:
        SessionError: the line is not a version-1 tether header (unparsable, wrong type, newer
            version, missing or mistyped fields, unsafe parent id).
    """
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        return_reason = _why_unparsable(raw, exc)
        raise _header_error(
            path, f"line 1 is not a header ({return_reason}): {excerpt(raw)!r}"
        ) from None
    if not isinstance(obj, dict) or cast(dict[str, Any], obj).get("type") != "session":
        raise _header_error(path, f"line 1 is not a session header: {excerpt(raw)!r}")
    rec = cast(dict[str, Any], obj)
    version = rec.get("version")
    if version != FORMAT_VERSION:
        raise _header_error(path, f"unsupported format version {version!r} (this tether reads 1)")
    sid, created, cwd = rec.get("id"), rec.get("created_ms"), rec.get("cwd")
    if not isinstance(sid, str) or not isinstance(cwd, str):
        raise _header_error(path, "header lacks a string id or cwd")
    if not isinstance(created, int) or isinstance(created, bool):
        raise _header_error(path, "header lacks an integer created_ms")
    p_session, p_entry = rec.get("parent_session"), rec.get("parent_entry")
    if (p_session is None) != (p_entry is None):
        raise _header_error(path, "a fork header needs both parent_session and parent_entry")
    if p_session is not None:
        if not isinstance(p_session, str) or not isinstance(p_entry, str) or not p_entry:
            raise _header_error(path, "parent_session and parent_entry must be strings")
        validate_session_id(p_session)
    c_session, c_call = rec.get("caller_session"), rec.get("caller_tool_call")
    if not isinstance(c_session, str | None) or not isinstance(c_call, str | None):
        raise _header_error(path, "caller_session and caller_tool_call must be strings")
    raw_path = rec.get("agent_path", [])
    agent_path = (
        tuple(cast(list[str], raw_path))
        if isinstance(raw_path, list)
        and all(isinstance(x, str) for x in cast(list[object], raw_path))
        else ()
    )
    return SessionHeader(
        id=sid,
        version=version,
        created_ms=created,
        cwd=cwd,
        parent_session=p_session,
        parent_entry=p_entry,
        caller_session=c_session,
        caller_tool_call=c_call,
        agent_path=agent_path,
    )


def scan_bytes(data: bytes, path: Path) -> FileScan:
    """Parse a whole session file's contents (see the module rules).

    Args:
        data: the file's bytes.
        path: the file, for reports and errors.

    Returns:
        The header, the entries and skipped lines in order, and the torn-tail flag.

    Raises:
        SessionError: the file is empty or line 1 is not a complete tether header.
    """
    if not data:
        raise _header_error(path, "the file is empty")
    head_end = data.find(b"\n")
    if head_end < 0:
        raise _header_error(path, f"the header line is incomplete: {excerpt(data)!r}")
    items: list[Entry | SkippedLine] = []
    try:
        header = parse_header(data[:head_end], path)
    except SessionError:
        header = _headerless(data.split(b"\n"), path)
        if header is None:
            raise
        items.append(
            SkippedLine(
                path=path,
                line=1,
                reason="damaged header: loaded as a standalone session "
                "(had it been a fork, its parent's history is not included)",
                excerpt=excerpt(data[:head_end]),
            )
        )
    torn = False
    decode = turn_line_decoder()
    append = items.append
    find = data.find
    source = (path, data)
    prefix = _TURN_PREFIX
    size = len(data)
    pos = head_end + 1
    line = 1
    # Line by line, each line's bytes freed once decoded (not split all at once): the next
    # line reuses the same warm memory.
    while pos < size:
        line += 1
        start = pos
        end = find(b"\n", pos)
        if end < 0:  # the last line, without its newline (end == size marks it below)
            end = size
        pos = end + 1
        if end == start:
            continue
        raw = data[start:end]
        if raw.startswith(prefix):  # the common case: one call, no parse_line lists or tuples
            try:
                entry = decode(raw)
            except ValueError:  # not a writer's turn line after all: the general path decides
                pass
            else:
                entry.source = source
                entry.line = line
                entry.start = start
                append(entry)
                continue
        entries, problem = parse_line(raw, path, line)
        items.extend(entries)
        if problem:
            if end == size:
                torn = True
            else:
                append(SkippedLine(path=path, line=line, reason=problem, excerpt=excerpt(raw)))
    return FileScan(path=path, header=header, items=tuple(items), torn_tail=torn)


def _headerless(lines: list[bytes], path: Path) -> SessionHeader | None:
    """A stand-in header when line 1 is damaged bytes (not JSON at all, e.g. a NUL run) and
    a later line is a tether entry; None when line 1 is JSON (a foreign or newer format must
    not be misread) or no entry follows (not a tether session)."""
    try:
        json.loads(lines[0].decode("utf-8"))
    except (ValueError, RecursionError):
        pass
    else:
        return None
    for i, raw in enumerate(lines[1:], start=2):
        if raw and parse_line(raw, path, i)[0]:
            return SessionHeader(id=path.stem, created_ms=0, cwd="")
    return None


def read_header(fd: int, path: Path) -> tuple[SessionHeader, int]:
    """Read and parse the header of an open file.

    Args:
        fd: a readable file descriptor (read with `pread`, the offset is not moved).
        path: the file, for errors.

    Returns:
        `(header, end)`: the header and the byte offset just after its newline.

    Raises:
        SessionError: no complete header within the first MiB, or not a tether header.
    """
    head = os.pread(fd, _MAX_HEADER_BYTES, 0)
    if not head:
        raise _header_error(path, "the file is empty")
    nl = head.find(b"\n")
    if nl < 0:
        raise _header_error(path, f"the header line is incomplete: {excerpt(head)!r}")
    return parse_header(head[:nl], path), nl + 1


def last_entry_id(fd: int, size: int, start: int, path: Path, chunk: int = 1 << 16) -> str | None:
    """Find the id of the last well-formed entry, reading backwards from the end of a file.

    Args:
        fd: a readable file descriptor (read with `pread`).
        size: the file size in bytes.
        start: the offset of the first entry line (just after the header's newline).
        path: the file, for parsing.
        chunk: bytes read per step (doubles each step).

    Returns:
        The id of the last entry found (salvage rules apply), or None when there is none.
    """
    partial = b""
    pos = size
    while pos > start:
        lo = max(start, pos - chunk)
        buf = os.pread(fd, pos - lo, lo) + partial
        pos = lo
        pieces = buf.split(b"\n")
        partial = pieces[0] if pos > start else b""
        complete = pieces[1:] if pos > start else pieces
        for raw in reversed(complete):
            entries, _ = parse_line(raw, path, 0)
            if entries:
                return entries[-1].id
        chunk *= 2
    return None


def torn_line_number(fd: int, size: int, path: Path) -> int | None:
    """The 1-based line number of the unterminated last line of an open session file of `size`
    bytes when it is a torn tail (a load drops and reports it), else None (a complete entry
    whose newline alone is missing: a load keeps it). Reads the whole file: only after a crash
    mid-write."""
    data = os.pread(fd, size, 0)
    cut = data.rfind(b"\n") + 1
    line = data.count(b"\n", 0, cut) + 1
    _, problem = parse_line(data[cut:], path, line)
    return line if problem else None
