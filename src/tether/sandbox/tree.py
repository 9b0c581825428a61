"""What a command must not change or read in the working folder, found by a cached walk.

Owns: `scan_tree` (every `.git` at any depth, and every file or folder the read deny list
refuses: the dotenv files), `TreeScan`, and `TrustRoots` (the trust roots present before a
command, and `sweep`, which moves aside what the command created where a trust root belongs).
Does not own: the deny list (`tether.sandbox.policy.PathPolicy`), mounting (the sandboxes).

Why a walk: the OS sandbox makes a path read-only (or empty) by mounting over it, so it must
know the paths before the command starts. A nested repository's `.git` (`sub/.git/hooks/…` run
when the user runs git there) is read-only like the root's, and a dotenv file is covered by an
empty file, only if the walk found it.

Cost: the walk is cached per root and folder: a folder whose mtime and inode are unchanged
(and not modified in the last 2 s, where a coarse mtime could hide a change) is not listed
again, so a repeat scan costs one `lstat` per folder (~7 µs; 3,264 folders: ~23 ms).

What cannot be mounted over does not exist yet: a `.git`, `.tether` or tool folder that a
command creates. `TrustRoots.sweep`, run once the command and everything it started have
ended, renames each such new entry to `<name>.refused-by-tether` (`-2`, `-3`, … when taken), so
git and tether never load it and nothing is lost.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

GIT = ".git"
QUARANTINE_SUFFIX = ".refused-by-tether"
RACY_NS = 2_000_000_000
"""A folder modified this recently (ns) is listed again even if its mtime looks unchanged."""

Denied = Callable[[str], bool]
"""True when a root-relative path (`/`-separated) is one the read deny list refuses."""


@dataclass(frozen=True, slots=True)
class TreeScan:
    """What `scan_tree` found (real absolute paths, sorted).

    Attributes:
        git: every entry named `.git` (folder, file or symlink) below the root, the root's
            own included.
        secrets: every regular file or folder the deny list refuses (a folder is not walked
            into); symlinks are left out (their target is what is read, checked on its own).
    """

    git: tuple[Path, ...] = ()
    secrets: tuple[Path, ...] = ()


@dataclass(slots=True)
class _Folder:
    mtime_ns: int
    ino: int
    subdirs: tuple[str, ...]
    git: tuple[str, ...]
    secrets: tuple[str, ...]


@dataclass(slots=True)
class _Cache:
    folders: dict[str, _Folder] = field(default_factory=dict[str, _Folder])
    lock: threading.Lock = field(default_factory=threading.Lock)


_caches: dict[tuple[str, object], _Cache] = {}
_caches_lock = threading.Lock()


def scan_tree(root: Path, denied: Denied | None, key: object = None) -> TreeScan:
    """Walk `root` (not following symlinks, not into `.git` folders) for `.git` entries and,
    with `denied`, for what the deny list refuses.

    Args:
        root: the working folder (a real path).
        denied: the read deny list as a predicate over root-relative paths, or None.
        key: identifies `denied` for the cache (e.g. the policy); scans with another key use
            another cache.

    Returns:
        A `TreeScan`; folders that cannot be listed are skipped.
    """
    top = os.path.realpath(root)
    with _caches_lock:
        cache = _caches.setdefault((top, key if denied is not None else None), _Cache())
    git: list[str] = []
    secrets: list[str] = []
    with cache.lock:
        seen: set[str] = set()
        stack = [top]
        now = time.time_ns()
        while stack:
            folder = stack.pop()
            seen.add(folder)
            entry = _folder(cache, top, folder, denied, now)
            if entry is None:
                continue
            git += entry.git
            secrets += entry.secrets
            stack += entry.subdirs
        for gone in cache.folders.keys() - seen:
            del cache.folders[gone]
    return TreeScan(git=_paths(git), secrets=_paths(secrets))


def _paths(items: Iterable[str]) -> tuple[Path, ...]:
    return tuple(Path(p) for p in sorted(set(items)))


def _folder(cache: _Cache, top: str, folder: str, denied: Denied | None, now: int) -> _Folder | None:
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    known = cache.folders.get(folder)
    fresh = now - st.st_mtime_ns > RACY_NS
    if known is not None and fresh and (known.mtime_ns, known.ino) == (st.st_mtime_ns, st.st_ino):
        return known
    subdirs: list[str] = []
    git: list[str] = []
    secrets: list[str] = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name == GIT:
                    git.append(e.path)
                    continue
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                    plain = is_dir or e.is_file(follow_symlinks=False)
                except OSError:
                    continue
                rel = os.path.relpath(e.path, top).replace(os.sep, "/")
                if denied is not None and plain and denied(rel):
                    secrets.append(e.path)
                elif is_dir:
                    subdirs.append(e.path)
    except OSError:
        return None
    made = _Folder(st.st_mtime_ns, st.st_ino, tuple(subdirs), tuple(git), tuple(secrets))
    cache.folders[folder] = made
    return made


@dataclass(frozen=True, slots=True)
class TrustRoots:
    """The trust roots of a working folder before a command: what `sweep` compares with.

    Attributes:
        root: the working folder (a real path).
        git: the `.git` entries that existed (`TreeScan.git`).
        fixed: the root's `.tether` and the tool folders (whether they existed or not).
        present: those of `fixed` that existed.
        denied / key: the deny list used for the walk (the cache is shared with it).
    """

    root: Path
    git: frozenset[Path]
    fixed: tuple[Path, ...]
    present: frozenset[Path]
    denied: Denied | None = None
    key: object = None

    def sweep(self) -> tuple[str, ...]:
        """Move aside every `.git` (any depth) and every `fixed` path that did not exist
        before and exists now (module docstring); call it once the command has ended.

        Returns:
            The root-relative paths moved aside (their new names end in `.refused-by-tether`).
        """
        now = scan_tree(self.root, self.denied, self.key)
        new = [p for p in now.git if p not in self.git]
        new += [p for p in self.fixed if p not in self.present and os.path.lexists(p)]
        moved: list[str] = []
        for path in sorted(new, key=lambda p: len(p.parts), reverse=True):
            n = 1
            while True:
                aside = Path(f"{path}{QUARANTINE_SUFFIX}{'' if n == 1 else f'-{n}'}")
                if not os.path.lexists(aside):
                    break
                n += 1
            try:
                os.rename(path, aside)
            except OSError:
                continue
            moved.append(os.path.relpath(path, self.root))
        return tuple(moved)


def trust_roots(
    root: Path, scan: TreeScan, fixed: Iterable[Path], denied: Denied | None, key: object
) -> TrustRoots:
    """The `TrustRoots` of `root` now, from its `scan` and its `fixed` trust roots."""
    fixed_t = tuple(fixed)
    present = frozenset(p for p in fixed_t if os.path.lexists(p))
    return TrustRoots(
        root=root,
        git=frozenset(scan.git),
        fixed=fixed_t,
        present=present,
        denied=denied,
        key=key,
    )
