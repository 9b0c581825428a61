"""The output gate: every tool result passes here before it is stored.

Owns: `persist_tool_result` / `gate_tool_result` (normalize, detect binary, persist oversized
output to the session's artifact folder and put a byte-stable `<persisted-output>` stub in its
place), `OutputLimits` and `readable_results_dir` (the one folder outside the working folder
that the `read` tool may read: this session's `tool-results/`).
Does not own: the atomic file write (`tether.atomic.write_atomic`), the pure text passes and the
stub's shape (`tether.tools.exec.normalize`), the session layout (`tether.session.layout` names
the same `tool-results` sub-folder).

What happens to a result (`session_dir` is the session's artifact folder, or None):

- Every text part is normalized: `\\r` overwrites and ANSI escapes rendered, lone surrogates
  replaced, lines over `max_line_chars` cut with a `… [N chars cut]` note.
- A text part that looks binary is replaced by a notice with its size (bytes) and sha256 of the
  exact bytes the tool produced (tools keep undecodable bytes as `surrogateescape` characters,
  `raw_bytes` restores them); with a session those bytes are saved to
  `<session_dir>/tool-results/<call_id>.bin`.
- Control characters are rendered or escaped (`tether.tools.exec.normalize.render_controls`).
- Output a tool cut before the gate (`tether.tools.exec.normalize.output_cut_note`, e.g. `bash` past
  8 MB) is described as what it is: the bytes produced, the bytes kept, and the line of the cut.
- A text-only result longer than `threshold_chars` after normalization is saved raw (the exact
  output: the tool's `raw` bytes when it gave them, e.g. `bash`'s stdout+stderr as written,
  trailing newlines and all, without its exit-code note; else the text) to `<session_dir>/tool-results/<call_id>.txt` and replaced by the stub (see
  `tether.tools.exec.normalize.render_stub`). Without a session, or when the write fails, it is cut
  to head + tail with a notice instead (never dropped silently).
- A text-only result that lost characters to normalization (cut lines) or whose raw text is
  over the threshold keeps its normalized text, and with a session its raw output is saved too
  and one note line names the file (the full raw output goes to disk).
- A result with images is never persisted: images are kept, text parts normalized (and, over
  the threshold, cut to head + tail).
- `is_error` is kept; error results are gated the same way.

Durability: a saved file is as durable as the session line that names it. It is written
completely and named in place before that line is appended, so a killed process leaves it
whole or absent, never partial; it is not fsynced per call (an fsync cost 1.5 ms CPU and 2.3 ms
wall per 2 KB file here, more than the rest of a turn: `bench/turn_overhead.py`). Session lines
are not fsynced either; `tether.session.SessionWriter.sync()` fsyncs the files saved since its
last sync before the session file, so at a sync point no line names a file the disk lacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tether.atomic import WRITE_CHUNK_BYTES, write_atomic
from tether.messages import ImageBlock, ResultPart, TextBlock, ToolResultBlock
from tether.tools.exec.normalize import (
    DEFAULT_MAX_LINE_CHARS,
    PERSISTED_OUTPUT_CLOSE,
    PERSISTED_OUTPUT_OPEN,
    binary_notice,
    cut_sentence,
    find_output_cut,
    head_tail,
    normalize,
    raw_bytes,
    render_stub,
)

__all__ = [
    "DEFAULT_OUTPUT_LIMITS",
    "DEFAULT_THRESHOLD_CHARS",
    "PERSISTED_OUTPUT_CLOSE",
    "PERSISTED_OUTPUT_OPEN",
    "TOOL_RESULTS_DIR",
    "OutputLimits",
    "gate_tool_result",
    "persist_tool_result",
    "readable_results_dir",
    "readable_results_dirs",
    "redact_file",
    "result_file_name",
    "spill_file",
]

TOOL_RESULTS_DIR = "tool-results"
"""The artifact sub-folder holding persisted outputs (`tether.session.layout.ArtifactKind`)."""

DEFAULT_THRESHOLD_CHARS = 50_000
"""A text result longer than this (characters, after normalization) is persisted."""

INLINE_GATE_CHARS = 256 * 1024
"""Results up to this many characters are gated on the event loop; larger ones in a thread."""

_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputLimits:
    """The gate's limits.

    Attributes:
        threshold_chars: a text result longer than this many characters (after normalization)
            is persisted (or, without a session, cut to head + tail). At least 4096.
        max_line_chars: a longer line is cut to this many characters (its note included).
            At least 40.

    Raises:
        ValueError: a limit below its minimum.
    """

    threshold_chars: int = DEFAULT_THRESHOLD_CHARS
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS

    def __post_init__(self) -> None:
        if self.threshold_chars < 4096:
            raise ValueError(f"threshold_chars must be at least 4096, got {self.threshold_chars}")
        if self.max_line_chars < 40:
            raise ValueError(f"max_line_chars must be at least 40, got {self.max_line_chars}")


DEFAULT_OUTPUT_LIMITS = OutputLimits()


def result_file_name(call_id: str, suffix: str) -> str:
    """A safe file name for a call's saved output: `<call_id><suffix>` when the id is a safe
    name, else the id with unsafe characters replaced plus 12 hex of its sha256 (stable)."""
    if _SAFE_NAME.fullmatch(call_id):
        return call_id + suffix
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", call_id)[:80] or "call"
    digest = hashlib.sha256(call_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"{cleaned}-{digest}{suffix}"


_spill_names = itertools.count()


def spill_file(session_dir: Path | None) -> Path | None:
    """A fresh path for an output too large to hold in memory (`tether.sandbox.proc.HeadTail`'s
    spill): `<session_dir>/tool-results/.spill-<pid>-<n>.tmp`, its folder created; None
    without a session or when the folder cannot be made. The gate moves the file into place
    as the call's saved output (`persist_tool_result`)."""
    if session_dir is None:
        return None
    folder = Path(os.path.abspath(session_dir)) / TOOL_RESULTS_DIR
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder / f".spill-{os.getpid()}-{next(_spill_names)}.tmp"


