"""SessionStore / SessionWriter behaviour: layout, header, entries, resume, load, delete, list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kit.sessions import (
    assistant,
    entries,
    header_line,
    results_turn,
    rich_turn,
    turn_line,
    user,
)
from tether.errors import SessionBusyError, SessionError, SessionNotFoundError
from tether.messages import turn_to_json
from tether.session import SessionStore, SessionWriter, default_root, validate_session_id


def test_create_writes_only_the_header(store: SessionStore) -> None:
    with store.create("s1", cwd="/work/p") as w:
        assert w.id == "s1"
        assert w.path == store.root / "s1.jsonl"
        assert w.last_entry_id is None
    data = (store.root / "s1.jsonl").read_bytes()
    assert data == (
        b'{"type":"session","version":1,"id":"s1","created_ms":1700000000001,"cwd":"/work/p"}\n'
    )
    assert (store.root / "s1.jsonl").stat().st_mode & 0o777 == 0o600
    # the artifact folder exists from the start: it holds the writer lock
    assert (store.session_dir("s1") / "writer.lock").exists()
    assert store.session_dir("s1").stat().st_mode & 0o777 == 0o700


def test_create_without_id_uses_factory_and_refuses_existing(store: SessionStore) -> None:
    with store.create(cwd="/") as w:
        assert w.id == "id1"
    with pytest.raises(SessionError, match="already exists"):
        store.create("id1", cwd="/")


def test_entries_chain_parent_ids_and_timestamps(store: SessionStore) -> None:
    t1, t2 = user("u1", "fix it"), rich_turn("a1")
    with store.create("s", cwd="/") as w:
        w.append(t1)
        eid = w.append_event("usage", {"tokens": 3})
        w.append(t2)
        assert w.last_entry_id == "a1"
    e = entries(store.path("s"))
    assert [x["type"] for x in e] == ["turn", "event", "turn"]
    assert [x["id"] for x in e] == ["u1", eid, "a1"]
    assert [x["parent_id"] for x in e] == [None, "u1", eid]
    assert [x["ts_ms"] for x in e] == [1700000000002, 1700000000003, 1700000000004]
    assert e[1]["kind"] == "usage" and e[1]["data"] == {"tokens": 3}
    line3 = store.path("s").read_bytes().split(b"\n")[3]
    assert line3.endswith(b',"turn":' + turn_to_json(t2) + b"}")


def test_round_trip_rich_turns(store: SessionStore) -> None:
    turns = [user("u1", "a\nb\u2028c\x00d"), rich_turn("a1", 3000), results_turn("u2", "call_a1")]
    with store.create("s", cwd="/") as w:
        for t in turns:
            w.append(t)
    loaded = store.load("s")
    assert loaded.turns == tuple(turns)
    assert loaded.turn_ts_ms == (1700000000002, 1700000000003, 1700000000004)
    assert loaded.report.ok and loaded.last_entry_id == "u2"
    assert loaded.header.cwd == "/" and loaded.header.parent is None
    assert store.path("s").read_bytes().count(b"\n") == 4  # no raw newline inside an entry


def test_events_and_unknown_entry_types_are_kept_aside(store: SessionStore) -> None:
    with store.create("s", cwd="/") as w:
        w.append(user("u1"))
        w.append_event("compaction", {"replaced": ["u1"]}, event_id="e1")
    with store.path("s").open("ab") as f:
        f.write(b'{"type":"bookmark","id":"b1","parent_id":"e1","ts_ms":5,"label":"x"}\n')
    with store.open_for_append("s") as w:
        assert w.last_entry_id == "b1"
        w.append(assistant("a1"))
    loaded = store.load("s")
    assert [t.id for t in loaded.turns] == ["u1", "a1"]
    ev, bm = loaded.events
    assert (ev.type, ev.kind, dict(ev.data), ev.after_turns) == (
        "event",
        "compaction",
        {"replaced": ["u1"]},
        1,
    )
    assert (bm.type, bm.kind, bm.data["label"], bm.after_turns) == ("bookmark", None, "x", 1)
    assert loaded.report.ok


def test_append_event_rejects_non_json(store: SessionStore) -> None:
    with store.create("s", cwd="/") as w:
        with pytest.raises(ValueError):
            w.append_event("x", {"v": float("nan")})
        with pytest.raises(TypeError):
            w.append_event("x", {"v": object()})
        assert w.last_entry_id is None
    assert store.load("s").events == ()


def test_open_for_append_resumes_the_chain(store: SessionStore) -> None:
    with store.create("s", cwd="/") as w:
        w.append(user("u1"))
        w.append(assistant("a1"))
    with store.open_for_append("s") as w:
        assert w.last_entry_id == "a1"
        w.append(user("u2"))
    assert entries(store.path("s"))[-1]["parent_id"] == "a1"
    assert [t.id for t in store.load("s").turns] == ["u1", "a1", "u2"]


def test_open_for_append_finds_last_id_past_a_long_tail(store: SessionStore) -> None:
    with store.create("s", cwd="/") as w:
        w.append(user("u1"))
        w.append(rich_turn("a1", 300_000))  # longer than the first backwards read
    with store.path("s").open("ab") as f:
        f.write(b"\x00" * 70_000 + b"\n")
    with store.open_for_append("s") as w:
        assert w.last_entry_id == "a1"


def test_open_for_append_errors(store: SessionStore, tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        store.open_for_append("nope")
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "notes.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(SessionError, match="not a tether session"):
        store.open_for_append("notes")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty"),
        (b'{"type":"session","version":1', "incomplete"),
        (b"\x00\x00\x00\n", "NUL bytes"),  # damaged, and nothing after it to salvage
        (b'{"type":"message","id":"m1"}\n', "not a session header"),
        (b'{"type":"session","version":2,"id":"s","created_ms":1,"cwd":"/"}\n', "version 2"),
        (b'{"type":"session","version":1,"id":"s","cwd":"/"}\n', "created_ms"),
        (
            header_line()[:-2] + b',"parent_session":"../x","parent_entry":"e"}\n',
            "invalid session id",
        ),
    ],
)
def test_header_problems_raise(store: SessionStore, content: bytes, match: str) -> None:
    store.root.mkdir(parents=True)
    (store.root / "s.jsonl").write_bytes(content)
    with pytest.raises(SessionError, match=match):
        store.load("s")


def test_a_damaged_header_line_is_skipped_not_the_whole_session(store: SessionStore) -> None:
    """Line 1 is a line too (T22's kind): NUL bytes over the header lose the header only."""
    store.root.mkdir(parents=True)
    (store.root / "s.jsonl").write_bytes(
        b"\x00\x00\x00\n" + turn_line(user("u1"), None) + turn_line(assistant("a1"), "u1")
    )
    loaded = store.load("s")
    assert [t.id for t in loaded.turns] == ["u1", "a1"]
    assert [x.line for x in loaded.report.skipped] == [1]
    assert "damaged header" in loaded.report.skipped[0].reason
    with store.open_for_append("s") as w:
        assert w.last_entry_id == "a1"
        w.append(user("u2"))
    assert [t.id for t in store.load("s").turns] == ["u1", "a1", "u2"]


def test_load_not_found(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        store.load("missing")
    assert not store.exists("missing")


def test_load_reports_bad_entries_and_never_writes(store: SessionStore) -> None:
    with store.create("s", cwd="/") as w:
        w.append(user("u1"))
    bad_turn = (
        b'{"type":"turn","id":"x","parent_id":"u1","ts_ms":1,"turn":{"id":"x","role":"robot"}}'
    )
    with store.path("s").open("ab") as f:
        f.write(b"[1, 2]\n")  # line 3: JSON but not an entry
        f.write(b'{"type":"turn","id":"y"}\n')  # line 4: no parent_id / ts_ms
        f.write(bad_turn + b"\n")  # line 5: turn fails validation
        f.write(turn_line(user("other"), "u1").replace(b'"id":"other"', b'"id":"z"', 1))  # 6
        f.write(turn_line(user("u1", "again"), "u1"))  # line 7: duplicate id
        f.write(b"   \n")  # blank: ignored
        f.write(turn_line(assistant("a1"), "u1"))  # line 9
        f.write(b'{"type":"turn","id":"tor')  # torn tail
    before = store.path("s").read_bytes()
    stat = store.path("s").stat()
    loaded = store.load("s")
    assert store.path("s").read_bytes() == before
    assert store.path("s").stat().st_mtime_ns == stat.st_mtime_ns
    assert [t.id for t in loaded.turns] == ["u1", "a1"]
    assert loaded.turns[0].text == "hello"  # the first of the duplicates wins
    r = loaded.report
    assert [s.line for s in r.skipped] == [3, 4, 5, 6, 7]
    reasons = [s.reason for s in r.skipped]
    assert reasons[0] == "not a JSON object"
    assert "without a parent_id" in reasons[1]
    assert reasons[2].startswith("invalid turn 'x': role")
    assert "differs from its entry id" in reasons[3]
    assert reasons[4] == "duplicate entry id 'u1' (first on line 2)"
    assert r.torn_tail and r.salvaged == 0 and not r.ok
    assert r.describe() == (
        f"skipped 5 malformed lines (3–7) of {store.path('s')}; "
        f"ignored a torn last line (interrupted write) of {store.path('s')}"
    )


def test_fork_loads_parent_chain_then_own_entries(store: SessionStore) -> None:
    with store.create("p", cwd="/") as w:
        for t in (user("u1"), assistant("a1"), user("u2"), assistant("a2")):
            w.append(t)
    with store.create("f", cwd="/f", parent=("p", "a1")) as w:
        assert w.last_entry_id == "a1"
        w.append(user("f1", "other way"))
    assert entries(store.path("f"))[0]["parent_id"] == "a1"
    header = json.loads(store.path("f").read_bytes().split(b"\n")[0])
    assert header["parent_session"] == "p" and header["parent_entry"] == "a1"
    assert store.path("f").read_bytes().count(b"\n") == 2  # not a copy
    f = store.load("f")
    assert [t.id for t in f.turns] == ["u1", "a1", "f1"]
    assert f.header.parent == ("p", "a1") and f.last_entry_id == "f1"
    # the parent keeps growing; the fork does not see it
    with store.open_for_append("p") as w:
        w.append(user("u3"))
    assert [t.id for t in store.load("f").turns] == ["u1", "a1", "f1"]
    # a fork of a fork, at an entry inherited from the grandparent
    with store.create("g", cwd="/", parent=("f", "u1")) as w:
        w.append(user("g1"))
    assert [t.id for t in store.load("g").turns] == ["u1", "g1"]
    # a fresh fork resumes at its fork point
    store.create("h", cwd="/", parent=("p", "u2")).close()
    with store.open_for_append("h") as w:
        assert w.last_entry_id == "u2"
    assert store.load("h").last_entry_id == "u2"


def test_fork_errors(store: SessionStore) -> None:
    with store.create("p", cwd="/") as w:
        w.append(user("u1"))
    with pytest.raises(SessionNotFoundError):
        store.create("f", cwd="/", parent=("nope", "u1"))
    with pytest.raises(SessionError, match="no entry 'zz'"):
        store.create("f", cwd="/", parent=("p", "zz"))
    assert not store.exists("f")
    store.create("f", cwd="/", parent=("p", "u1")).close()
    store.delete("p", keep_forks=False)
    with pytest.raises(SessionError, match="fork of p, which does not exist"):
        store.load("f")
    # a hand-made loop
    store.path("f").write_bytes(
        header_line("f")[:-2] + b',"parent_session":"f","parent_entry":"u1"}\n'
    )
    with pytest.raises(SessionError, match="loops"):
        store.load("f")


def test_delete_removes_file_and_artifact_folder(store: SessionStore) -> None:
    with store.create("s", cwd="/") as w:
        w.append(user("u1"))
    tool_dir = store.artifact_subdir("s", "tool-results")
    assert tool_dir == store.root / "s" / "tool-results" and tool_dir.is_dir()
    (tool_dir / "call_1.txt").write_text("big output")
    (store.artifact_subdir("s", "tasks") / "t.log").write_text("log")
    store.delete("s")
    assert not store.path("s").exists() and not store.session_dir("s").exists()
    with pytest.raises(SessionNotFoundError):
        store.delete("s")
    store.artifact_subdir("orphan", "mcp-warnings")  # folder without a file
    store.delete("orphan")
    assert not store.session_dir("orphan").exists()
    store.create("plain", cwd="/").close()  # file without a folder
    store.delete("plain")
    assert not store.exists("plain")


def test_delete_refuses_a_session_being_written(store: SessionStore) -> None:
    writer = store.create("live", cwd="/")
    writer.append(user("u1"))
    with pytest.raises(SessionBusyError, match="being written"):
        store.delete("live")
    assert store.load("live").turns[0].id == "u1"  # nothing removed
    writer.append(user("u2"))
    writer.close()
    store.delete("live")
    assert not store.exists("live")


def test_list(store: SessionStore) -> None:
    assert store.list() == []
    with store.create("a", cwd="/a") as w:
        w.append(results_turn("r0", "c"))  # no text: not the preview
        w.append(user("u1", "  Refactor   the\nparser " + "x" * 200))
        w.append(assistant("a1"))
    with store.create("b", cwd="/b", parent=("a", "u1")) as w:
        w.append(user("u2"))
    (store.root / "junk.jsonl").write_bytes(b"not json\n")
    for sid, t_ns in (("a", 1_000_000_000), ("junk", 2_000_000_000), ("b", 3_000_000_000)):
        os.utime(store.root / f"{sid}.jsonl", ns=(t_ns, t_ns))
    (store.root / ".hidden.jsonl").write_bytes(header_line())
    (store.root / "notes.txt").write_text("x")
    rows = store.list()
    assert [r.id for r in rows] == ["b", "junk", "a"]
    by_id = {r.id: r for r in rows}
    a, b, junk = by_id["a"], by_id["b"], by_id["junk"]
    assert (a.cwd, a.turn_count, a.created_ms, a.modified_ms) == ("/a", 3, 1700000000001, 1000)
    assert a.preview == "Refactor the parser " + "x" * 60 and a.error is None
    # a fork holds its parent's turns up to the fork point, then its own; its first prompt
    assert (b.turn_count, b.parent, b.preview) == (3, ("a", "u1"), a.preview)
    assert junk.error is not None and "not a tether session" in junk.error


def test_list_counts_the_turns_a_fork_holds(store: SessionStore) -> None:
    """A fork stores a parent pointer, not turns: listed as 0 turns and no first prompt, a
    user took it for empty. Its row counts the history a load gives, kept while the chain's
    files are unchanged and read again when one changes."""
    with store.create("p", cwd="/") as w:
        for t in (user("u1", "first ask"), assistant("a1"), user("u2"), assistant("a2")):
            w.append(t)
    store.create("f", cwd="/", parent=("p", "a2")).close()  # `sessions fork p`: nothing own
    with store.create("g", cwd="/", parent=("f", "a1")) as w:  # at an inherited entry
        w.append(user("g1"))

    def rows() -> dict[str, tuple[int, str, str | None]]:
        return {r.id: (r.turn_count, r.preview, r.error) for r in store.list()}

    for _ in range(2):  # built, then from the index
        assert rows() == {
            "p": (4, "first ask", None), "f": (4, "first ask", None), "g": (3, "first ask", None)
        }  # fmt: skip
        assert [len(store.load(s).turns) for s in ("p", "f", "g")] == [4, 4, 3]
    with store.open_for_append("p") as w:  # the parent grows past the fork point
        w.append(user("u3"))
    with store.open_for_append("f") as w:  # the fork grows
        w.append(user("f1"))
    assert rows() == {
        "p": (5, "first ask", None), "f": (5, "first ask", None), "g": (3, "first ask", None)
    }  # fmt: skip
    store.delete("p", keep_forks=False)  # the fork no longer loads: its row says why
    (turns, _, error), g_error = rows()["f"], rows()["g"][2]
    assert turns == 0 and error is not None and "fork of p, which does not exist" in error
    assert g_error is not None and "does not exist" in g_error


def test_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert SessionStore(tmp_path / "r").root == tmp_path / "r"
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    assert SessionStore().root == tmp_path / "home" / "sessions"
    monkeypatch.delenv("TETHER_HOME")
    assert default_root().parts[-2:] == ("tether", "sessions")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        ".",
        "..",
        "../../etc",
        "a/b",
        "a\\b",
        ".hidden",
        "x" * 129,
        "a b",
        "s.jsonl",
        "é",
        "a\x00",
    ],
)
def test_bad_session_ids_are_refused(store: SessionStore, bad: str) -> None:
    with pytest.raises(SessionError, match="invalid session id"):
        validate_session_id(bad)
    for op in (store.load, store.exists, store.delete, store.open_for_append, store.session_dir):
        with pytest.raises(SessionError, match="invalid session id"):
            op(bad)
    with pytest.raises(SessionError, match="invalid session id"):
        store.create(bad, cwd="/")
    assert not store.root.exists()


