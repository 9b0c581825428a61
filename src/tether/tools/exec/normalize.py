"""Pure text passes applied to every tool output before it is sized and stored.

Owns: rendering `\\r` overwrites the way a terminal would (`collapse_overwrites`), dropping ANSI
escape sequences, cutting over-long lines (`cut_long_lines`), replacing characters that cannot be
stored as UTF-8 (lone surrogates from `surrogateescape` decoding), the binary test
(`looks_binary`), the `<persisted-output>` stub (`render_stub`) and head+tail truncation
(`head_tail`). No I/O, no clocks; inputs are never mutated. Everything here is deterministic:
the same input gives the same bytes.
Does not own: writing files or deciding when to persist (`tether.tools.exec.persist`).

The stub's tags are `tether.messages.PERSISTED_OUTPUT_OPEN` / `_CLOSE` (re-exported here), so
the pure wire passes can recognise stubs without importing tools.

Control characters other than tab and newline never reach the wire (`render_controls`): `\\b`
is rendered as a terminal does (the cursor steps back, the next character overwrites), `\\f` and
`\\v` become newlines, `\\a` (bell) is dropped, and any other C0 control or DEL is shown
escaped as `\\xNN` text.

Rule sources: one listing overflowing the context (so the size gate counts characters, not
lines), and `tail -100` of a progress-bar log returning 4.4 MB (so `\\r` is rendered first, the
text after the last `\\r` of each line kept, and each line capped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tether.messages import PERSISTED_OUTPUT_CLOSE, PERSISTED_OUTPUT_OPEN

__all__ = [
    "BINARY_RATIO",
    "DEFAULT_MAX_LINE_CHARS",
    "PERSISTED_OUTPUT_CLOSE",
    "PERSISTED_OUTPUT_OPEN",
    "PREVIEW_HEAD_BYTES",
    "PREVIEW_TAIL_BYTES",
    "Normalized",
    "OutputCut",
    "binary_notice",
    "collapse_overwrites",
    "cut_line",
    "cut_long_lines",
    "cut_note",
    "cut_sentence",
    "find_output_cut",
    "head_tail",
    "looks_binary",
    "normalize",
    "raw_bytes",
    "render_controls",
    "render_stub",
    "storable",
    "utf8_prefix",
    "utf8_suffix",
]

DEFAULT_MAX_LINE_CHARS = 2000
"""A longer line is cut to this many characters, its cut note included."""


PREVIEW_HEAD_BYTES = 2048
"""UTF-8 bytes of the output's start shown in a stub."""
PREVIEW_TAIL_BYTES = 1024
"""UTF-8 bytes of the output's end shown in a stub (the stub shows head + tail excerpts)."""

BINARY_RATIO = 0.3
"""Text whose share of undecodable/control characters exceeds this is treated as binary."""

# CSI sequences (ESC [ params intermediates final) and OSC sequences (ESC ] ... BEL | ESC \).
_ERASE_LINE = re.compile(r"\x1b\[[0-2]?K")
_CSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Bytes that do not occur in text: C0 controls other than \b \t \n \v \f \r ESC, and DEL.
_CONTROL_BYTES = bytes([*range(0x00, 0x08), *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F])


def collapse_overwrites(text: str) -> str:
    """Render carriage returns and ANSI escapes the way a terminal leaves the screen.

    `\\r\\n` is a newline; within a line, a bare `\\r` or an erase-line sequence (`ESC[K`,
    `ESC[0K`, `ESC[1K`, `ESC[2K`) starts an overwrite, and the line keeps the text after the
    last one (its last non-empty segment, so `done\\r` at the end of a line keeps `done`).
    Other CSI/OSC escape sequences (colours, cursor moves, titles) and stray ESC characters are
    dropped.

    Args:
        text: the output as decoded text.

    Returns:
        The rendered text (never longer than `text`). Idempotent.
    """
    if "\r" not in text and "\x1b" not in text:
        return text
    text = text.replace("\r\n", "\n")
    if "\x1b" in text:
        text = _ERASE_LINE.sub("\r", text)
        text = _OSC.sub("", _CSI.sub("", text)).replace("\x1b", "")
    if "\r" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            segments = [s for s in line.split("\r") if s]
            lines[i] = segments[-1] if segments else ""
    return "\n".join(lines)


