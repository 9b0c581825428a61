"""Atomic file writes: the one way tether replaces a file's content (a leaf of the bottom floor,
beside `errors`: it imports nothing of tether's, so every floor may use it).

Owns: `write_atomic` (a temporary file in the same folder, written, optionally fsynced, then
`os.replace`d onto the path; removed on any failure). Does not own: locking (the callers that
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


def write_atomic(
    path: Path,
    data: bytes | bytearray | memoryview,
    *,
    durable: bool = True,
    mode: int = 0o644,
    folder_mode: int | None = None,
) -> None:
    """Replace `path`'s content by `data` so that `path` is either unchanged (or absent) or
    complete, even if the process is killed mid-write: a temp file in the same folder (named
    `.<name>.<pid>-<n>.tmp`, created exclusively with permissions `mode`, so it never exists
    with wider ones; the umask can only narrow them), written in `WRITE_CHUNK_BYTES` chunks,
    `os.replace`d onto `path`.

    Args:
        durable: fsync the file before the rename and the folder after it, so the new content
            also survives a power loss. Without it a killed process still leaves the old or the
            new content, never a mix, but a power loss may lose the write.
        mode: the new file's permission bits (before the umask).
        folder_mode: create a missing folder with this mode (missing parents above it with the
            default mode); None: a missing folder is an error.

    Raises:
        OSError: the write failed (`path` is unchanged and the temp file removed).
    """
    folder = path.parent
    fd, tmp = _open_temp(folder, path.name, mode, folder_mode)
    try:
        try:
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