def test_good_ids() -> None:
    for good in ("a", "A-1_b.c", "x" * 128, "20250101-101010-abcd1234", "a..b"):
        assert validate_session_id(good) == good


def test_writer_lifecycle(store: SessionStore) -> None:
    w = store.create("s", cwd="/")
    w.append(user("u1"))
    w.sync()
    w.sync()
    w.close()
    w.close()
    assert w.closed
    with pytest.raises(SessionError, match="closed"):
        w.append(user("u2"))
    with pytest.raises(SessionError, match="closed"):
        w.sync()


def test_failed_write_leaves_an_isolated_fragment(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    calls = {"n": 0}

    def flaky(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[:25]))  # short write
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    with store.create("s", cwd="/") as w:
        w.append(user("u1"))
        monkeypatch.setattr(os, "write", flaky)
        with pytest.raises(OSError, match="No space"):
            w.append(user("u2"))
        assert w.last_entry_id == "u1"
        w.append(user("u3"))
        monkeypatch.undo()
    loaded = store.load("s")
    assert [t.id for t in loaded.turns] == ["u1", "u3"]
    assert [s.line for s in loaded.report.skipped] == [3]
    assert entries(store.path("s"))[-1]["parent_id"] == "u1"


def test_a_second_writer_of_one_session_is_refused_until_the_first_closes(
    store: SessionStore,
) -> None:
    first = store.create("s", cwd="/")
    with pytest.raises(SessionBusyError):
        store.open_for_append("s")
    first.close()
    second = store.open_for_append("s")
    with pytest.raises(SessionBusyError):
        store.open_for_append("s")
    second.close()
    store.open_for_append("s").close()


