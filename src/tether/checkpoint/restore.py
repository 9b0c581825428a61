"""Putting a working folder's files back to a snapshot of its shadow repository.

Owns: `restore` (changed files written back, deleted ones recreated, files created since
removed with the folders that leaves empty; the paths a caller keeps or protects untouched;
a path under a symlinked folder refused) and `RestoreReport`.
Does not own: snapshots (`tether.checkpoint.shadow`), which snapshot to go back to
(`tether.checkpoint.timeline`, `tether.checkpoint.rewind`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tether.checkpoint.shadow import EXEC, GITLINK, SYMLINK, Change, ShadowRepo


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreReport:
    """What `ShadowRepo.restore` did.

    Attributes:
        written: paths written back (changed files restored, deleted files recreated).
        removed: paths removed (files created since the snapshot).
        kept: paths left as they are because the caller protected them.
        refused: paths not restored, with the reason (a folder on the way is a symlink out of
            the working folder, a nested repository).
    """

    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()


def restore(
    repo: ShadowRepo,
    current: str,
    target: str,
    *,
    keep: Iterable[str] = (),
    protect: Iterable[str] = (),
) -> RestoreReport:
    """Make the working folder's files those of snapshot `target`, given that snapshot
    `current` is the folder now: changed files are written back, deleted ones recreated,
    files created since removed (and the folders that leaves empty). Files the ignore rules
    exclude are never touched.

    Args:
        current: a snapshot of the folder taken just before.
        target: the snapshot to go back to.
        keep: paths to leave as they are (changed outside tether since; `kept`).
        protect: paths never removed (left out of `target` for their size).

    Raises:
        CheckpointError: git failed or an unknown snapshot.
    """
    kept_set, protected = set(keep), set(protect)
    changes = repo.changes(current, target)
    written: list[str] = []
    removed: list[str] = []
    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    todo: list[Change] = []
    for change in changes:
        if change.path in kept_set or (change.kind == "deleted" and change.path in protected):
            kept.append(change.path)
        else:
            todo.append(change)
    for change in (c for c in todo if c.kind == "deleted"):  # removals first: a file may
        why = _unsafe(repo, change.path)  # stand where a folder must be recreated
        if why is not None:
            refused.append((change.path, why))
            continue
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            os.unlink(repo.root / change.path)
        removed.append(change.path)
        _prune(repo, Path(change.path).parent)
    writes = [c for c in todo if c.kind != "deleted"]
    blobs = repo.blobs(c.blob for c in writes if c.mode != GITLINK)
    for change in writes:
        if change.mode == GITLINK:
            refused.append((change.path, "a nested repository is not restored"))
            continue
        why = _unsafe(repo, change.path)
        if why is not None:
            refused.append((change.path, why))
            continue
        _write(repo, change, blobs[change.blob])
        written.append(change.path)
    return RestoreReport(
        written=tuple(written), removed=tuple(removed), kept=tuple(kept), refused=tuple(refused)
    )


def _unsafe(repo: ShadowRepo, rel: str) -> str | None:
    """Why `rel` must not be written or removed (a folder on its way is a symlink or not a
    folder we can replace), or None."""
    here = repo.root
    for part in Path(rel).parts[:-1]:
        here = here / part
        try:
            st = os.lstat(here)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            return f"{here.relative_to(repo.root)} is a symlink"
        if not stat.S_ISDIR(st.st_mode):
            return None  # a file where a folder must go: replaced by `_write`
    return None


def _write(repo: ShadowRepo, change: Change, data: bytes) -> None:
    path = repo.root / change.path
    parent = path.parent
    for up in [*reversed(Path(change.path).parents)][1:]:  # a file standing in the way
        spot = repo.root / up
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            if not stat.S_ISDIR(os.lstat(spot).st_mode):
                os.unlink(spot)
    parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
    tmp = parent / f".{path.name}.tether-restore.tmp"
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(tmp)
    if change.mode == SYMLINK:
        os.symlink(os.fsdecode(data), tmp)
    else:
        mode = 0o777 if change.mode == EXEC else 0o666
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    os.replace(tmp, path)


def _prune(repo: ShadowRepo, folder: Path) -> None:
    """Remove `folder` and its parents while they are empty (never the root)."""
    while folder.parts:
        with contextlib.suppress(OSError):
            os.rmdir(repo.root / folder)
        if (repo.root / folder).exists():
            return
        folder = folder.parent
