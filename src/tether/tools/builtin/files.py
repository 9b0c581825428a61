"""The built-in file tools that read and change single files: `read`, `write`, `edit`, `ls`.

Owns: their behaviour and output formats. Every path goes through the path guard
(`tether.sandbox.paths.resolve_inside`) and the context's deny policy; the operation then uses the
resolved real path, opened without following a final symlink.
`write` and `edit` tell the context's language servers (`ToolContext.lsp`, `tether.lsp`)
before and after the change, and add the diagnostics block they give as a second text part;
`read` starts the file's server in the background (its first edit then has a baseline).
Does not own: searching (`tether.tools.builtin.search`), the shell (`tether.tools.builtin.bash`).
"""

from __future__ import annotations

import asyncio
import base64
import errno
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Annotated

from pydantic import Field

from tether.errors import PathDeniedError, PathOutsideError, ToolError
from tether.messages import ImageBlock, TextBlock
from tether.sandbox.paths import (
    atomic_write,
    is_inside,
    open_inside,
    open_parent,
    resolve_inside,
)
from tether.sandbox.policy import check_hardlinks, check_policy
from tether.tools.base import tool
from tether.tools.context import ToolContext, ToolOutput
from tether.tools.exec.persist import readable_results_dirs

MAX_LINE_CHARS = 2000
"""A longer line is cut in `read` output (characters)."""
MAX_READ_CHARS = 100_000
"""`read` stops adding lines past this many characters of output."""
MAX_LS_ENTRIES = 1000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
SNIFF_BYTES = 8192
"""The bytes looked at to tell a binary file (a NUL byte, or not UTF-8)."""
_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def guard(ctx: ToolContext, user_path: str, *, write: bool = False) -> Path:
    """Resolve `user_path` inside `ctx.root` (or one of the policy's extra folders,
    `tools.add_dirs`) and apply the deny policy (relative to the folder holding it).

    Returns:
        The real absolute path.

    Raises:
        PathOutsideError: it resolves outside the root and the extra folders.
        PathDeniedError: the policy denies it, or it is a write in a read-only extra folder.
    """
    try:
        p = resolve_inside(ctx.root, user_path)
    except PathOutsideError as e:
        found = extra_dir(ctx, e.resolved)
        if found is None or e.resolved is None:
            raise
        folder, writable = found
        if write and not writable:
            raise PathDeniedError(
                f"writing {e.resolved} is refused: {folder} was added read-only "
                f"(--add-dir {folder}:ro)"
            ) from None
        p = Path(e.resolved)
        policy = ctx.policy
        scoped = replace(policy, write_paths=None) if policy is not None else None
        check_policy(scoped, Path(folder), os.path.relpath(p, folder), p, write=write)
        return p
    check_policy(ctx.policy, ctx.root, user_path, p, write=write)
    return p


def extra_dir(ctx: ToolContext, resolved: str | None) -> tuple[str, bool] | None:
    """`(folder, writable)` for the extra folder (`tools.add_dirs`) holding the real path
    `resolved`, or None."""
    if resolved is None or ctx.policy is None:
        return None
    return ctx.policy.extra_dir_of(resolved)


def base_of(ctx: ToolContext, real: Path) -> Path:
    """The folder a real path from `guard` is opened from: the extra folder holding it, else
    the working folder."""
    found = None if is_inside(str(real), str(ctx.root)) else extra_dir(ctx, str(real))
    return Path(found[0]) if found is not None else ctx.root


def guard_read(ctx: ToolContext, user_path: str) -> tuple[Path, Path, str]:
    """`guard` for reading, which also lets through files below this session's
    `tool-results/` folders (persisted outputs live outside the working folder; see
    `tether.tools.exec.persist.readable_results_dirs`) and below the policy's `read_roots`
    (the skill folders; their deny rules checked relative to the folder). Read-only: only
    `read` uses it.

    Returns:
        (the folder to open from, the real absolute path, the name to show).

    Raises:
        PathOutsideError: outside the root and not a persisted output of this session.
        PathDeniedError: the policy denies it (inside the root).
    """
    try:
        real = guard(ctx, user_path)
    except PathOutsideError as e:
        if e.resolved is None:
            raise
        for results in readable_results_dirs(ctx.session_dir):
            if e.resolved.startswith(str(results) + os.sep):
                return results, Path(e.resolved), e.resolved
        skill_root = _read_root(ctx, e.resolved)
        if skill_root is None:
            raise
        rel_path = os.path.relpath(e.resolved, skill_root)
        check_policy(ctx.policy, skill_root, rel_path, Path(e.resolved), write=False)
        return skill_root, Path(e.resolved), e.resolved
    return base_of(ctx, real), real, rel(ctx, real)


