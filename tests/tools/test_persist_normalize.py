"""The pure output passes (`tether.tools.exec.normalize`): `\\r` collapse, ANSI, line cuts, binary
test, the byte-stable stub (snapshots), head + tail; Hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.tools.exec.normalize import (
    PERSISTED_OUTPUT_CLOSE,
    PERSISTED_OUTPUT_OPEN,
    Normalized,
    binary_notice,
    collapse_overwrites,
    cut_line,
    cut_long_lines,
    head_tail,
    looks_binary,
    normalize,
    raw_bytes,
    render_stub,
    storable,
    utf8_prefix,
    utf8_suffix,
)

# ---- \r and ANSI -------------------------------------------------------------------------


def test_carriage_return_keeps_the_last_state_and_crlf_is_a_newline() -> None:
    assert collapse_overwrites("a\r\nb\r\n") == "a\nb\n"
    assert collapse_overwrites(" 1%\r 50%\r100%\nnext") == "100%\nnext"
    assert collapse_overwrites("done\r") == "done"  # a trailing \r does not erase the line
    assert collapse_overwrites("\r\r") == ""
    assert collapse_overwrites("plain\ntext") == "plain\ntext"


def test_ansi_erase_line_overwrites_and_other_escapes_are_dropped() -> None:
    assert collapse_overwrites("old\x1b[2Knew\n") == "new\n"
    assert collapse_overwrites("10%\r\x1b[K20%") == "20%"
    assert collapse_overwrites("\x1b[31mred\x1b[0m ok") == "red ok"
    assert collapse_overwrites("\x1b]0;title\x07text") == "text"
    # a sequence hidden inside another one does not survive as a new escape
    assert collapse_overwrites("\x1b\x1b[31m[31m") == "[31m"


def test_cut_line_fits_the_cap_with_its_note() -> None:
    line = "x" * 5000
    out = cut_line(line, 2000)
    assert len(out) == 2000
    assert out.endswith(f"… [{5000 - out.index('…')} chars cut]")
    assert cut_line("short", 2000) == "short"
    with pytest.raises(ValueError):
        cut_line(line, 10)
    text, n = cut_long_lines("ok\n" + line + "\n" + line, 2000)
    assert n == 2 and text.startswith("ok\n") and max(map(len, text.split("\n"))) == 2000


def test_binary_detection() -> None:
    assert looks_binary("PNG\x00\x00IHDR")
    assert looks_binary("\ufffd\ufffd\x01\x02abc")
    assert looks_binary("\udc89\udc50\udc4e\udc47")  # surrogateescape-decoded bytes
    assert not looks_binary("naïve café ✓ \x1b[0m\ttabs\r\n")
    assert not looks_binary("one bad \ufffd char in a long enough line of text")
    assert not looks_binary("")
    n = normalize("abc\x00def")
    assert n.binary and n.text == ""


def test_storable_and_raw_bytes() -> None:
    decoded = b"ok \xff\xfe".decode("utf-8", errors="surrogateescape")
    assert storable(decoded) == "ok \ufffd\ufffd"
    assert raw_bytes(decoded) == b"ok \xff\xfe"
    assert storable("fine") == "fine"


# ---- stub snapshots ----------------------------------------------------------------------

PATH = "/data/sessions/s1/tool-results/call_1.txt"


def test_stub_snapshot_ascii() -> None:
    text = "".join(c * 999 + "\n" for c in "ABCDEF")  # 6 lines of 1000 bytes
    expected = (
        '<persisted-output size_bytes="6000" path="/data/sessions/s1/tool-results/call_1.txt">\n'
        + "A" * 999
        + "\n"
        + "B" * 999
        + "\n"
        + "… [3000 bytes not shown] …\n"
        + "F" * 999
        + "\n"
        + "</persisted-output>\n"
        + "The full output (6000 bytes, 6 lines) is saved at "
        "/data/sessions/s1/tool-results/call_1.txt; read it with the read tool "
        "(path, offset, limit)."
    )
    stub = render_stub(text, path=PATH, size_bytes=6000, lines=6)
    assert stub == expected
    assert stub.encode() == render_stub(text, path=PATH, size_bytes=6000, lines=6).encode()
    assert stub.startswith(PERSISTED_OUTPUT_OPEN) and PERSISTED_OUTPUT_CLOSE in stub


def test_stub_snapshot_multibyte_cut_at_char_boundaries() -> None:
    text = "€" * 2000  # 3 bytes each, one line
    expected = (
        '<persisted-output size_bytes="6000" path="/p/&quot;q&quot;.txt">\n'
        + "€" * 682
        + "\n… [2931 bytes not shown] …\n"
        + "€" * 341
        + "\n</persisted-output>\n"
        + 'The full output (6000 bytes, 1 lines) is saved at /p/"q".txt; read it with the read '
        "tool (path, offset, limit)."
    )
    assert render_stub(text, path='/p/"q".txt', size_bytes=6000, lines=1) == expected


@given(st.text(min_size=0, max_size=3000), st.integers(0, 2100))
def test_utf8_prefix_and_suffix_fit_and_are_affixes(text: str, n: int) -> None:
    text = storable(text)
    head, tail = utf8_prefix(text, n), utf8_suffix(text, n)
    assert len(head.encode()) <= n or head == text
    assert len(tail.encode()) <= n or tail == text
    assert text.startswith(head) and text.endswith(tail)


def test_head_tail_fits_and_says_what_was_cut() -> None:
    text = "".join(f"line {i}\n" for i in range(20_000))
    out = head_tail(text, 5000, "no session")
    assert len(out) <= 5000
    assert out.startswith("line 0\n") and out.endswith("line 19999\n")
    assert "chars cut: no session" in out
    assert head_tail("short", 5000, "x") == "short"
    with pytest.raises(ValueError):
        head_tail(text, 100, "x")


def test_binary_notice_names_size_hash_and_place() -> None:
    note = binary_notice(7, "ab" * 32, "saved to /x.bin")
    assert "7 bytes" in note and "ab" * 32 in note and "/x.bin" in note


# ---- properties --------------------------------------------------------------------------

_chunks = st.sampled_from(
    [
        "a",
        "é",
        "€",
        "\n",
        "\r",
        "\r\n",
        "\x1b[2K",
        "\x1b[K",
        "\x1b[31m",
        "\x1b",
        "\t",
        " ",
        "\ufffd",
        "\udcff",
        "\x01",
        "x" * 50,
        "progress 10%",
    ]
)
_outputs = st.one_of(
    st.text(max_size=400),
    st.lists(_chunks, max_size=120).map("".join),
)


@settings(max_examples=300)
@given(_outputs, st.integers(40, 120))
def test_normalize_is_idempotent(text: str, cap: int) -> None:
    once = normalize(text, max_line_chars=cap)
    twice = normalize(once.text, max_line_chars=cap)
    assert twice.text == once.text
    assert not twice.binary or once.binary


ESCAPED_CONTROLS = frozenset(
    [*map(chr, range(0x01, 0x07)), *map(chr, range(0x0E, 0x1B)), *map(chr, range(0x1C, 0x20)), "\x7f"]
)
"""Control characters `render_controls` shows as `\\xNN` text (4 characters for 1)."""


@settings(max_examples=300)
@given(_outputs, st.integers(40, 120))
def test_normalized_output_is_valid_utf8_short_lines_and_no_longer(text: str, cap: int) -> None:
    out = normalize(text, max_line_chars=cap).text
    out.encode("utf-8")  # never raises: surrogates are gone
    assert "\r" not in out and "\x1b" not in out and "\x00" not in out
    assert all(len(line) <= cap for line in out.split("\n"))
    # notes never make it longer (binary → "" here); only an escaped control character
    # (`\x06` → the 4 characters `\\x06`) grows, by 3
    escaped = sum(1 for c in text if c in ESCAPED_CONTROLS)
    assert len(out) <= len(text) + 3 * escaped


@given(
    st.lists(
        st.text(alphabet="abc% 0123456789|#", min_size=1, max_size=30), min_size=1, max_size=20
    ),
    st.booleans(),
)
def test_collapse_keeps_the_final_state(states: list[str], trailing_cr: bool) -> None:
    line = "\r".join(states) + ("\r" if trailing_cr else "")
    assert collapse_overwrites(f"{line}\nafter") == f"{states[-1]}\nafter"
    assert collapse_overwrites(line.replace("\r", "\r\x1b[K")) == states[-1]


def test_an_unchanged_output_is_tested_for_binary_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second binary test (on the normalized text) runs only when normalizing changed
    the text: an ordinary output is tested once, a changed one twice."""
    import tether.tools.exec.normalize as module

    tested: list[str] = []
    real = module.looks_binary

    def counting(text: str, *, ratio: float = module.BINARY_RATIO) -> bool:
        tested.append(text)
        return real(text, ratio=ratio)

    monkeypatch.setattr(module, "looks_binary", counting)
    plain = "ok\n" * 500
    assert normalize(plain) == Normalized(text=plain, binary=False, lossy=False)
    assert len(tested) == 1
    long = "y" * 5_000
    assert normalize(long).lossy and len(tested) == 3
