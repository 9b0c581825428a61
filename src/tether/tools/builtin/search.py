"""The built-in search tools: `glob` (names) and `grep` (contents, pure Python `re`).

Owns: their behaviour, caps and output formats. Neither ever reports a path outside the working
folder: every candidate reached through a symlink is re-checked with the path guard. `grep` skips
`.git`, binary files and files the deny policy refuses (so a read deny cannot be bypassed
through it).
Does not own: the path guard (`tether.sandbox.paths`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tether.errors import PathDeniedError, PathOutsideError, ToolError
from tether.sandbox.paths import open_inside, resolve_inside
from tether.sandbox.policy import check_hardlinks, check_policy, compile_glob
from tether.tools.base import tool
from tether.tools.builtin.files import (
    SNIFF_BYTES,
    base_of,
    guard,
    is_binary,
    open_dir_inside,
    rel,
)
from tether.tools.context import ToolContext

MAX_GLOB_RESULTS = 1000
MAX_GLOB_SCAN = 100_000
"""glob stops collecting candidates past this many."""
MAX_GREP_MATCHES = 500
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
"""grep skips larger files (bytes)."""
SKIP_DIRS = frozenset({".git", ".hg", ".svn"})


def _inside(ctx: ToolContext, path: str, top: Path | None = None) -> Path | None:
    """The real path of `path` inside `top` (default: the root), or None outside it."""
    try:
        return resolve_inside(top or ctx.root, path)
    except PathOutsideError:
        return None


@tool(name="glob", safe=True)
def glob_(pattern: str, path: str = ".", *, ctx: ToolContext) -> str:
    """Find files and folders by name pattern, e.g. `**/*.py` or `src/*.toml`; sorted paths
    relative to the working folder, folders ending with `/`.

    `*` matches within one path component, `**` any number of folders. `.git` is skipped unless
    the pattern names it.

    Args:
        pattern: the glob, relative to `path` (no `..`, not absolute).
        path: the folder to search from, relative to the working folder.
    """
    if not pattern or os.path.isabs(pattern) or ".." in pattern.split("/"):
        raise ToolError(f"pattern {pattern!r} refused: give a relative pattern without `..`")
    base = guard(ctx, path)
    if not base.is_dir():
        raise ToolError(f"{rel(ctx, base)} is not a directory")
    show_git = ".git" in pattern
    top = base_of(ctx, base)  # the root, or the extra folder searched
    found = [str(base / r) for r in fd_glob(top, base, pattern, show_git=show_git)]
    found.sort()
    lines: list[str] = []
    for s in found:
        real = _inside(ctx, s, top)
        if real is None:
            continue  # reached through a symlink to outside
        name = rel(ctx, s)
        lines.append(name + "/" if real.is_dir() else name)
        if len(lines) >= MAX_GLOB_RESULTS:
            lines.append(f"(showing the first {MAX_GLOB_RESULTS} of about {len(found)} matches)")
            break
    if len(found) >= MAX_GLOB_SCAN:
        lines.append(f"(stopped scanning after {MAX_GLOB_SCAN} matches; narrow the pattern)")
    return "\n".join(lines) if lines else f"no matches for {pattern!r} in {rel(ctx, base)}"


def fd_glob(root: Path, base: Path, pattern: str, *, show_git: bool) -> list[str]:
    """Relative paths under `base` matching `pattern` (anchored at `base`), found by walking
    folder fds (`os.fwalk`, never following a symlink, each folder re-checked under its open
    fd), starting from a fd opened from the root without following symlinks: a folder swapped
    for a symlink to outside while the walk runs is not entered. At most
    `MAX_GLOB_SCAN` results.

    Raises:
        PathOutsideError: `base` itself is (now) a symlink.
    """
    rx = compile_glob(pattern, anchored=True)
    parts = pattern.split("/")
    max_depth = None if any("**" in p for p in parts) else len(parts)
    top = open_dir_inside(root, base)
    out: list[str] = []
    try:
        for dirpath, dirnames, filenames, _fd in os.fwalk(
            ".", dir_fd=top, follow_symlinks=False
        ):
            rel_dir = os.path.normpath(dirpath)
            depth = 0 if rel_dir == "." else rel_dir.count("/") + 1
            if not show_git:
                dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for name in (*dirnames, *filenames):
                r = name if rel_dir == "." else f"{rel_dir}/{name}"
                if rx.match(r):
                    out.append(r)
                    if len(out) >= MAX_GLOB_SCAN:
                        return out
            if max_depth is not None and depth + 1 >= max_depth:
                dirnames[:] = []
    finally:
        os.close(top)
    return out


def _walk(base: Path) -> list[Path]:
    """Files under `base` (not following symlinked folders, skipping VCS folders), sorted."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        d = Path(dirpath)
        out.extend(d / f for f in sorted(filenames))
    return out


@tool(safe=True)
def grep(pattern: str, path: str = ".", glob: str | None = None, *, ctx: ToolContext) -> str:
    """Search file contents with a Python regular expression; prints `file:line: text` for each
    matching line, files in sorted order. Skips binary files and `.git`.

    Args:
        pattern: the regex (Python `re` syntax), searched in each line.
        path: a file or folder, relative to the working folder.
        glob: only search files whose path matches this glob, e.g. `*.py` (any depth) or
            `src/**/*.ts`.
    """
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise ToolError(f"invalid regex {pattern!r}: {e}") from None
    base = guard(ctx, path)
    if not base.exists():
        raise ToolError(f"{rel(ctx, base)} does not exist")
    files = [base] if base.is_file() else _walk(base)
    top = base_of(ctx, base)  # the root, or the extra folder searched
    only = compile_glob(glob) if glob else None
    out: list[str] = []
    denied = 0
    capped = False
    for f in files:
        if only is not None and not only.match(
            os.path.relpath(f, base if base.is_dir() else base.parent)
        ):
            continue
        real = _inside(ctx, str(f), top) if f.is_symlink() else f
        if real is None or not real.is_file():
            continue
        name = rel(ctx, f)
        try:
            check_policy(ctx.policy, top, os.path.relpath(f, top), real, write=False)
            check_hardlinks(ctx.policy, top, real.stat())
        except PathDeniedError:
            denied += 1
            continue
        try:
            if real.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            fd = open_inside(top, real, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read()
        except (OSError, PathOutsideError):
            continue
        if is_binary(data[:SNIFF_BYTES]):
            continue
        for i, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if rx.search(line):
                if len(line) > MAX_GREP_LINE_CHARS:
                    line = line[:MAX_GREP_LINE_CHARS] + " …"
                out.append(f"{name}:{i}: {line}")
                if len(out) >= MAX_GREP_MATCHES:
                    capped = True
                    break
        if capped:
            break
    if capped:
        out.append(f"(stopped at {MAX_GREP_MATCHES} matches; narrow the pattern or path)")
    if denied:
        out.append(f"({denied} file{'s' if denied > 1 else ''} skipped by the deny policy)")
    return "\n".join(out) if out else f"no matches for /{pattern}/ in {rel(ctx, base)}"