REDACT_BLOCK_BYTES = 1 << 20
"""`redact_file` redacts a file in blocks of about this many bytes, cut at line ends."""


def redact_file(path: Path, redact: Callable[[str], str]) -> None:
    """Redact a spilled output in place, block by block (each block ends at a line end, so a
    secret on one line is always whole in one block); the file is replaced atomically. A
    failure removes the file (an unredacted output is never kept)."""
    out = path.with_name(path.name + ".r")
    try:
        with open(path, "rb") as src, open(out, "wb") as dst:
            carry = b""
            while True:
                block = src.read(REDACT_BLOCK_BYTES)
                data = carry + block
                if block:
                    cut = data.rfind(b"\n") + 1
                    if cut == 0:
                        carry = data
                        continue
                    data, carry = data[:cut], data[cut:]
                else:
                    carry = b""
                text = data.decode("utf-8", "surrogateescape")
                dst.write(redact(text).encode("utf-8", "surrogateescape"))
                if not block:
                    break
        os.chmod(out, 0o600)
        os.replace(out, path)
    except OSError:
        for leftover in (out, path):
            with contextlib.suppress(OSError):
                os.unlink(leftover)


def _file_stats(path: Path) -> tuple[int, int, str]:
    """A file's size, line count and sha256, read in blocks."""
    size = lines = 0
    last = b""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(WRITE_CHUNK_BYTES):
            size += len(block)
            lines += block.count(b"\n")
            digest.update(block)
            last = block[-1:]
    return size, lines + (1 if size and last != b"\n" else 0), digest.hexdigest()


