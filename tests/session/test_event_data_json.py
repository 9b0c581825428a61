"""An event line's `data` of strings only (the `tool_call_started` record, one per tool call)
is joined from JSON string literals, not passed through the generic encoder (issue 38: fewer
calls per turn); the bytes are the encoder's."""

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
