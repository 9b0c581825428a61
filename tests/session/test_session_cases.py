"""Cases T22 (a malformed line must not hide the rest) and T23 (torn append), plus fuzzing.

The cases use a neutral line format (`{"type":"message","id":…,"role":…,"text":…}`); each message
line is converted to a tether turn entry and damaged lines are kept verbatim, under a tether
header. The header is the extra line 1, so case line N is file line N + 1.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.sessions import header_line, neutral_to_tether, rich_turn, turn_line, user
from tether.session import SessionStore
from tether.session.loader import assemble
from tether.session.reader import scan_bytes

T22_LINES = [
    '{"type":"message","id":"m1","role":"user","text":"Start the refactor."}',
    '{"type":"message","id":"m2","parent":"m1","role":"assistant","text":"On it."}',
    '{"type":"attachment","id":"x1","kind":"queued_comm',
    "\u0000\u0000\u0000\u0000",
    '{"type":"message","id":"m3","parent":"m2","role":"user","text":"Now update the docs."}',
    '{"type":"message","id":"m4","parent":"m3","role":"assistant","text":"Docs updated."}',
]

T23_BEFORE_CRASH = (
    '{"type":"message","id":"m1","role":"user","text":"hi"}\n{"type":"pr-link","session":"S","prNu'
)
T23_NEXT_APPEND = '{"type":"message","id":"m2","parent":"m1","role":"assistant","text":"hello"}\n'


def _write(store: SessionStore, sid: str, data: bytes) -> Path:
    store.root.mkdir(parents=True, exist_ok=True)
    path = store.path(sid)
    path.write_bytes(data)
    return path


def _convert(text: str) -> bytes:
    """Convert neutral-format text (lines joined by newlines) line by line, keeping the tail."""
    return b"\n".join(neutral_to_tether(line) for line in text.split("\n"))


def test_t22_malformed_lines_do_not_hide_the_rest(store: SessionStore) -> None:
    data = header_line("t22") + b"\n".join(neutral_to_tether(x) for x in T22_LINES) + b"\n"
    path = _write(store, "t22", data)
    loaded = store.load("t22")
    # Assert: loader returns 4 messages and a report listing lines 3–4 as skipped.
    assert [t.id for t in loaded.turns] == ["m1", "m2", "m3", "m4"]
    assert [t.text for t in loaded.turns][-1] == "Docs updated."
    skipped = loaded.report.skipped
    assert [s.line - 1 for s in skipped] == [3, 4]  # case numbering (file lines 4–5)
    assert skipped[0].reason.startswith("invalid JSON")
    assert skipped[0].excerpt == T22_LINES[2]
    assert skipped[1].reason == "NUL bytes" and skipped[1].excerpt == "\\x00" * 4
    assert not loaded.report.torn_tail
    assert loaded.report.describe() == f"skipped 2 malformed lines (4–5) of {path}"
    assert path.read_bytes() == data  # not rewritten in place


def test_t23_resume_isolates_the_torn_fragment(store: SessionStore) -> None:
    path = _write(store, "t23", header_line("t23") + _convert(T23_BEFORE_CRASH))
    assert store.load("t23").report.torn_tail  # the load that resumes it reports it
    with store.open_for_append("t23") as w:
        w.append(user("m2", "hello"))
    loaded = store.load("t23")
    assert [t.id for t in loaded.turns] == ["m1", "m2"]
    # reported once: later loads skip the isolated fragment without naming it again
    assert loaded.report.ok and loaded.report.skipped == ()
    assert [s.line for s in loaded.report.isolated] == [3]
    lines = path.read_bytes().split(b"\n")
    assert lines[2] == b'{"type":"pr-link","session":"S","prNu'  # fragment alone on its line
    event = json.loads(lines[3])  # the note naming it, chained after the last entry
    assert (event["kind"], event["data"], event["parent_id"]) == ("torn_line", {"line": 3}, "m1")
    assert json.loads(lines[4])["parent_id"] == event["id"]


def test_a_torn_tail_is_reported_once_and_other_damage_every_time(store: SessionStore) -> None:
    """A resume after a crash reported the torn last line, isolated it on its own line, and
    every load after named it again as a malformed line: the same damage twice (and on).
    Damage the resume did not report still is, on every load."""
    path = _write(store, "r", header_line("r") + turn_line(user("u1", "hi"), None) + b"garbage\n")
    with path.open("ab") as f:
        f.write(turn_line(user("u2", "cut"), "u1")[:30])
    first = store.load("r").report
    assert first.describe() == (
        f"skipped 1 malformed line (3) of {path}; ignored a torn last line (interrupted write) "
        f"of {path}"
    )
    for n in range(2):
        with store.open_for_append("r") as w:
            w.append(user(f"m{n}", "again"))
        again = store.load("r").report
        assert again.describe() == f"skipped 1 malformed line (3) of {path}", n
        assert [s.line for s in again.isolated] == [4]
    assert [t.id for t in store.load("r").turns] == ["u1", "m0", "m1"]
    assert path.read_bytes().count(b'"torn_line"') == 1  # the second resume found none


def test_t23_fused_line_from_an_old_writer_is_salvaged(store: SessionStore) -> None:
    fused = _convert(T23_BEFORE_CRASH) + _convert(T23_NEXT_APPEND)
    _write(store, "t23", header_line("t23") + fused)
    loaded = store.load("t23")
    assert [t.id for t in loaded.turns] == ["m1", "m2"]
    assert loaded.report.salvaged == 1
    assert [s.line for s in loaded.report.skipped] == [3]
    assert "salvaged 1 entry" in loaded.report.describe()


def test_t23_crash_at_every_byte_of_the_last_record(store: SessionStore) -> None:
    """Truncate inside the last record at every offset, resume, append: nothing complete lost."""
    t1, t2 = user("t1", "start"), rich_turn("t2", 300)
    before = header_line("c") + turn_line(t1, None)
    last = turn_line(t2, "t1")
    assert len(last) > 300
    for cut in range(len(last) + 1):
        path = _write(store, "c", before + last[:cut])
        complete = cut >= len(last) - 1  # only the newline missing still counts as complete
        torn = 0 < cut < len(last) - 1
        assert store.load("c").report.torn_tail == torn  # before resuming: a torn tail
        with store.open_for_append("c") as w:
            if not torn:
                assert w.last_entry_id == ("t2" if complete else "t1")
            w.append(user("t3", "again"))
        loaded = store.load("c")
        expected = ["t1", "t2", "t3"] if complete else ["t1", "t3"]
        assert [t.id for t in loaded.turns] == expected, cut
        assert loaded.turns[-2 if complete else 0] == (t2 if complete else t1)
        assert len(loaded.report.isolated) == int(torn), cut  # reported before the resume
        assert loaded.report.ok, cut
        lines = path.read_bytes().split(b"\n")
        if torn:  # the torn_line note follows the fragment, chained after the last entry
            assert json.loads(lines[-3])["parent_id"] == "t1"
            assert json.loads(lines[-2])["parent_id"] == json.loads(lines[-3])["id"]
        else:
            assert json.loads(lines[-2])["parent_id"] == expected[-2]


_TURNS = [user("u0", "start"), rich_turn("a0", 200), user("u1", '{"type":'), rich_turn("a1", 50)]
_LINES = [turn_line(t, None if i == 0 else _TURNS[i - 1].id) for i, t in enumerate(_TURNS)]

_garbage = st.one_of(
    st.binary(max_size=60),
    st.sampled_from(
        [b"\x00" * 512, b'{"type":', b'{"type":"turn","id":"zz"', b"\n\n", b"\xff\xfe"]
    ),
    # a torn copy of some entry line: never the whole object, so never a duplicate entry
    st.tuples(st.sampled_from(_LINES), st.integers(min_value=0)).map(
        lambda p: p[0][: p[1] % (len(p[0]) - 2)]
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_garbage, min_size=len(_LINES) + 1, max_size=len(_LINES) + 1))
def test_garbage_between_lines_never_loses_a_valid_line(gaps: list[bytes]) -> None:
    data = header_line() + gaps[0]
    for line, gap in zip(_LINES, gaps[1:], strict=True):
        data += line + gap
    scan = scan_bytes(data, Path("s.jsonl"))
    loaded = assemble(scan.header, scan.path, scan.items, scan.torn_tail)
    assert loaded.turns == tuple(_TURNS)
