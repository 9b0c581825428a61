"""Resume and listing fast paths (issue 12): turn lines decoded once, the listing index."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.sessions import assistant, user
from tether.messages import TextBlock, ToolCallBlock, Turn, Usage, tool_result
from tether.session import SessionStore
from tether.session.index import INDEX_NAME
from tether.session.reader import parse_line


def _slow(raw: bytes) -> tuple[list[object], str]:
    """parse_line's general path only (the fast path is taken for `{"type":"turn","id":`)."""
    entries, why = parse_line(b" " + raw, Path("s.jsonl"), 2)
    return [(e.type, e.id, e.parent_id, e.ts_ms, e.record) for e in entries], why


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=120, deadline=None)
@given(
    tid=texts,
    parent=st.one_of(st.none(), texts),
    ts=st.one_of(st.integers(), st.booleans(), st.floats(allow_nan=False)),
    text=texts,
    args=st.dictionaries(texts, st.one_of(st.integers(), texts, st.none()), max_size=3),
)
def test_fast_path_decides_like_the_general_path(
    tid: str, parent: str | None, ts: object, text: str, args: dict[str, object]
) -> None:
    turn = {
        "id": tid,
        "role": "assistant",
        "content": [
            {"type": "text", "text": text},
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": args},
        ],
    }
    rec = {"type": "turn", "id": tid, "parent_id": parent, "ts_ms": ts, "turn": turn}
    raw = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode()
    fast, why_fast = parse_line(raw, Path("s.jsonl"), 2)
    slow, why_slow = _slow(raw)
    assert why_fast == why_slow
    assert [(e.type, e.id, e.parent_id, e.ts_ms) for e in fast] == [s[:4] for s in slow]  # type: ignore[index]
    if fast and fast[0].turn is not None:  # decoded in one pass: the same turn as the codec's
        from tether.messages import turn_from_dict

        assert fast[0].turn == turn_from_dict(turn)


def _round(k: int) -> tuple[Turn, Turn]:
    call = ToolCallBlock(id=f"c{k}", name="read", arguments={"path": f"f{k}", "n": 1.5})
    a = Turn(
        id=f"a{k}",
        role="assistant",
        content=(TextBlock(text="é ✓"), call),
        usage=Usage(input_tokens=10, output_tokens=2),
        stop_reason="tool_use",
    )
    return a, Turn(id=f"u{k}", role="user", content=(tool_result(call.id, "x\ny"),))


def test_loaded_turns_equal_the_written_ones(store: SessionStore) -> None:
    written: list[Turn] = [user("p0")]
    with store.create("s", cwd="/") as w:
        w.append(written[0])
        for k in range(20):
            for t in _round(k):
                w.append(t)
                written.append(t)
    loaded = store.load("s")
    assert loaded.turns == tuple(written) and loaded.report.ok


def test_list_uses_the_index_and_rebuilds_stale_rows(store: SessionStore) -> None:
    with store.create("a", cwd="/a") as w:
        w.append(user("u1", "first task"))
    with store.create("b", cwd="/b") as w:
        w.append(user("u2", "second task"))
    first = store.list()
    index = store.root / INDEX_NAME
    assert index.exists()
    assert store.list() == first  # warm: from the index
    # A row is used only while its file's size and mtime are unchanged: fake a stale row that
    # would be visible if it were used, then append to the file.
    doc = json.loads(index.read_text())
    doc["rows"]["a"]["preview"] = "FROM THE INDEX"
    index.write_text(json.dumps(doc))
    assert {r.id: r.preview for r in store.list()}["a"] == "FROM THE INDEX"
    with store.open_for_append("a") as w:
        w.append(assistant("a1"))
    rows = {r.id: r for r in store.list()}
    assert rows["a"].preview == "first task" and rows["a"].turn_count == 2
    # A deleted session leaves the index; a broken index is ignored and rewritten.
    store.delete("b")
    index.write_bytes(b"\x00not json")
    assert [r.id for r in store.list()] == ["a"]
    assert set(json.loads(index.read_text())["rows"]) == {"a"}


def test_list_works_in_a_read_only_folder(store: SessionStore) -> None:
    with store.create("a", cwd="/a") as w:
        w.append(user("u1", "task"))
    os.chmod(store.root, 0o555)
    try:
        rows = store.list()
    finally:
        os.chmod(store.root, 0o755)
    assert [r.preview for r in rows] == ["task"]


def test_an_id_stamp_is_formatted_once_a_second_and_follows_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`new_id` formats its time stamp when the second changes, not for every id (a session
    line's event id is one per tool call)."""
    from tether.session import layout

    now = [1_765_000_000.2]
    formatted: list[float] = []
    real_gmtime = time.gmtime

    def gmtime(secs: float | None = None) -> time.struct_time:
        formatted.append(now[0])
        return real_gmtime(secs)

    monkeypatch.setattr(layout.time, "time", lambda: now[0])
    monkeypatch.setattr(layout.time, "gmtime", gmtime)
    monkeypatch.setattr(layout, "_stamp", (-1, ""))
    ids = [layout.new_id() for _ in range(5)]
    now[0] += 1.0
    later = layout.new_id()
    assert len(formatted) == 2
    assert {i[:15] for i in ids} == {time.strftime("%Y%m%d-%H%M%S", real_gmtime(1_765_000_000))}
    assert later[:15] == time.strftime("%Y%m%d-%H%M%S", real_gmtime(1_765_000_001))
    assert len(set(ids)) == 5 and all(layout.validate_session_id(i) == i for i in ids)