def test_the_writer_lock_dies_with_its_process(store: SessionStore) -> None:
    store.create("s", cwd="/").close()
    code = (
        "import sys, time; from pathlib import Path; from tether.session import SessionStore;"
        f"w = SessionStore(Path({str(store.root)!r})).open_for_append('s');"
        "print('locked', flush=True); time.sleep(60)"
    )
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
            with pytest.raises(SessionBusyError):
                store.open_for_append("s")
        finally:
            proc.kill()  # SIGKILL: no cleanup runs in the child
            proc.wait()
    store.open_for_append("s").close()


def test_two_descriptors_never_interleave_inside_a_line(store: SessionStore) -> None:
    # The lock keeps one writer per session; the one-write-per-entry rule is what keeps a line
    # whole even so (two raw O_APPEND descriptors, bypassing the lock).
    store.create("s", cwd="/").close()
    path = store.path("s")
    writers = [
        SessionWriter(
            os.open(path, os.O_WRONLY | os.O_APPEND),
            session_id="s",
            path=path,
            last_entry_id=None,
            clock_ms=lambda: 1,
            id_factory=lambda: "e",
        )
        for _ in range(2)
    ]
    big = "y" * 48_000

    def run(k: int) -> None:
        for i in range(60):
            writers[k].append(user(f"w{k}-{i}", big))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in writers:
        w.close()
    loaded = store.load("s")
    assert loaded.report.ok
    assert len(loaded.turns) == 120
    assert {t.id for t in loaded.turns} == {f"w{k}-{i}" for k in range(2) for i in range(60)}


