"""`@path` imports in instruction files, and the instruction files' size cap. Pure: the file
reader is injected, so nothing here touches the disk.

Owns: `import_spans` (where the `@path` tokens are, outside code spans and fences),
`expand_imports` (each token replaced by the imported file's text, itself expanded: at most
`MAX_IMPORT_DEPTH` levels, cycles refused, only inside the allowed folders) and `apply_cap`
(the files cut to a total byte budget, with a note of what was cut).
Does not own: reading files (the caller's `Reader`: `tether.prompt.gather` reads by real path
and refuses what resolves outside the allowed folders).

The rules (as Claude Code's and Gemini CLI's memory imports): a token is `@` at the start of
a line or after white space, followed by a path (`@AGENTS.md`, `@docs/style.md`,
`@~/notes.md`, `@/abs/file.md`) that contains a `.` or a `/`; trailing punctuation is not part
of it. A relative path is relative to the importing file's folder. A token whose file does not
exist is left as written (`@types/node` in prose is not an import); when the token is alone on
its line (an import line: `@docs/style.md`, or a list item `- @docs/style.md`), the missing file
is named in `problems`, once. Inside inline code
(`` `@x.md` ``) and fenced code blocks nothing is imported.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_IMPORT_DEPTH = 5
"""How deep imports nest: a file's imports are level 1, theirs level 2, ... up to this."""

Reader = Callable[[str], "str | None"]
"""Reads one file by absolute path: its text, or None when it is missing or refused."""
Refusal = Callable[[str], "str | None"]
"""Why one file (absolute path, inside the allowed folders) may not be imported, or None."""

