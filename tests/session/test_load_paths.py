"""The loader's one-pass decode of a writer's turn lines (`TurnEntry`) against its general path.

`scan_bytes` decodes a line starting `{"type":"turn","id":` straight into its typed turn
(`reader.turn_line_decoder`); any line that decoder refuses goes through `parse_line`'s general
path (`json.loads`, envelope checks, salvage, the turn codec). The two must load the same
session: the tests below inject a decoder that refuses every line, or a drawn set of lines, and
compare whole `LoadedSession` values.
"""

from __future__ import annotations

import base64
import gc
import json
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.sessions import turn_line
from tether.messages import (
    CompactSummaryBlock,
    ImageBlock,
    Provenance,
    RedactedThinkingBlock,
    SearchHit,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.session import SessionStore, reader
from tether.session.model import SkippedLine
from tether.session.reader import RawEntry, TurnEntry, scan_bytes

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
ids = st.text("abcxyz019_-", min_size=1, max_size=6)


@st.composite
def turns(draw: st.DrawFn, k: int) -> Turn:
    """A turn of any kind the writer stores: text, thinking, tool rounds, images (inline, to be
    stored as references), compaction markers, server tools, usage and provenance."""
    kind = draw(
        st.sampled_from(["user", "assistant", "round", "result", "image", "marker", "server"])
    )
    tid = f"t{k}_{draw(ids)}"
    if kind == "user":
        return text_turn(tid, "user", draw(texts))
    if kind == "assistant":
        blocks = (
            ThinkingBlock(text=draw(texts), signature=draw(st.none() | texts)),
            RedactedThinkingBlock(data="opaque"),
            TextBlock(text=draw(texts)),
        )
        return Turn(
            id=tid,
            role="assistant",
            content=blocks[draw(st.integers(0, 2)) :],
            usage=draw(st.none() | st.builds(Usage, input_tokens=st.integers(0, 10**12))),
            provenance=Provenance(provider="p", api="anthropic", model=draw(texts)),
            stop_reason=draw(st.sampled_from([None, "end_turn", "tool_use", "interrupted"])),
        )
    if kind == "round":
        args = draw(st.dictionaries(texts, st.none() | st.integers() | st.floats() | texts))
        call = ToolCallBlock(id=f"c{k}", name="read", arguments=args)
        return Turn(id=tid, role="assistant", content=(call,), stop_reason="tool_use")
    if kind == "result":
        block = tool_result(f"c{k}", draw(texts), is_error=draw(st.booleans()))
        return Turn(id=tid, role="user", content=(block,))
    if kind == "image":
        image = ImageBlock(media_type="image/png", data=PNG)
        inner = tool_result(f"c{k}", "shot")
        inner = type(inner)(tool_call_id=inner.tool_call_id, content=(*inner.content, image))
        return Turn(id=tid, role="user", content=draw(st.sampled_from([(image,), (inner,)])))
    if kind == "marker":
        block = CompactSummaryBlock(summary=draw(texts), replaces_turn_ids=("t0_a", "t1_b"))
        return Turn(id=tid, role="user", content=(block,))
    hit = SearchHit(url="https://example.org", title=draw(texts))
    server = ServerToolBlock(
        name="web_search", producer="anthropic", id=f"s{k}", results=(hit,), raw=({"a": 1},)
    )
    return Turn(id=tid, role="assistant", content=(server, TextBlock(text="found")))


def damage(data: st.DataObject, lines: list[bytes], k: int) -> list[bytes]:
    """Lines the writer never writes: garbage, a copy of an earlier line (a duplicate id), an
    unknown entry type, a turn with an unknown field, a turn whose id differs from its entry's,
    a turn line the codec refuses, two entries fused after a torn prefix."""
    kind = data.draw(
        st.sampled_from(["garbage", "copy", "unknown", "field", "ids", "bad", "fused"])
    )
    prev = lines[data.draw(st.integers(0, len(lines) - 1))] if lines else b""
    if kind == "garbage":
        return [data.draw(st.sampled_from([b"{not json", b"\x00\x00", b"[1,2]", b"\xff\xfe"]))]
    if kind == "copy" and prev:
        return [prev]
    if kind == "unknown":
        rec = {"type": "future", "id": f"f{k}", "parent_id": None, "ts_ms": 5, "x": [1]}
        return [json.dumps(rec).encode()]
    turn = text_turn(f"d{k}", "user", "odd")
    line = turn_line(turn, None)[:-1]
    if kind == "field":
        return [line.replace(b'"role":"user"', b'"role":"user","mood":"calm"')]
    if kind == "ids":
        return [line.replace(b'"turn":{"id":"d', b'"turn":{"id":"e')]
    if kind == "bad":
        return [line.replace(b'"role":"user"', b'"role":"robot"')]
    return [line[:30] + line]


@contextmanager
def refusing(lines: Callable[[bytes], bool]) -> Generator[None, None, None]:
    """The one-pass decoder refuses every line `lines` picks (an injected fault: those lines
    take the general path)."""
    real = reader.turn_line_decoder()

    def decode(raw: bytes) -> Any:
        if lines(raw):
            raise ValueError("refused by the test")
        return real(raw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reader, "turn_line_decoder", lambda: decode)
        yield


def write(root: Path, data: st.DataObject) -> str:
    """A session written by the writer with damage lines between its entries; its id."""
    store = SessionStore(root)
    w = store.create(cwd="/w")
    for k in range(data.draw(st.integers(1, 10))):
        if data.draw(st.integers(0, 3)) == 0:
            w.append_event("note", {"k": k, "s": data.draw(texts)})
        w.append(data.draw(turns(k)))
        if data.draw(st.integers(0, 4)) == 0:
            lines = w.path.read_bytes().split(b"\n")[1:-1]
            with w.path.open("ab") as f:
                f.write(b"\n".join(damage(data, lines, k)) + b"\n")
    w.close()
    if data.draw(st.booleans()):  # a torn last line, as a crash mid-write leaves it
        with w.path.open("ab") as f:
            f.write(turn_line(text_turn("torn", "user", "cut"), None)[:25])
    return w.id


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_fast_and_the_general_path_load_the_same_session(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    root = tmp_path_factory.mktemp("sessions")
    sid = write(root, data)
    refused = data.draw(st.sets(st.integers(0, 40)))
    store = SessionStore(root)
    fast = store.load(sid)
    with refusing(lambda raw: True):
        general = store.load(sid)
    with refusing(lambda raw: hash(raw) % 41 in refused):
        mixed = store.load(sid)
    assert fast == general == mixed


def _session(store: SessionStore, n: int) -> str:
    with store.create(cwd="/w") as w:
        for k in range(n):
            w.append(text_turn(f"u{k}", "user", f"q{k}"))
            w.append(Turn(id=f"a{k}", role="assistant", content=(TextBlock(text="a"),)))
        return w.id


def test_a_writers_turn_lines_become_turn_entries_without_a_raw_entry(
    store: SessionStore,
) -> None:
    sid = _session(store, 3)
    path = store.path(sid)
    scan = scan_bytes(path.read_bytes(), path)
    assert len(scan.items) == 6 and all(isinstance(i, TurnEntry) for i in scan.items)
    first = scan.items[0]
    assert isinstance(first, TurnEntry)
    assert (first.path, first.line, first.id, first.salvaged) == (path, 2, "u0", False)
    assert first.raw == path.read_bytes().split(b"\n")[1]


def test_a_refused_turn_line_takes_the_general_path(store: SessionStore) -> None:
    sid = _session(store, 2)
    path = store.path(sid)
    with refusing(lambda raw: b'"id":"a0"' in raw):
        scan = scan_bytes(path.read_bytes(), path)
    kinds = [(isinstance(i, RawEntry), i.id) for i in scan.items if not isinstance(i, SkippedLine)]
    assert kinds == [(False, "u0"), (True, "a0"), (False, "u1"), (False, "a1")]


def test_loading_runs_no_gc_collection(store: SessionStore) -> None:
    """The whole load, image pass included, runs with the cyclic GC paused: with it back on,
    the image pass's first allocation scanned every object the load had made."""
    sid = _session(store, 800)
    runs: list[str] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        runs.append(phase)

    gc.collect()
    gc.callbacks.append(seen)
    try:
        loaded = store.load(sid)
    finally:
        gc.callbacks.remove(seen)
    assert len(loaded.turns) == 1600
    assert runs == []


def test_restore_returns_the_same_tuple_when_no_turn_holds_a_reference(
    store: SessionStore,
) -> None:
    from tether.session.images import restore

    sid = _session(store, 3)
    loaded = store.load(sid)
    assert restore(loaded.turns, store.root) is loaded.turns


def test_the_latest_session_is_found_from_headers_without_decoding_turns(
    store: SessionStore, tmp_path: Path
) -> None:
    """`tether run --continue` names the session from headers alone: the listing decoded the
    whole file of a row it had not indexed at its size, then the resume decoded it again."""
    import os

    here, there = tmp_path / "here", tmp_path / "there"
    assert store.latest(here) is None
    for sid, cwd in (("a1", here), ("b1", there), ("a2", here)):
        with store.create(sid, cwd=str(cwd)) as w:
            w.append(text_turn(f"{sid}u", "user", "q"))
    store.create("child", cwd=str(here), caller=("a2", "c1", ("main", "task:c1"))).close()
    os.utime(store.path("a2"), (1, 1))
    store.list()  # indexed; the newest file then grows, as a run appends to it
    with store.open_for_append("a1") as w:
        w.append(text_turn("a1v", "user", "more"))
    with refusing(lambda raw: pytest.fail("a turn line was decoded")):
        assert store.latest(here) == "a1"
        assert store.latest(there) == "b1"
    rows = [r for r in store.list() if r.cwd == str(here) and r.caller is None]
    assert max(rows, key=lambda r: r.modified_ms).id == "a1"  # what the listing names
