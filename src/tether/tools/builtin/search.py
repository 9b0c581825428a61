"""The built-in search tools: `glob` (names) and `grep` (contents, pure Python `re`).

Owns: their behaviour, caps and output formats. Neither ever reports a path outside the working
folder: every candidate reached through a symlink is re-checked with the path guard. Both skip
`.git` (`.hg`, `.svn`) and what the project's ignore files ignore (`tether.gitignore`, as
ripgrep does: the ignored folders pruned, never walked), except below a path the call names
that is itself ignored (`path: ".venv/lib"`, a pattern starting `.venv/`). `grep` also skips
binary files and files the deny policy refuses (so a read deny cannot be bypassed through it).
Does not own: the path guard (`tether.sandbox.paths`), the ignore rules (`tether.gitignore`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from tether.errors import PathDeniedError, PathOutsideError, ToolError
from tether.gitignore import IgnoreRules, read_gitignore
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

    `*` matches within one path component, `**` any number of folders. `.git` and what the
    project's `.gitignore` files ignore are skipped, unless the pattern starts with that folder
    (`.venv/**/*.py`) or `path` is inside it.

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
    """Relative paths under `base` matching `pattern` (anchored at `base`), found by `fd_walk`
    from the pattern's leading literal folders (`src/` of `src/**/*.py`). At most
    `MAX_GLOB_SCAN` results.

    Raises:
        PathOutsideError: `base` itself is (now) a symlink.
    """
    rx = compile_glob(pattern, anchored=True)
    parts = pattern.strip("/").split("/")
    max_depth = None if any("**" in p for p in parts) else len(parts)
    out: list[str] = []
    for rel_dir, dirnames, filenames in fd_walk(root, base, lead(pattern), skip_vcs=not show_git):
        depth = 0 if rel_dir == "" else rel_dir.count("/") + 1
        for name in (*dirnames, *filenames):
            r = rel_dir + "/" + name if rel_dir else name
            if rx.match(r):
                out.append(r)
                if len(out) >= MAX_GLOB_SCAN:
                    return out
        if max_depth is not None and depth + 1 >= max_depth:
            dirnames[:] = []
    return out


def lead(pattern: str) -> str:
    """The leading folders of an anchored glob that hold no wildcard (`src/a` of
    `src/a/**/*.py`; `""` for `**/*.py` or `*.py`): where a walk for it can start."""
    parts = pattern.strip("/").split("/")[:-1]
    out: list[str] = []
    for part in parts:
        if part in ("", ".") or any(c in part for c in "*?[\\"):
            break
        out.append(part)
    return "/".join(out)


def fd_walk(
    root: Path, base: Path, sub: str = "", *, skip_vcs: bool = True
) -> Iterator[tuple[str, list[str], list[str]]]:
    """`(folder, its folders, its files)` for each folder from `base/sub` down, the folder
    relative to `base` (`""` for `base`), names sorted; what the project's ignore rules ignore
    is left out and never entered (unless `base/sub` is itself ignored or in an ignored
    folder: then nothing below it is), VCS folders too when `skip_vcs`. A caller may prune
    `folders` further before the walk goes on.

    Walked by folder fds (`os.fwalk`, never following a symlink, each folder re-checked under
    its open fd), from a fd opened from the root without following symlinks: a folder swapped
    for a symlink to outside while the walk runs is not entered.

    Raises:
        PathOutsideError: `base` itself is (now) a symlink.
    """
    start = base / sub if sub else base
    try:
        top = open_dir_inside(root, start)
    except (OSError, PathOutsideError):
        if not sub:
            raise
        return  # the pattern's folder is missing, or a symlink
    at = os.path.relpath(start, root)
    at = "" if at == "." else at.replace(os.sep, "/") + "/"
    first = None if IgnoreRules.covers(root, at) else IgnoreRules.at(root, at)
    below: dict[str, IgnoreRules] = {}
    head = sub + "/" if sub else ""
    try:
        for dirpath, dirnames, filenames, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            here = os.path.normpath(dirpath)
            here = "" if here == "." else here + "/"
            if skip_vcs:
                dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            if first is not None:
                rules = (
                    first
                    if not here
                    else below.pop(here).enter(at + here, read_gitignore(dir_fd=fd))
                )
                dirnames[:] = [d for d in dirnames if not rules.ignored(at + here + d, is_dir=True)]
                filenames[:] = [
                    f for f in filenames if not rules.ignored(at + here + f, is_dir=False)
                ]
                below.update((here + d + "/", rules) for d in dirnames)
            dirnames.sort()
            filenames.sort()
            yield (head + here).rstrip("/"), dirnames, filenames
    finally:
        os.close(top)


def _walk(root: Path, base: Path, sub: str = "") -> list[Path]:
    """The files `fd_walk` finds under `base/sub`, sorted."""
    return [
        base / rel_dir / f if rel_dir else base / f
        for rel_dir, _dirs, files in fd_walk(root, base, sub)
        for f in files
    ]


@tool(safe=True)
def grep(pattern: str, path: str = ".", glob: str | None = None, *, ctx: ToolContext) -> str:
    """Search file contents with a Python regular expression; prints `file:line: text` for each
    matching line, files in sorted order. Skips binary files, `.git` and what the project's
    `.gitignore` files ignore, unless `path` (or `glob`'s start) is inside that folder.

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
    top = base_of(ctx, base)  # the root, or the extra folder searched
    files = [base] if base.is_file() else _walk(top, base, lead(glob) if glob else "")
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