_OTHER_CONTROLS = re.compile(r"[\x00-\x06\x0e-\x1a\x1c-\x1f\x7f]")
_ANY_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
"""The characters `render_controls` changes, as the bytes UTF-8 writes them (one byte each,
never inside a longer character's bytes)."""


def _has_controls(text: str) -> bool:
    """Whether `text` holds a character of `_ANY_CONTROL_BYTES`: its UTF-8 bytes (lone
    surrogates passed through) with those deleted are shorter; a C pass over the bytes, 4x
    faster than a regex search of the text (every tool output is checked)."""
    data = text.encode("utf-8", "surrogatepass")
    return len(data.translate(None, _ANY_CONTROL_BYTES)) != len(data)


def _backspaces(line: str) -> str:
    """One line with `\\b` rendered: the cursor steps back one column (not past the start)
    and the next character overwrites the one there."""
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


def render_controls(text: str) -> str:
    """Render or escape the C0 control characters a terminal would not print (ESC and `\\r`
    are `collapse_overwrites`' job; tab and newline stay).

    `\\b` steps back and lets the next character overwrite (`_\\bX` → `X`), `\\f` and `\\v`
    become newlines, `\\a` is dropped, any other C0 control or DEL becomes the text `\\xNN`.
    Returns `text` itself when it holds none. Idempotent.
    """
    if not _has_controls(text):
        return text
    text = text.replace("\a", "").replace("\f", "\n").replace("\v", "\n")
    text = _OTHER_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if "\b" in text:
        text = "\n".join(_backspaces(x) if "\b" in x else x for x in text.split("\n"))
    return text


def cut_note(cut_chars: int) -> str:
    """The note ending a cut line: `… [N chars cut]`."""
    return f"… [{cut_chars} chars cut]"


def cut_line(line: str, max_chars: int) -> str:
    """`line` cut so that, with its cut note, it is at most `max_chars` characters.

    Raises:
        ValueError: `max_chars` is below 40 (no room for the note and some text).
    """
    if len(line) <= max_chars:
        return line
    if max_chars < 40:
        raise ValueError(f"max_chars must be at least 40, got {max_chars}")
    keep = max_chars - len(cut_note(len(line)))
    return line[:keep] + cut_note(len(line) - keep)


def _may_have_long_line(text: str, max_chars: int) -> bool:
    """False only when no line is longer than `max_chars`: a longer line would contain one of
    the aligned blocks of `(max_chars + 1) // 2` characters whole, without a newline."""
    block = (max_chars + 1) // 2
    find = text.find
    return any(find("\n", k, k + block) == -1 for k in range(0, len(text) - block + 1, block))


def cut_long_lines(text: str, max_chars: int = DEFAULT_MAX_LINE_CHARS) -> tuple[str, int]:
    """Cut every line longer than `max_chars` characters (see `cut_line`).

    Returns:
        (the text, how many lines were cut). Idempotent.
    """
    if len(text) <= max_chars or not _may_have_long_line(text, max_chars):
        return text, 0
    lines = text.split("\n")
    cut = 0
    for i, line in enumerate(lines):
        if len(line) > max_chars:
            lines[i] = cut_line(line, max_chars)
            cut += 1
    if not cut:
        return text, 0
    return "\n".join(lines), cut


