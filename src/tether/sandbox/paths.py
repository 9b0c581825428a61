"""Path containment: every file a tool touches must be inside the working folder, by REAL path.

Owns: `resolve_inside` (containment by real path: symlinks in every component, including the final
one and dangling links, are resolved before the check), `real_path`, `is_inside`, and the
race-aware open helpers `open_parent` / `open_inside` / `atomic_write` (every component opened
from the root with no-follow, openat-style, so a symlink swapped in after the check cannot
redirect the operation).
Does not own: what the policy refuses inside the folder (`tether.sandbox.policy`), OS-level
sandboxing (`tether.sandbox.base`: `bash` is confined by the OS sandbox instead).

Raises `tether.errors.PathOutsideError` for a path outside the root (or a component that turned
into a symlink since the check).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from tether.errors import PathOutsideError

_MAX_LINK_HOPS = 40


def is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def real_path(path: str) -> str:
    """The real path of absolute `path`: each existing component with its symlinks resolved
    (dangling ones too, to their target), the non-existing rest appended lexically.

    Raises:
        PathOutsideError: a symlink loop (more than 40 hops).
    """
    pending = path.split(os.sep)[::-1]
    resolved = os.sep
    hops = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, name)
        try:
            st = os.lstat(candidate)
        except OSError:
            resolved = candidate  # does not exist (or unreadable): keep it lexically
            continue
        if not stat.S_ISLNK(st.st_mode):
            resolved = candidate
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS:
            raise PathOutsideError(f"too many symlink levels (a loop?) at {candidate}", candidate)
        target = os.readlink(candidate)
        if target.startswith(os.sep):
            resolved = os.sep
        pending.extend(target.split(os.sep)[::-1])
    return resolved


def resolve_inside(root: Path | str, user_path: str) -> Path:
    """Resolve `user_path` (relative to `root`, or absolute) to a real path inside `root`.

    The root is resolved to its real path; the target is resolved component by component (the
    real path of its deepest existing ancestor plus the remaining components), following every
    symlink, including one at the final component and dangling links. Use the returned path, not
    `user_path`, for the operation.

    Args:
        root: the working folder.
        user_path: the path the model gave; `~` paths are refused, `..` is allowed only while
            the result stays inside.

    Returns:
        The real absolute path, inside (or equal to) the real root.

    Raises:
        PathOutsideError: the resolved path is outside the root (the message names it), the path
            starts with `~`, contains a NUL byte, or runs into a symlink loop.
    """
    if "\0" in user_path:
        raise PathOutsideError(f"path contains a NUL byte: {user_path!r}")
    if user_path.startswith("~"):
        raise PathOutsideError(
            f"path {user_path!r} refused: `~` is not expanded; give a path inside the working "
            f"folder {root}"
        )
    root_real = os.path.realpath(root)
    joined = user_path if os.path.isabs(user_path) else os.path.join(root_real, user_path)
    resolved = real_path(joined)
    if not is_inside(resolved, root_real):
        raise PathOutsideError(
            f"path {user_path!r} resolves to {resolved}, outside the working folder {root_real}; "
            "refused",
            resolved,
        )
    return Path(resolved)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_parent(root: Path, path: Path, *, create: bool) -> tuple[int, str]:
    """Open the folder holding `path` by walking from the root one component at a time with
    `O_NOFOLLOW` (openat), so no symlink swapped in after `resolve_inside` can redirect it.

    Returns:
        (a directory fd the caller closes, the final component's name).

    Raises:
        PathOutsideError: `path` is not below the root, or a component became a symlink.
        OSError: a component is missing (and `create` is False) or cannot be opened.
    """
    root_real = os.path.realpath(root)
    rel = os.path.relpath(path, root_real)
    parts = rel.split(os.sep)
    if rel in (".", "") or ".." in parts or os.path.isabs(rel):
        raise PathOutsideError(f"{path} is not below the working folder {root_real}", str(path))
    dfd = os.open(root_real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, name in enumerate(parts[:-1]):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=dfd)
            try:
                nfd = os.open(name, _DIR_FLAGS, dir_fd=dfd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(
                    os.path.join(root_real, *parts[: i + 1])
                ):
                    raise PathOutsideError(
                        f"{os.path.join(root_real, *parts[: i + 1])} became a symlink; refused"
                    ) from e
                raise
            os.close(dfd)
            dfd = nfd
    except BaseException:
        os.close(dfd)
        raise
    return dfd, parts[-1]


def open_inside(root: Path, path: Path, flags: int, mode: int = 0o666) -> int:
    """`os.open` a path returned by `resolve_inside` race-free: every folder is opened from the
    root with no-follow (openat), and so is the final component.

    Returns:
        The file descriptor (the caller closes it).

    Raises:
        PathOutsideError: a component turned into a symlink since the check.
        OSError: the open failed.
    """
    dfd, name = open_parent(root, path, create=False)
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PathOutsideError(f"{path} became a symlink; refused", str(path)) from e
        raise
    finally:
        os.close(dfd)


def atomic_write(root: Path, path: Path, data: bytes) -> bool:
    """Write `data` to `path` (from `resolve_inside`) via a temp file and rename in the same
    folder, keeping an existing file's permission bits; missing parent folders are created.
    Every step goes through directory fds opened without following symlinks (see `open_inside`).
    This is why the file tools do not use `tether.atomic.write_atomic` (tether's own files):
    a path inside the working folder is the model's to name, so a component swapped for a
    symlink between the check and the write must not lead the write outside.

    Returns:
        True when the file was created, False when it was replaced.

    Raises:
        PathOutsideError: a component turned into a symlink since the check.
        IsADirectoryError: `path` is a directory.
        OSError: the write failed.
    """
    dfd, name = open_parent(root, path, create=True)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path} is a directory")
        # a short name of its own: `.NAME.…` was longer than a 255-byte NAME the folder takes
        tmp = f".tether-{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o666, dir_fd=dfd)
        except OSError as e:  # named by the file asked for, not the temp file (read-only …)
            raise OSError(e.errno, e.strerror, str(path)) from None
        try:
            try:
                if st is not None and stat.S_ISREG(st.st_mode):
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            # rename replaces a symlink at `name` itself; it never follows it
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)
    return st is None