def _read_root(ctx: ToolContext, resolved: str) -> Path | None:
    """The policy's read root (a skill folder) holding `resolved`, or None."""
    for root in ctx.policy.read_roots if ctx.policy is not None else ():
        if resolved.startswith(root.rstrip(os.sep) + os.sep):
            return Path(root)
    return None


def rel(ctx: ToolContext, path: str | Path) -> str:
    """`path` relative to the root (`.` for the root itself); absolute outside it (an extra
    folder's files)."""
    if not is_inside(os.path.abspath(path), str(ctx.root)):
        return os.path.abspath(path)
    return os.path.relpath(path, ctx.root)


def is_binary(head: bytes) -> bool:
    """True when the first bytes of a file look binary (a NUL byte)."""
    return b"\0" in head


def _regular_file(path: Path, name: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(f"{name} does not exist") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{name} is a directory; use ls to list it")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{name} is not a regular file")
    return st


@tool(safe=True)
async def read(
    path: str,
    offset: Annotated[int, Field(ge=1)] = 1,
    limit: Annotated[int, Field(ge=1)] = 2000,
    *,
    ctx: ToolContext,
) -> str | list[TextBlock | ImageBlock]:
    """Read a text file (or an image) from the working folder, with line numbers.

    Output lines look like `     7\\tcontent`. Long lines are cut; when not all lines are shown,
    a note says which lines were and how to read on. Binary files are refused with their size.

    Args:
        path: the file, relative to the working folder (or absolute inside it).
        offset: the first line to show, 1-based.
        limit: how many lines to show at most.
    """
    base, real, name = guard_read(ctx, path)
    shown = await asyncio.to_thread(_read, ctx, base, real, name, offset, limit)
    if ctx.lsp is not None and base == ctx.root:  # its language server warms up meanwhile
        ctx.lsp.touch(real)
    return shown