def storable(text: str) -> str:
    """`text` with lone surrogates (undecodable bytes kept by `surrogateescape`) replaced by
    U+FFFD, so that it encodes as UTF-8. Returns `text` itself when nothing changes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def looks_binary(text: str, *, ratio: float = BINARY_RATIO) -> bool:
    """True when decoded text is really binary data.

    Binary: it contains a NUL, or more than `ratio` of its characters are U+FFFD (bytes that
    were not UTF-8), lone surrogates, or control characters that text does not use (C0 other
    than tab, newlines, form feed, backspace and ESC; DEL). Checked on the first 64 Ki chars.
    """
    if "\x00" in text:
        return True
    sample = text[:65536]
    if not sample:
        return False
    data = sample.encode("utf-8", errors="surrogatepass")
    bad = len(data) - len(data.translate(None, _CONTROL_BYTES))  # never inside multi-byte chars
    if not sample.isascii():
        bad += sample.count("\ufffd")
        if storable(sample) is not sample:
            bad += len(_SURROGATE.findall(sample))
    return bad > ratio * len(sample)


def raw_bytes(text: str) -> bytes:
    """The bytes a decoded output came from: UTF-8, with `surrogateescape` bytes restored."""
    return text.encode("utf-8", errors="surrogateescape")


@dataclass(frozen=True, slots=True)
class Normalized:
    """The result of `normalize`.

    Attributes:
        text: the normalized text (valid UTF-8, lines capped), or "" when `binary`.
        binary: the input looked binary (see `looks_binary`); `text` is then empty and the
            caller shows a notice instead.
        lossy: characters were cut from long lines (the raw output holds more than `text`).
    """

    text: str
    binary: bool
    lossy: bool


def normalize(text: str, *, max_line_chars: int = DEFAULT_MAX_LINE_CHARS) -> Normalized:
    """Collapse overwrites, make storable, test for binary, render control characters, cut
    long lines.

    The binary test runs before the controls are rendered and again on the normalized text
    (plus the NUL check on the input), so applying `normalize` to its own output gives the
    same output.

    Args:
        text: one tool output.
        max_line_chars: the per-line cap in characters (at least 40).

    Returns:
        A `Normalized`.

    Raises:
        ValueError: `max_line_chars` below 40.
    """
    if max_line_chars < 40:
        raise ValueError(f"max_line_chars must be at least 40, got {max_line_chars}")
    had_nul = "\x00" in text
    collapsed = storable(collapse_overwrites(text))
    if had_nul or looks_binary(collapsed):
        return Normalized(text="", binary=True, lossy=True)
    out, cut = cut_long_lines(render_controls(collapsed), max_line_chars)
    if out is not collapsed and looks_binary(out):  # unchanged: tested just above
        return Normalized(text="", binary=True, lossy=True)
    return Normalized(text=out, binary=False, lossy=cut > 0)


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` whose UTF-8 encoding fits in `max_bytes`, ending after a
    newline when one lies in the second half of that span."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    head = data[:max_bytes].decode("utf-8", errors="ignore")
    nl = head.rfind("\n")
    return head[: nl + 1] if nl >= len(head) // 2 else head


def utf8_suffix(text: str, max_bytes: int) -> str:
    """The longest suffix of `text` whose UTF-8 encoding fits in `max_bytes`, starting after a
    newline when one lies in the first half of that span."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    tail = data[len(data) - max_bytes :].decode("utf-8", errors="ignore")
    nl = tail.find("\n")
    return tail[nl + 1 :] if 0 <= nl < len(tail) // 2 else tail