_TOKEN = re.compile(r"(?:(?<=\s)|^)@([^\s`'\"<>()\[\]{}]+)", re.MULTILINE)
_TRAILING = ".,;:!?"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _mask_code(text: str) -> str:
    """`text` with fenced blocks and inline code spans replaced by `x` (same length)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append(re.sub(r"[^\n]", "x", line))
            continue
        if m:
            fence = m.group(1)
            out.append(re.sub(r"[^\n]", "x", line))
            continue
        out.append(_mask_inline(line))
    return "".join(out)


def _mask_inline(line: str) -> str:
    chars = list(line)
    i = 0
    while i < len(line):
        if line[i] != "`":
            i += 1
            continue
        j = i
        while j < len(line) and line[j] == "`":
            j += 1
        run = line[i:j]
        close = line.find(run, j)
        while close != -1 and close + len(run) < len(line) and line[close + len(run)] == "`":
            close = line.find(run, close + len(run) + 1)
        if close == -1:
            i = j
            continue
        for k in range(i, close + len(run)):
            chars[k] = "x"
        i = close + len(run)
    return "".join(chars)


def import_spans(text: str) -> list[tuple[int, int, str]]:
    """The `@path` tokens of `text` outside code: (start, end, path) with `text[start:end]`
    the token (`@` included), in order."""
    masked = _mask_code(text)
    spans: list[tuple[int, int, str]] = []
    for m in _TOKEN.finditer(masked):
        path = m.group(1).rstrip(_TRAILING)
        if not path or ("." not in path and "/" not in path):
            continue
        spans.append((m.start(), m.start() + 1 + len(path), path))
    return spans


def resolve_import(path: str, origin: str, home: str) -> str:
    """The absolute, normalized path an import names (`~` is `home`; relative paths are
    relative to `origin`'s folder)."""
    if path.startswith("~/"):
        joined = posixpath.join(home, path[2:])
    elif path.startswith("/"):
        joined = path
    else:
        joined = posixpath.join(posixpath.dirname(origin), path)
    return posixpath.normpath(joined)


def is_within(path: str, roots: Sequence[str]) -> bool:
    """True when `path` is one of `roots` or below one (normalized absolute paths)."""
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@dataclass(frozen=True, slots=True, kw_only=True)
class Expanded:
    """A file's text with its imports expanded.

    Attributes:
        text: the text.
        imports: the imported files (absolute paths), in the order first met.
        problems: one line per import refused (outside the allowed folders, a cycle, too deep)
            or whose import line names no readable file.
    """

    text: str
    imports: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def expand_imports(
    text: str,
    origin: str,
    read: Reader,
    *,
    allowed: Sequence[str],
    home: str,
    max_depth: int = MAX_IMPORT_DEPTH,
    refuse: Refusal | None = None,
) -> Expanded:
    """`text` (the file at `origin`) with every import replaced by the imported file's text,
    expanded in turn (module docstring). A refused import is left as written and named in
    `problems`; a missing file is left as written, and named in `problems` when its token is
    alone on its line (an import line; in prose it is silent).

    Args:
        text: the importing file's text.
        origin: its absolute path (relative imports start from its folder).
        read: reads an absolute path (None: missing or refused).
        allowed: folders imports may come from (absolute, normalized): the project and the
            user config folder.
        home: the user's home folder, for `~/` paths.
        max_depth: the deepest import level allowed.
        refuse: why a file inside `allowed` may still not be imported (a secret: tether's
            settings and credentials, a dotenv file), or None when it may.
    """
    imports: list[str] = []
    problems: list[str] = []
    rules = _Rules(read, allowed, home, max_depth, refuse or _nothing_refused)
    out = _expand(text, origin, (origin,), rules, imports, problems)
    return Expanded(
        text=out, imports=tuple(dict.fromkeys(imports)), problems=tuple(dict.fromkeys(problems))
    )


def _alone(text: str, start: int, end: int) -> bool:
    """Whether the token `text[start:end]` is all its line holds (a list marker before it and
    trailing punctuation after it aside): an import line, not a mention in prose."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = text[line_start:start].strip()
    after = text[end : len(text) if line_end < 0 else line_end].strip()
    return before in ("", "-", "*", "+") and all(c in _TRAILING for c in after)


def _nothing_refused(_path: str) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class _Rules:
    read: Reader
    allowed: Sequence[str]
    home: str
    max_depth: int
    refuse: Refusal


def _expand(
    text: str,
    origin: str,
    stack: tuple[str, ...],
    rules: _Rules,
    imports: list[str],
    problems: list[str],
) -> str:
    pieces: list[str] = []
    last = 0
    max_depth = rules.max_depth
    for start, end, raw in import_spans(text):
        target = resolve_import(raw, origin, rules.home)
        if not is_within(target, rules.allowed):
            problems.append(
                f"{origin}: import {raw} refused: outside the project and tether's config folder"
            )
            continue
        why = rules.refuse(target)
        if why is not None:
            problems.append(f"{origin}: import {raw} refused: {why}")
            continue
        if target in stack:
            chain = " -> ".join((*stack, target))
            problems.append(f"{origin}: import {raw} refused: a cycle ({chain})")
            continue
        if len(stack) > max_depth:
            problems.append(
                f"{origin}: import {raw} refused: nested deeper than {max_depth} levels"
            )
            continue
        body = rules.read(target)
        if body is None:
            if _alone(text, start, end):
                problems.append(f"{origin}: import {raw}: no readable file at {target}")
            continue
        imports.append(target)
        inner = _expand(body, target, (*stack, target), rules, imports, problems)
        pieces.append(text[last:start])
        pieces.append(inner.rstrip("\n"))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


@dataclass(frozen=True, slots=True, kw_only=True)
class Capped:
    """Texts cut to a byte budget.

    Attributes:
        texts: one per input, in order: whole, cut at a line end, or "" when left out.
        note: what was cut (`""` when nothing was).
    """

    texts: tuple[str, ...]
    note: str = ""


def apply_cap(named: Sequence[tuple[str, str]], cap_bytes: int) -> Capped:
    """Keep `(name, text)` files in order while their UTF-8 sizes fit `cap_bytes` in total;
    the first that does not fit is cut at the last line end within what is left (or left out
    when no whole line fits) and every later one is left out. The note names each cut and
    left-out file with its size.

    The kept texts' sizes sum to at most `cap_bytes`, and each kept text is a prefix of its
    input.
    """
    texts: list[str] = []
    cut: list[str] = []
    left = max(cap_bytes, 0)
    full = False
    for name, text in named:
        data = text.encode("utf-8")
        if not full and len(data) <= left:
            texts.append(text)
            left -= len(data)
            continue
        full = True
        head = data[:left]
        end = head.rfind(b"\n")
        kept = head[: end + 1].decode("utf-8", errors="ignore") if end >= 0 else ""
        left -= len(kept.encode("utf-8"))
        texts.append(kept)
        if kept:
            cut.append(f"{name} cut to {len(kept.encode('utf-8')):,} of {len(data):,} bytes")
        else:
            cut.append(f"{name} ({len(data):,} bytes) left out")
    note = ""
    if cut:
        note = f"instruction files over the {cap_bytes:,}-byte cap: " + "; ".join(cut)
    return Capped(texts=tuple(texts), note=note)
