"""`render_controls` (every tool output passes it) tests for control characters with one C pass
over the text's UTF-8 bytes, not a regex search of the text (issue 38: counted), and renders
every text as the regex version did (Hypothesis against a copy of it)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.tools.exec import normalize as normalize_module
from tether.tools.exec.normalize import normalize, render_controls

_OTHER = re.compile(r"[\x00-\x06\x0e-\x1a\x1c-\x1f\x7f]")
_ANY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _backspaces(line: str) -> str:
    cells: list[str] = []
    col = 0
    for ch in line:
        if ch == "\b":
            col = max(col - 1, 0)
        elif col < len(cells):
            cells[col] = ch
            col += 1
        else:
            cells.append(ch)
            col += 1
    return "".join(cells)


def _reference(text: str) -> str:
    """`render_controls` as it was (the regex test)."""
    if not _ANY.search(text):
        return text
    text = text.replace("\a", "").replace("\f", "\n").replace("\v", "\n")
    text = _OTHER.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if "\b" in text:
        text = "\n".join(_backspaces(x) if "\b" in x else x for x in text.split("\n"))
    return text


controlish = st.text(
    alphabet=st.one_of(
        st.sampled_from([chr(c) for c in [*range(0x20), 0x7F, 0x80, 0x9F, 0xFFFD, 0xD800, 0xDC80]]),
        st.characters(),
    )
)


@given(controlish)
def test_the_output_is_the_regex_versions(text: str) -> None:
    out = render_controls(text)
    assert out == _reference(text)
    if out == text:
        assert out is text  # nothing to render: the text itself


class _CountingPattern:
    def __init__(self) -> None:
        self.searches = 0

    def search(self, text: str) -> Any:
        self.searches += 1
        return _ANY.search(text)


def test_an_output_is_checked_without_a_regex_search(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingPattern()
    monkeypatch.setattr(normalize_module, "_ANY_CONTROL", counting, raising=False)
    row = "x" * 63 + "\n"
    for k in range(50):
        assert normalize(f"turn {k}\n" + row * 32).text.startswith(f"turn {k}\n")
    assert counting.searches == 0  # 50 before
