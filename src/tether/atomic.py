"""Atomic file writes: the one way tether replaces a file's content (a leaf of the bottom floor,
beside `errors`: it imports nothing of tether's, so every floor may use it).

Owns: `write_atomic` (on Linux an unnamed file in the same folder, written, optionally fsynced,
then linked at the path; elsewhere, or when the host refuses, a temporary file `os.replace`d
onto the path; nothing left behind on any failure) and its spare files (`ahead=True`: a worker
thread keeps unnamed files opened ahead in a folder whose file creation is slow, `stop_ahead`
ends it). Does not own: locking (the callers that read, change and write a file hold a
`filelock.FileLock` around it), folder layout.

Who writes with it and how:

- the output gate (`tether.tools.exec.persist`): mode 0o600, not durable (the session writer's
  `sync()` fsyncs the saved files before the session file), the folder made on demand (0o700),
  with spare files ahead (the session writer's `close()` stops their thread);
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
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["WRITE_CHUNK_BYTES", "stop_ahead", "write_atomic"]

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


def _link_unnamed(fd: int, path: Path, *, spare: bool = False) -> bool:
    """Give the unnamed file `fd` the name `path`, replacing what is there. False when the
    host cannot link it (then `unnamed_files` is turned off and nothing was named). A `spare`
    (opened ahead, `_Spares`) that cannot be linked says nothing of the host (its folder may
    have been removed since): False, and `unnamed_files` stays as it was."""
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
        if spare:
            return False
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


SPARES_AHEAD = 2
"""Unnamed files a folder's worker keeps opened ahead (`write_atomic(ahead=True)`)."""

AHEAD_AFTER_S = 100e-6
"""A folder gets a worker once creating a file in it (`open(O_TMPFILE)`) has cost the calling
thread more CPU than this: on this VM's ext4 (no journal) a folder whose block group holds many
recently deleted inodes costs 0.5-0.7 ms a file, scanned past one by one, against ~0.02 ms in
others (`bench/turn_overhead.py`); a cheap folder never gets one."""

SPARES_IDLE_S = 30.0
"""A worker asked for nothing this long closes its spare files and ends."""


class _Spares:
    """Unnamed files opened ahead in one folder by a worker thread: the creation of a file's
    inode (the costly part of a new file, `AHEAD_AFTER_S`) happens off the writer's thread;
    `write_atomic` writes a spare and links it (a directory entry). A spare that is never
    linked vanishes when it is closed or the process dies: nothing is left behind.

    Each `take` that gets a file asks for the next one; the worker ends on `stop`, after
    `SPARES_IDLE_S` without a request, or when the host refuses an unnamed file (the callers
    then open their own, as without spares)."""

    def __init__(self, folder: Path, mode: int) -> None:
        self.folder = folder
        self.mode = mode
        self.pid = os.getpid()
        self._ready: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._wanted = threading.Semaphore(SPARES_AHEAD)
        self._stopped = False
        self.thread = threading.Thread(
            target=self._work, name=f"tether-spare-files:{folder.name}", daemon=True
        )
        self.thread.start()

    def _work(self) -> None:
        assert _O_TMPFILE is not None
        try:
            while self._wanted.acquire(timeout=SPARES_IDLE_S) and not self._stopped:
                try:
                    fd = os.open(self.folder, os.O_WRONLY | _O_TMPFILE, self.mode)
                except OSError:
                    return  # the callers' own open decides what the host can do
                self._ready.put(fd)
                if self._stopped:  # `stop` may have drained the queue before this put
                    break
        finally:
            self._stopped = True
            _forget(self)
            self._drain()

    def _drain(self) -> None:
        while True:
            try:
                fd = self._ready.get_nowait()
            except queue.Empty:
                return
            with contextlib.suppress(OSError):
                os.close(fd)

    def take(self) -> int | None:
        """A spare unnamed file (the caller owns and closes it), or None when none is ready."""
        if self.pid != os.getpid():  # a forked child: the parent may link these very files
            return None
        try:
            fd = self._ready.get_nowait()
        except queue.Empty:
            return None
        self._wanted.release()  # the next one
        return fd

    def stop(self) -> None:
        """End the worker and close the spares (the worker closes those it opens later)."""
        self._stopped = True
        self._wanted.release()  # wake it
        if self.pid == os.getpid():
            self._drain()


_spares: dict[tuple[Path, int], _Spares] = {}
"""The folders' workers, by (folder, mode)."""
_spares_lock = threading.Lock()


def _forget(spares: _Spares) -> None:
    with _spares_lock:
        key = (spares.folder, spares.mode)
        if _spares.get(key) is spares:
            del _spares[key]


def stop_ahead(folder: Path) -> None:
    """End the spare-file worker of `folder` (every mode), if any, and close its spare files
    (the session writer's `close()` calls it for its saved outputs' folder: no thread outlives
    its session)."""
    with _spares_lock:
        found = [s for (f, _m), s in _spares.items() if f == folder]
        for s in found:
            del _spares[(s.folder, s.mode)]
    for s in found:
        s.stop()


def _forget_all_in_child() -> None:
    """After a fork the workers are the parent's: the child starts with none."""
    global _spares_lock
    _spares.clear()
    _spares_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all_in_child)


def _open_ahead(folder: Path, mode: int, folder_mode: int | None) -> tuple[int | None, bool]:
    """(an unnamed file in `folder`, whether it is a spare): a spare when the folder's worker
    has one ready, else one opened here (None when the host cannot, as `_open_unnamed`); a
    slow open here starts the folder's worker."""
    spares = _spares.get((folder, mode))
    if spares is not None:
        fd = spares.take()
        if fd is not None:
            return fd, True
    t0 = time.thread_time()
    fd = _open_unnamed(folder, mode, folder_mode)
    if fd is not None and spares is None and time.thread_time() - t0 > AHEAD_AFTER_S:
        with _spares_lock:
            if (folder, mode) not in _spares:
                _spares[(folder, mode)] = _Spares(folder, mode)
    return fd, False


def write_atomic(
    path: Path,
    data: bytes | bytearray | memoryview,
    *,
    durable: bool = True,
    mode: int = 0o644,
    folder_mode: int | None = None,
    ahead: bool = False,
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
        ahead: a caller that writes many new files in `path`'s folder (the output gate): when
            creating a file there proves slow (`AHEAD_AFTER_S`), a worker thread keeps unnamed
            files opened ahead there (`_Spares`) and the write takes one when ready; the
            caller ends the worker with `stop_ahead(folder)`. Same result, same guarantees.

    Raises:
        OSError: the write failed (`path` is unchanged and nothing is left behind).
    """
    folder = path.parent
    spare = False
    if not unnamed_files:
        fd = None
    elif ahead:
        fd, spare = _open_ahead(folder, mode, folder_mode)
    else:
        fd = _open_unnamed(folder, mode, folder_mode)
    if fd is not None:
        try:
            _write_all(fd, data, durable=durable)
            named = _link_unnamed(fd, path, spare=spare)
        finally:
            os.close(fd)
        if not named:  # a spare's folder is gone, or the host refused the link
            if spare:
                stop_ahead(folder)
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