def _read(
    ctx: ToolContext, base: Path, real: Path, name: str, offset: int, limit: int
) -> str | list[TextBlock | ImageBlock]:
    st = _regular_file(real, name)
    if base == ctx.root:
        check_hardlinks(ctx.policy, ctx.root, st)
    fd = open_inside(base, real, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        mime = _IMAGE_TYPES.get(real.suffix.lower())
        if mime is not None and st.st_size <= MAX_IMAGE_BYTES:
            data = base64.b64encode(f.read()).decode("ascii")
            return [
                TextBlock(text=f"image {name} ({st.st_size} bytes)"),
                ImageBlock(media_type=mime, data=data),
            ]
        if is_binary(f.peek(SNIFF_BYTES)[:SNIFF_BYTES]):
            raise ToolError(f"{name} is a binary file ({st.st_size} bytes); not shown")
        out: list[str] = []
        size = 0
        n = 0
        stopped = cut_by_size = False
        for n, raw in enumerate(f, 1):
            if n < offset:
                continue
            if n >= offset + limit:
                stopped = True
                break
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                line = f"{line[:MAX_LINE_CHARS]} … [line cut: {len(line)} chars]"
            entry = f"{n:6}\t{line}"
            if out and size + len(entry) > MAX_READ_CHARS:
                stopped = cut_by_size = True
                break
            out.append(entry)
            size += len(entry) + 1
        if not stopped:
            if n == 0:
                return f"(empty file: {name}, 0 lines, {st.st_size} bytes)"
            if offset > n:
                return f"({name} has {n} lines; offset {offset} is past the end)"
            return "\n".join(out)
        rest = 0  # lines after line n, counted on bytes (fast)
        last_byte = b"\n"
        for chunk in iter(lambda: f.read(1 << 20), b""):
            rest += chunk.count(b"\n")
            last_byte = chunk[-1:]
        total = n + rest + (0 if last_byte == b"\n" else 1)
        why = "output size cap" if cut_by_size else f"limit={limit}"
        out.append(
            f"\n(showing lines {offset}-{n - 1} of {total} ({why}); read on with offset={n})"
        )
        return "\n".join(out)


@tool
async def write(path: str, content: str, *, ctx: ToolContext) -> str | ToolOutput:
    """Write a file in the working folder, replacing it if it exists (atomically: temp file and
    rename). Missing parent folders are created.

    Args:
        path: the file, relative to the working folder (or absolute inside it).
        content: the full new content (UTF-8 text).
    """
    real = guard(ctx, path, write=True)
    data = content.encode("utf-8")
    if os.path.isdir(real):  # False for a name the folder cannot take: the write says why
        raise ToolError(f"{rel(ctx, real)} is a directory")
    before = None if ctx.lsp is None else await ctx.lsp.before_change(real)
    created = await asyncio.to_thread(_write_file, ctx, base_of(ctx, real), real, data)
    verb = "created" if created else "overwrote"
    return await _with_diagnostics(ctx, real, f"{verb} {rel(ctx, real)} ({len(data)} bytes)", before)


@tool
async def edit(
    path: str, old_string: str, new_string: str, replace_all: bool = False, *, ctx: ToolContext
) -> str | ToolOutput:
    """Replace an exact string in a file. `old_string` must occur exactly once unless
    `replace_all` is true; include enough surrounding lines to make it unique.

    Args:
        path: the file, relative to the working folder (or absolute inside it).
        old_string: the exact text to replace (whitespace and indentation included).
        new_string: the replacement text.
        replace_all: replace every occurrence instead of requiring a unique one.
    """
    real = guard(ctx, path, write=True)
    name = rel(ctx, real)
    _regular_file(real, name)
    if not old_string:
        raise ToolError("old_string is empty; use write to create or overwrite a file")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; nothing to change")
    before = None if ctx.lsp is None else await ctx.lsp.before_change(real)
    done = await asyncio.to_thread(_edit, ctx, real, name, old_string, new_string, replace_all)
    return await _with_diagnostics(ctx, real, done, before)


def _edit(
    ctx: ToolContext, real: Path, name: str, old_string: str, new_string: str, replace_all: bool
) -> str:
    base = base_of(ctx, real)
    fd = open_inside(base, real, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    if is_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{name} is a binary file ({len(data)} bytes); not edited")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{name} is not UTF-8 text; not edited") from None
    count = text.count(old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {name}; check whitespace and indentation (read the "
            "file first)"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {name}; add surrounding lines to make it "
            "unique, or set replace_all=true to replace them all"
        )
    new_text = text.replace(old_string, new_string)
    _write_file(ctx, base, real, new_text.encode("utf-8"))
    return f"edited {name}: replaced {count} occurrence{'s' if count > 1 else ''}"


def _write_file(ctx: ToolContext, base: Path, real: Path, data: bytes) -> bool:
    """`atomic_write`, a failure the file system gives (read-only, full, no permission, a
    name too long) said as the tool's error in one sentence naming the file, not as an
    `OSError:` line that reads like a crash."""
    try:
        return atomic_write(base, real, data)
    except ToolError:
        raise
    except OSError as e:
        why = e.strerror or str(e)
        raise ToolError(f"cannot write {rel(ctx, real)}: {why[:1].lower()}{why[1:]}") from None


async def _with_diagnostics(
    ctx: ToolContext, real: Path, done: str, before: object
) -> str | ToolOutput:
    """`done`, followed by the diagnostics block the language server gives for the changed
    file (`tether.lsp`), as a separate text part, when there is one."""
    if ctx.lsp is None:
        return done
    block = await ctx.lsp.after_change(real, before)
    if block is None:
        return done
    return ToolOutput([TextBlock(text=done), TextBlock(text=block)])


def open_dir_inside(root: Path, real: Path) -> int:
    """An `O_DIRECTORY` fd on `real` (from `resolve_inside`), every component opened from the
    root without following symlinks (the root itself for `real == root`).

    Raises:
        PathOutsideError: a component is (now) a symlink.
        OSError: the folder cannot be opened (e.g. it is no longer a folder).
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    if os.path.realpath(root) == str(real):
        return os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    parent, last = open_parent(root, real, create=False)
    try:
        return os.open(last, flags, dir_fd=parent)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PathOutsideError(f"{real} became a symlink; refused", str(real)) from e
        if e.errno == errno.ENOTDIR:
            raise ToolError(f"{real} is no longer a folder") from e
        raise
    finally:
        os.close(parent)


@tool(safe=True)
def ls(path: str = ".", *, ctx: ToolContext) -> str:
    """List a folder of the working folder, sorted; folders end with `/`, symlinks with `@`.

    Args:
        path: the folder, relative to the working folder (or absolute inside it).
    """
    real = guard(ctx, path)
    name = rel(ctx, real)
    if not os.path.isdir(real):
        if os.path.exists(real):
            return f"{name} (file, {os.path.getsize(real)} bytes)"
        raise ToolError(f"{name} does not exist")
    # listed through a folder fd opened from the root without following any symlink: a folder
    # swapped for a symlink to outside after the check fails here instead of listing outside
    dfd = open_dir_inside(base_of(ctx, real), real)
    try:
        with os.scandir(dfd) as it:
            entries = sorted(it, key=lambda e: e.name)
    finally:
        os.close(dfd)
    if not entries:
        return f"(empty directory: {name})"
    lines: list[str] = []
    for e in entries[:MAX_LS_ENTRIES]:
        if e.is_symlink():
            lines.append(e.name + "@")
        elif e.is_dir(follow_symlinks=False):
            lines.append(e.name + "/")
        else:
            lines.append(e.name)
    if len(entries) > MAX_LS_ENTRIES:
        lines.append(f"({len(entries) - MAX_LS_ENTRIES} more entries not shown)")
    return "\n".join(lines)