_OUTPUT_CUT = re.compile(r"\n… \[(\d+) bytes of output cut; (\d+) bytes in all\] …\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputCut:
    """Where a tool cut its output (`tether.sandbox.proc.output_cut_note`), measured in the kept
    UTF-8 bytes.

    Attributes:
        produced_bytes: what the command produced in all.
        cut_bytes: what was dropped at the cut.
        kept_head_bytes: the kept bytes before the note (the cut is right after them).
        line: the 1-based line of the kept text where the note stands.
    """

    produced_bytes: int
    cut_bytes: int
    kept_head_bytes: int
    line: int


def find_output_cut(raw: str) -> OutputCut | None:
    """The first `tether.sandbox.proc.output_cut_note` in `raw`, or None when the output was not
    cut."""
    m = _OUTPUT_CUT.search(raw)
    if m is None:
        return None
    head = raw[: m.start()]
    return OutputCut(
        produced_bytes=int(m.group(2)),
        cut_bytes=int(m.group(1)),
        kept_head_bytes=len(raw_bytes(head)),
        line=head.count("\n") + 2,
    )


def cut_sentence(cut: OutputCut, size_bytes: int) -> str:
    """One sentence saying what was produced, kept, and where the cut is."""
    return (
        f"The command produced {cut.produced_bytes} bytes; only {size_bytes} bytes were kept: "
        f"the first {cut.kept_head_bytes} bytes, a cut note at line {cut.line}, then the last "
        f"bytes ({cut.cut_bytes} bytes in between were dropped and are not saved anywhere)."
    )


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def render_stub(
    text: str, *, path: str, size_bytes: int, lines: int, cut: OutputCut | None = None
) -> str:
    """The byte-stable stub that replaces a persisted output on the wire and in the session.

    Shape::

        <persisted-output size_bytes="N" path="P">
        first ≤2 KiB of the normalized output
        … [K bytes not shown] …
        last ≤1 KiB
        </persisted-output>
        The full output (N bytes, L lines) is saved at P; read it with the read tool (path, offset, limit).

    Args:
        text: the normalized output (the preview is cut from it at character boundaries).
        path: where the raw output was saved (absolute).
        size_bytes: the saved file's size in bytes.
        lines: the saved file's line count.
        cut: where the tool cut the output before it was saved (`find_output_cut`); the last
            line then says what was produced and kept instead of "the full output".

    Returns:
        The stub; a function of its arguments only (no clock, no random id).
    """
    head = utf8_prefix(text, PREVIEW_HEAD_BYTES)
    rest = text[len(head) :]
    tail = utf8_suffix(rest, PREVIEW_TAIL_BYTES) if rest else ""
    hidden = len(rest.encode("utf-8")) - len(tail.encode("utf-8"))
    parts = [f'{PERSISTED_OUTPUT_OPEN} size_bytes="{size_bytes}" path="{_attr(path)}">\n', head]
    if hidden > 0:
        parts.append(f"{'' if head.endswith(chr(10)) else chr(10)}… [{hidden} bytes not shown] …\n")
    parts.append(tail)
    body = "".join(parts)
    if not body.endswith("\n"):
        body += "\n"
    if cut is not None:
        return (
            f"{body}{PERSISTED_OUTPUT_CLOSE}\n{cut_sentence(cut, size_bytes)} The kept output "
            f"({size_bytes} bytes, {lines} lines) is saved at {path}; read it with the read tool "
            "(path, offset, limit)."
        )
    return (
        f"{body}{PERSISTED_OUTPUT_CLOSE}\n"
        f"The full output ({size_bytes} bytes, {lines} lines) is saved at {path}; read it with "
        "the read tool (path, offset, limit)."
    )


def head_tail(text: str, max_chars: int, why: str) -> str:
    """`text` cut to at most `max_chars` characters: its head (2/3) and tail (1/3) around a
    notice `… [N chars cut: <why>] …`.

    Args:
        text: the (normalized) output.
        max_chars: the size cap in characters (at least 1000).
        why: the reason, shown in the notice (kept short: at most 200 characters).

    Raises:
        ValueError: `max_chars` below 1000 or `why` longer than 200 characters.
    """
    if max_chars < 1000 or len(why) > 200:
        raise ValueError("head_tail needs max_chars >= 1000 and a reason of <= 200 chars")
    if len(text) <= max_chars:
        return text
    budget = max_chars - 250 - len(why)
    head_n = budget * 2 // 3
    tail_n = budget - head_n
    cut = len(text) - head_n - tail_n
    return f"{text[:head_n]}\n… [{cut} chars cut: {why}] …\n{text[len(text) - tail_n :]}"


def binary_notice(size_bytes: int, sha256: str, where: str) -> str:
    """The text that replaces binary output: its size in bytes, sha256 and `where` (e.g.
    `saved to /path/x.bin` or `not saved (no session)`)."""
    return (
        f"[binary output: {size_bytes} bytes, sha256 {sha256}; {where}; not shown: "
        "binary data cannot go into the conversation]"
    )