def test_odd_ids_and_kinds_are_escaped(store: SessionStore) -> None:
    odd = ['we"ird', "back\\slash", "new\nline", "tab\tid", "é-ü", "\u2028", "\x7f"]
    with store.create("s", cwd='/tmp/"q"\n') as w:
        for i, tid in enumerate(odd):
            w.append(user(tid, f"t{i}"))
        w.append_event('k"ind\n', {"é": "\u2028"}, event_id="ev\n1")
    loaded = store.load("s")
    assert [t.id for t in loaded.turns] == odd
    assert loaded.events[0].kind == 'k"ind\n' and loaded.events[0].id == "ev\n1"
    assert loaded.header.cwd == '/tmp/"q"\n'
    assert loaded.report.ok
    assert store.path("s").read_bytes().count(b"\n") == len(odd) + 2


def test_fork_report_names_parent_lines_before_the_fork_point(store: SessionStore) -> None:
    with store.create("p", cwd="/") as w:
        w.append(user("u1"))
    with store.path("p").open("ab") as f:
        f.write(b"garbage before\n")
    with store.open_for_append("p") as w:
        w.append(assistant("a1"))
    with store.path("p").open("ab") as f:
        f.write(b"garbage after\n")
    with store.create("f", cwd="/", parent=("p", "a1")) as w:
        w.append(user("f1"))
    report = store.load("f").report
    assert [(s.path.name, s.line) for s in report.skipped] == [("p.jsonl", 3)]
    assert report.describe() == f"skipped 1 malformed line (3) of {store.path('p')}"


