"""Atomic file writes: the one way tether replaces a file's content (a leaf of the bottom floor,
beside `errors`: it imports nothing of tether's, so every floor may use it).

Owns: `write_atomic` (on Linux an unnamed file in the same folder, written, optionally fsynced,
then linked at the path; elsewhere, or when the host refuses, a temporary file `os.replace`d
onto the path; nothing left behind on any failure). Does not own: locking (the callers that
read, change and write a file hold a `filelock.FileLock` around it), folder layout.

Who writes with it and how:

- the output gate (`tether.tools.exec.persist`): mode 0o600, not durable (the session writer's
  `sync()` fsyncs the saved files before the session file), the folder made on demand (0o700);
- the settings, trust, permissions, credentials, Jobs and model-catalog files: durable (a
  `tether config set` or a login survives a power loss), mode 0o644 or 0o600 for secrets;
- the embedded model's prompt cache and load verdicts, and the checkpoints' shadow repository
  (its objects read-only, 0o444): mode 0o600, not durable, as before (a power loss may lose
  the newest entry; a killed process never leaves a torn one).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["WRITE_CHUNK_BYTES", "write_atomic"]

WRITE_CHUNK_BYTES = 1 << 20
"""`write_atomic` writes in chunks of this many bytes."""

TEMP_NAME_CHARS = 100
"""At most this many characters of the target's name go into its temp file's name (a name
near the file system's 255-byte limit would otherwise have no legal temp name)."""

_after_chunk: Callable[[int], None] | None = None
"""Test hook: called with the bytes written so far after each chunk of `write_atomic`."""

_temp_names = itertools.count()
"""Suffixes of this process's temp file names (`_open_temp`)."""

_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _open_temp(folder: Path, name: str, mode: int, folder_mode: int | None) -> tuple[int, str]:
    """Create `.<name>.<pid>-<n>.tmp` in `folder` exclusively (permissions `mode`, narrowed by
    the umask); returns its fd and path. A counter, not `tempfile.mkstemp`'s random names:
    mkstemp spent ~25 µs per call drawing 8 random letters, a tenth of a turn
    (bench/turn_overhead.py). A name already taken (a leftover of a killed process with the
    same pid) moves on to the next number. With `folder_mode`, a missing folder is created
    (with that mode) when the open finds it missing.

    Raises:
        OSError: the folder is missing (without `folder_mode`), cannot be created or written.
    """
    pid = os.getpid()
    made = False
    while True:
        tmp = f"{folder}{os.sep}.{name[:TEMP_NAME_CHARS]}.{pid}-{next(_temp_names)}.tmp"
        try:
            return os.open(tmp, _OPEN_FLAGS, mode), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            if made or folder_mode is None:
                raise
            folder.mkdir(mode=folder_mode, parents=True, exist_ok=True)
            made = True


_O_TMPFILE: int | None = getattr(os, "O_TMPFILE", None)
"""Linux's flag for an unnamed file in a folder (`open(2)`), None elsewhere."""

unnamed_files = _O_TMPFILE is not None
"""Whether `write_atomic` writes an unnamed file and links it into place (Linux's `O_TMPFILE`
and `linkat` of `/proc/self/fd/N`). Turned off for the process the first time the host refuses
either (a file system without `O_TMPFILE`, no `/proc`): the named temp file and `os.replace`
then do the work. Tests turn it off to check that path."""

_REAL_FAILURES = (errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
"""Errors that say the write itself cannot succeed (raised), not that the host lacks a way."""


def _write_all(fd: int, data: bytes | bytearray | memoryview, *, durable: bool) -> None:
    view = memoryview(data).cast("B")
    written = 0
    while written < len(view):
        end = min(written + WRITE_CHUNK_BYTES, len(view))
        while written < end:
            written += os.write(fd, view[written:end])
        if _after_chunk is not None:
            _after_chunk(written)
    if durable:
        os.fsync(fd)


def _open_unnamed(folder: Path, mode: int, folder_mode: int | None) -> int | None:
    """An unnamed file (permissions `mode`) in `folder`, or None when the host cannot make one
    (then `unnamed_files` is turned off). With `folder_mode`, a missing folder is created."""
    global unnamed_files
    assert _O_TMPFILE is not None
    made = False
    while True:
        try:
            return os.open(folder, os.O_WRONLY | _O_TMPFILE, mode)
        except FileNotFoundError:
            if made or folder_mode is None:
                raise
            folder.mkdir(mode=folder_mode, parents=True, exist_ok=True)
            made = True
        except OSError as e:  # EOPNOTSUPP, EISDIR (kernels before 3.11), EINVAL
            if e.errno in _REAL_FAILURES:
                raise
            unnamed_files = False
            return None


def _link_unnamed(fd: int, path: Path) -> bool:
    """Give the unnamed file `fd` the name `path`, replacing what is there. False when the
    host cannot link it (then `unnamed_files` is turned off and nothing was named)."""
    global unnamed_files
    source = f"/proc/self/fd/{fd}"
    try:
        # linkat(2) with AT_SYMLINK_FOLLOW: CPython calls linkat only when a dir fd is given
        # (ignored for these absolute paths); plain link(2) would link the /proc entry itself
        os.link(source, path, src_dir_fd=fd, follow_symlinks=True)
        return True
    except FileExistsError:
        pass
    except OSError as e:  # ENOENT (no /proc), EXDEV, EPERM, EINVAL
        if e.errno in (*_REAL_FAILURES, errno.EMLINK):
            raise
        unnamed_files = False
        return False
    # `path` exists: name the file beside it, then replace it in one rename
    name = path.name[:TEMP_NAME_CHARS]
    while True:
        tmp = f"{path.parent}{os.sep}.{name}.{os.getpid()}-{next(_temp_names)}.tmp"
        try:
            os.link(source, tmp, src_dir_fd=fd, follow_symlinks=True)
            break
        except FileExistsError:
            continue
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return True


def write_atomic(
    path: Path,
    data: bytes | bytearray | memoryview,
    *,
    durable: bool = True,
    mode: int = 0o644,
    folder_mode: int | None = None,
) -> None:
    """Replace `path`'s content by `data` so that `path` is either unchanged (or absent) or
    complete, even if the process is killed mid-write. On Linux the bytes go to an unnamed
    file in the same folder (`O_TMPFILE`, permissions `mode`), which is then linked at `path`
    (or, when `path` exists, linked beside it and `os.replace`d onto it): a kill leaves no
    file behind at all (not even a temp file to clean up), and a new file costs a little less
    than a create-and-rename on ext4 (2 KB files, interleaved batches on this VM: median 0.063
    against 0.074 ms wall, 0.074 against 0.087 ms CPU; every turn of
    `bench/turn_overhead.py` saves one).
    Elsewhere, or once the host refuses (`unnamed_files`), a temp file in the same folder
    (named `.<name>.<pid>-<n>.tmp`, created exclusively with permissions `mode`, so it never
    exists with wider ones; the umask can only narrow them) is `os.replace`d onto `path`.
    Written in `WRITE_CHUNK_BYTES` chunks.

    Args:
        durable: fsync the file before it is named and the folder after, so the new content
            also survives a power loss. Without it a killed process still leaves the old or the
            new content, never a mix, but a power loss may lose the write.
        mode: the new file's permission bits (before the umask).
        folder_mode: create a missing folder with this mode (missing parents above it with the
            default mode); None: a missing folder is an error.

    Raises:
        OSError: the write failed (`path` is unchanged and nothing is left behind).
    """
    folder = path.parent
    fd = _open_unnamed(folder, mode, folder_mode) if unnamed_files else None
    if fd is not None:
        try:
            _write_all(fd, data, durable=durable)
            named = _link_unnamed(fd, path)
        finally:
            os.close(fd)
        if not named:  # the host refused the link: the named temp file, from now on
            write_atomic(path, data, durable=durable, mode=mode, folder_mode=folder_mode)
            return
    else:
        fd, tmp = _open_temp(folder, path.name, mode, folder_mode)
        try:
            try:
                _write_all(fd, data, durable=durable)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    if not durable:
        return
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
