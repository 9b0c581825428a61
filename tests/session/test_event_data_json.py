"""An event line's `data` of strings only (the `tool_call_started` record, one per tool call)
is written by orjson in one call, not passed through the generic encoder nor joined from a
literal per string (issue 38: fewer calls per turn); the bytes are the encoder's, and a
string literal's are `json.dumps`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.session import SessionStore
from tether.session import writer as writer_module
from tether.session.writer import _EVENT_DATA, _data_json  # pyright: ignore[reportPrivateUsage]

_json_scalars = st.none() | st.booleans() | st.integers() | st.text()


@given(st.dictionaries(st.text(), st.text() | _json_scalars, max_size=6))
def test_the_bytes_are_the_encoders(data: dict[str, Any]) -> None:
    try:
        expected = _EVENT_DATA.encode(data).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: neither way writes it
        with pytest.raises(UnicodeEncodeError):
            _data_json(data)
        return
    assert _data_json(data) == expected


class _CountingEncoder:
    def __init__(self) -> None:
        self.calls = 0

    def encode(self, o: Any) -> str:
        self.calls += 1
        return _EVENT_DATA.encode(o)


def test_a_started_record_skips_the_encoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = _CountingEncoder()
    monkeypatch.setattr(writer_module, "_EVENT_DATA", counting)
    writer = SessionStore(tmp_path).create(cwd=str(tmp_path))
    for k in range(20):
        writer.append_event("tool_call_started", {"tool_call_id": f"call_{k}", "name": "echo"})
    writer.append_event("usage", {"tokens": 3})
    writer.close()
    assert counting.calls == 1  # the usage note only (21 before)
    lines = writer.path.read_text().splitlines()
    assert lines[-2].endswith('"data":{"tool_call_id":"call_19","name":"echo"}}')


@given(st.text())
def test_a_string_literal_is_json_dumps_bytes(s: str) -> None:
    """`_jstr` (ids, kinds: every line has a few) gives `json.dumps(s, ensure_ascii=False)`'s
    bytes, through orjson; a lone surrogate raises as the `json` way does."""
    import json

    try:
        expected = json.dumps(s, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            writer_module._jstr(s)  # pyright: ignore[reportPrivateUsage]
        return
    assert writer_module._jstr(s) == expected  # pyright: ignore[reportPrivateUsage]


def test_a_started_record_is_one_call_not_a_literal_per_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's data is written in one orjson call: `_jstr` runs for the line's id and
    kind only (2 a record; 6 before: each key and value too)."""
    calls = [0]
    real = writer_module._jstr  # pyright: ignore[reportPrivateUsage]

    def counted(s: str) -> bytes:
        calls[0] += 1
        return real(s)

    monkeypatch.setattr(writer_module, "_jstr", counted)
    writer = SessionStore(tmp_path).create(cwd=str(tmp_path))
    for k in range(20):
        writer.append_event("tool_call_started", {"tool_call_id": f"call_{k}", "name": "echo"})
    writer.close()
    assert calls[0] == 40
    assert writer.path.read_text().splitlines()[-1].endswith(
        '"data":{"tool_call_id":"call_19","name":"echo"}}'
    )