def test_unknown_fields_on_an_entry_a_turn_and_a_block_are_ignored_not_refused(
    store: SessionStore,
) -> None:
    """A session written by a newer tether (extra fields on the entry, the turn, a content
    block, the usage) loads with those fields ignored, every turn kept and nothing reported."""
    with store.create("s", cwd="/") as w:
        w.append(user("u1", "hello"))
        w.append(rich_turn("a1"))
    path = store.path("s")
    lines = path.read_bytes().splitlines()
    widened: list[bytes] = [lines[0]]
    for raw in lines[1:]:
        entry = json.loads(raw)
        entry["written_by"] = "tether 9.0"
        turn = entry.get("turn", entry)
        turn["mood"] = "curious"
        for block in turn.get("content", []):
            block["future_field"] = {"nested": [1, 2]}
        if isinstance(turn.get("usage"), dict):
            turn["usage"]["quantum_tokens"] = 7
        widened.append(json.dumps(entry).encode())
    path.write_bytes(b"\n".join(widened) + b"\n")
    loaded = store.load("s")
    assert loaded.report.ok
    assert [t.id for t in loaded.turns] == ["u1", "a1"]
    assert loaded.turns[0].text == "hello"
    assert loaded.turns[1] == rich_turn("a1")


def test_the_index_stays_whole_when_threads_write_it_at_once(tmp_path: Path) -> None:
    """Two threads of one process writing the list index at once (a TUI listing sessions while
    a run ends) each leave a whole index: they once shared one temp name (`index.<pid>.tmp`),
    so one could rename the other's half-written file into place."""

    from tether.session.index import INDEX_NAME, write_index

    big = {f"s{i}": {"title": "x" * 2000, "n": i} for i in range(40)}
    errors: list[str] = []

    def writer(k: int) -> None:
        for j in range(60):
            write_index(tmp_path, {**big, "who": {"k": k, "j": j}})
            try:
                json.loads((tmp_path / INDEX_NAME).read_text(encoding="utf-8"))
            except (ValueError, OSError) as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == [INDEX_NAME]  # no temp file left