def _move(session_dir: Path, call_id: str, suffix: str, src: Path) -> Path | str:
    """Move a spilled output into place as a call's saved output; returns the path, or the
    error text when the move failed (the spill file is then removed)."""
    path = Path(os.path.abspath(session_dir)) / TOOL_RESULTS_DIR / result_file_name(call_id, suffix)
    try:
        os.replace(src, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(src)
        return f"{type(e).__name__}: {e}"
    return path


def readable_results_dir(session_dir: Path | None) -> Path | None:
    """The real path of `<session_dir>/tool-results/` when it is a real folder (not a
    symlink, not reached through one below the session folder), else None. The `read` tool
    may read files below it although it lies outside the working folder."""
    if session_dir is None:
        return None
    candidate = Path(os.path.realpath(session_dir)) / TOOL_RESULTS_DIR
    if candidate.is_symlink() or not candidate.is_dir():
        return None
    return candidate


def readable_results_dirs(session_dir: Path | None) -> tuple[Path, ...]:
    """Every folder of this session's persisted outputs the `read` tool may read:
    `readable_results_dir`, then the session's legacy ones (older layouts, which the
    migration leaves in place because stored stubs name their files by absolute path:
    `tether.session.migrate.legacy_tool_results`)."""
    if session_dir is None:
        return ()
    from tether.session.migrate import legacy_tool_results

    own = readable_results_dir(session_dir)
    legacy = legacy_tool_results(Path(os.path.realpath(session_dir)))
    return (*((own,) if own is not None else ()), *legacy)


_results_folders: dict[Path, Path] = {}
"""`results_folder` of the absolute session folders seen (a few per process)."""


def results_folder(session_dir: Path) -> Path:
    """`<session_dir>/tool-results` as an absolute path: worked out once per absolute session
    folder (a saved output per turn paid three path parses for it)."""
    folder = _results_folders.get(session_dir)
    if folder is None:
        folder = Path(os.path.abspath(session_dir)) / TOOL_RESULTS_DIR
        if session_dir.is_absolute():  # a relative one follows the working folder
            if len(_results_folders) >= 64:
                _results_folders.clear()
            _results_folders[session_dir] = folder
    return folder


def _save(session_dir: Path, call_id: str, suffix: str, data: bytes) -> Path | str:
    """Save `data`; returns the path, or the error text when the write failed."""
    path = results_folder(session_dir) / result_file_name(call_id, suffix)
    try:
        write_atomic(path, data, durable=False, mode=0o600, folder_mode=0o700)
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    return path


def _binary(raw: str, call_id: str, session_dir: Path | None, exact: bytes | None = None) -> str:
    data = raw_bytes(raw) if exact is None else exact
    digest = hashlib.sha256(data).hexdigest()
    where = "not saved (no session)"
    if session_dir is not None:
        saved = _save(session_dir, call_id, ".bin", data)
        where = f"saved to {saved}" if isinstance(saved, Path) else f"not saved ({saved[:150]})"
    cut = find_output_cut(raw)
    if cut is not None:
        where += f"; {cut_sentence(cut, len(data))}"
    return binary_notice(len(data), digest, where)


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _gate_text(
    raw: str,
    call_id: str,
    session_dir: Path | None,
    limits: OutputLimits,
    exact: bytes | Path | None = None,
) -> str:
    """The text to store for a text-only result whose joined text is `raw`; `exact` is the
    output's own bytes when the tool gave them (`ToolOutput.raw`): what is saved then."""
    if isinstance(exact, Path):
        if session_dir is not None and exact.is_file():
            return _gate_spilled(raw, call_id, session_dir, limits, exact)
        with contextlib.suppress(OSError):
            exact.unlink()
        exact = None
    norm = normalize(raw, max_line_chars=limits.max_line_chars)
    if norm.binary:
        return _binary(raw, call_id, session_dir, exact)
    text = norm.text
    over = len(text) > limits.threshold_chars
    big = len(raw) > limits.threshold_chars or (
        exact is not None and len(exact) > limits.threshold_chars
    )
    if not (over or norm.lossy or big):
        return text
    why = "no session to save the full output to"
    if session_dir is not None:
        data = raw_bytes(raw) if exact is None else exact
        saved = _save(session_dir, call_id, ".txt", data)
        if isinstance(saved, Path):
            cut = find_output_cut(raw)
            what = (
                f"full output ({len(data)} bytes, {_lines(data)} lines)"
                if cut is None
                else f"kept output ({len(data)} bytes, {_lines(data)} lines)"
            )
            note = (
                f"{'' if text.endswith(chr(10)) else chr(10)}[{what} saved at {saved}; "
                "read it with the read tool (path, offset, limit)]"
            )
            if cut is not None:
                note += f"\n[{cut_sentence(cut, len(data))}]"
            if not over and len(text) + len(note) <= limits.threshold_chars:
                return text + note
            return render_stub(
                text, path=str(saved), size_bytes=len(data), lines=_lines(data), cut=cut
            )
        why = f"the full output could not be saved ({saved[:150]})"
    return head_tail(text, limits.threshold_chars, why) if over else text


def _gate_spilled(
    raw: str, call_id: str, session_dir: Path, limits: OutputLimits, spilled: Path
) -> str:
    """`_gate_text` for an output the tool streamed whole to `spilled` (over 8 MB: `raw` holds
    only its head and tail): the file is moved into place as the saved output, byte for byte,
    and the stub describes all of it."""
    norm = normalize(raw, max_line_chars=limits.max_line_chars)
    try:
        size, lines, digest = _file_stats(spilled)
    except OSError as e:
        with contextlib.suppress(OSError):
            spilled.unlink()
        return _gate_text(raw, call_id, None, limits) + f"\n[the full output was lost: {e}]"
    if norm.binary:
        saved = _move(session_dir, call_id, ".bin", spilled)
        where = f"saved to {saved}" if isinstance(saved, Path) else f"not saved ({saved[:150]})"
        return binary_notice(size, digest, where)
    saved = _move(session_dir, call_id, ".txt", spilled)
    if isinstance(saved, Path):
        return render_stub(norm.text, path=str(saved), size_bytes=size, lines=lines)
    why = f"the full output could not be saved ({saved[:150]})"
    return head_tail(norm.text, limits.threshold_chars, why)


def persist_tool_result(
    result: ToolResultBlock,
    session_dir: Path | None,
    limits: OutputLimits = DEFAULT_OUTPUT_LIMITS,
    raw: bytes | Path | None = None,
) -> ToolResultBlock:
    """Gate one tool result (see the module docstring for the rules).

    Args:
        result: the result as the tool runner made it.
        session_dir: the session's artifact folder, or None without a session (nothing is
            written then).
        limits: the threshold and per-line cap.
        raw: the exact bytes a text-only result's output stands for (`ToolOutput.raw`: a
            command's output without the tool's notes), or None (the text is the output).
            A saved file then holds exactly these bytes, and the stub's size and line count
            (or the binary notice's size and sha256) describe them; an output over the
            threshold in bytes is saved even when its text renders short (5 MB of `\\r`).
            A path: a file holding those bytes (a spilled output over 8 MB): it is moved into
            place as the saved output, whole.

    Returns:
        The result to store and send: `result` itself when nothing changed, else a new block
        with the same `tool_call_id` and `is_error`. Its text is valid UTF-8, never empty.
        Write failures degrade to head + tail truncation with a notice; nothing raises.
    """
    texts = [p for p in result.content if isinstance(p, TextBlock)]
    if not texts:
        if isinstance(raw, Path):
            with contextlib.suppress(OSError):
                raw.unlink()
        return result
    has_images = any(isinstance(p, ImageBlock) for p in result.content)
    if has_images and isinstance(raw, Path):  # not persisted: the spill file is not kept
        with contextlib.suppress(OSError):
            raw.unlink()
    if not has_images:
        joined = texts[0].text if len(texts) == 1 else result.text
        out = _gate_text(joined, result.tool_call_id, session_dir, limits, raw)
        if len(texts) == 1 and out == joined:
            return result
        content: tuple[ResultPart, ...] = (TextBlock(text=out or "(no output)"),)
    else:
        parts: list[ResultPart] = []
        for p in result.content:
            if not isinstance(p, TextBlock):
                parts.append(p)
                continue
            norm = normalize(p.text, max_line_chars=limits.max_line_chars)
            if norm.binary:
                text = _binary(p.text, result.tool_call_id, session_dir)
            else:
                text = head_tail(
                    norm.text, limits.threshold_chars, "a result with images is not persisted"
                )
            parts.append(p if text == p.text else TextBlock(text=text or "(no output)"))
        if all(a is b for a, b in zip(parts, result.content, strict=True)):
            return result
        content = tuple(parts)
    return ToolResultBlock(
        tool_call_id=result.tool_call_id, content=content, is_error=result.is_error
    )


async def gate_tool_result(
    result: ToolResultBlock,
    session_dir: Path | None,
    limits: OutputLimits = DEFAULT_OUTPUT_LIMITS,
    raw: bytes | Path | None = None,
) -> ToolResultBlock:
    """`persist_tool_result` for async callers: small results are gated inline, results over
    `INLINE_GATE_CHARS` characters (or raw bytes) in a worker thread (normalizing and writing
    megabytes would stall the event loop)."""
    if gates_inline(result, raw):
        return persist_tool_result(result, session_dir, limits, raw)
    return await asyncio.to_thread(persist_tool_result, result, session_dir, limits, raw)


def gates_inline(result: ToolResultBlock, raw: bytes | Path | None = None) -> bool:
    """Whether `gate_tool_result` gates `result` inline, without awaiting (at most
    `INLINE_GATE_CHARS` characters of text and of raw bytes, and no raw output file)."""
    size = sum(len(p.text) for p in result.content if isinstance(p, TextBlock))
    return not isinstance(raw, Path) and max(size, len(raw or b"")) <= INLINE_GATE_CHARS
