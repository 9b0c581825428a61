"""One-time migration of older artifact layouts into `<root>/<session_id>/<kind>/`.

Owns: `migrate_artifacts` and its `MigrationReport`. `SessionStore` runs it when it is opened;
when nothing legacy exists it costs one `scandir` of the root.
Does not own: the current layout (`tether.session.layout`), session files (never touched).

Legacy layouts folded in (`<kind>` is `tool-results`, `tasks` or `mcp-warnings`):

1. `<root>/tool-results/<session_id>/<file>` → `<root>/<session_id>/tool-results/<file>`
   (skipped when `<root>/tool-results.jsonl` exists: then `<root>/tool-results/` is the
   artifact folder of a session named `tool-results`).
2. `<root>/<session_id>.artifacts/<kind>/<file>` → `<root>/<session_id>/<kind>/<file>`
   (skipped when `<root>/<session_id>.artifacts.jsonl` exists, for the same reason; sub-folders
   that are not a known kind are left alone).

Rules: an entry is never moved onto an existing destination (it is reported as a conflict and
left where it is, for the user to sort out); files are moved with `link` + `unlink` (atomic,
never replacing), folders with `rename` after an existence check; only legacy folders that end
up empty are removed; a second run moves nothing. Entries whose session-id folder name is not a
valid session id are left alone. Runs under a lock file (`<root>/.migrate.lock`) taken only
when legacy folders exist, so two processes opening stores at once do not race.
"""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from tether.errors import SessionError
from tether.session.layout import ARTIFACT_KINDS, SESSION_SUFFIX, validate_session_id

LEGACY_SUFFIX = ".artifacts"
"""Legacy layout 2: `<root>/<session_id>.artifacts/<kind>/`."""
LEGACY_TOOL_RESULTS = "tool-results"
"""Legacy layout 1: `<root>/tool-results/<session_id>/`."""
MIGRATE_LOCK = ".migrate.lock"


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationReport:
    """What `migrate_artifacts` did.

    Attributes:
        moved: how many entries (files or folders) were moved into the current layout.
        conflicts: legacy entries left in place because their destination already exists.
        removed_dirs: legacy folders removed because they ended up empty.
        errors: entries that could not be moved, with the OS error (left in place).
    """

    moved: int = 0
    conflicts: tuple[Path, ...] = ()
    removed_dirs: tuple[Path, ...] = ()
    errors: tuple[str, ...] = field(default=())


def _valid_id(name: str) -> bool:
    try:
        validate_session_id(name)
    except SessionError:
        return False
    return True


def _legacy_sources(root: Path, names: set[str]) -> list[tuple[Path, str, str, list[Path]]]:
    """(legacy kind folder, session id, kind, [legacy folders to try removing, innermost first])."""
    found: list[tuple[Path, str, str, list[Path]]] = []
    if LEGACY_TOOL_RESULTS in names and LEGACY_TOOL_RESULTS + SESSION_SUFFIX not in names:
        top = root / LEGACY_TOOL_RESULTS
        if top.is_dir() and not top.is_symlink():
            with os.scandir(top) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False) and _valid_id(e.name):
                        found.append((Path(e.path), e.name, "tool-results", [Path(e.path), top]))
    for name in sorted(names):
        if not name.endswith(LEGACY_SUFFIX) or name + SESSION_SUFFIX in names:
            continue
        sid = name[: -len(LEGACY_SUFFIX)]
        top = root / name
        if not _valid_id(sid) or top.is_symlink() or not top.is_dir():
            continue
        for kind in ARTIFACT_KINDS:
            sub = top / kind
            if sub.is_dir() and not sub.is_symlink():
                found.append((sub, sid, kind, [sub, top]))
    return found


def _move(src: Path, dst: Path) -> bool:
    """Move `src` to `dst` without ever replacing `dst`. False when `dst` exists."""
    if os.path.lexists(dst):
        return False
    if src.is_dir() and not src.is_symlink():
        os.rename(src, dst)  # a folder: checked above (rename would replace an empty dst)
        return True
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        os.rename(src, dst)  # no hard links here: checked above
        return True
    os.unlink(src)
    return True


def migrate_artifacts(root: Path) -> MigrationReport:
    """Fold the legacy artifact layouts under `root` into `<root>/<session_id>/<kind>/`.

    See the module docstring for the two legacy layouts and the rules. Safe to re-run.

    Args:
        root: the sessions folder (a missing folder is fine: nothing to do).

    Returns:
        A `MigrationReport`; an empty one costs one `scandir` of `root`.

    Raises:
        OSError: `root` exists but cannot be listed. Failures on single entries are reported
            in `errors`, not raised.
    """
    try:
        with os.scandir(root) as it:
            names = {e.name for e in it}
    except (FileNotFoundError, NotADirectoryError):
        return MigrationReport()
    if LEGACY_TOOL_RESULTS not in names and not any(n.endswith(LEGACY_SUFFIX) for n in names):
        return MigrationReport()
    from filelock import FileLock  # imported on use: listing sessions needs no lock

    with FileLock(root / MIGRATE_LOCK):
        return _migrate(root, names)


def _migrate(root: Path, names: set[str]) -> MigrationReport:
    moved = 0
    conflicts: list[Path] = []
    errors: list[str] = []
    removed: list[Path] = []
    for src_dir, sid, kind, cleanup in _legacy_sources(root, names):
        dst_dir = root / sid / kind
        try:
            dst_dir.parent.mkdir(mode=0o700, exist_ok=True)
            dst_dir.mkdir(mode=0o700, exist_ok=True)
            with os.scandir(src_dir) as it:
                entries = sorted(e.name for e in it)
        except OSError as e:
            errors.append(f"{src_dir}: {e}")
            continue
        for name in entries:
            src = src_dir / name
            try:
                if _move(src, dst_dir / name):
                    moved += 1
                else:
                    conflicts.append(src)
            except OSError as e:
                errors.append(f"{src}: {e}")
        for folder in cleanup:
            with contextlib.suppress(OSError):  # not empty (or gone): keep it
                os.rmdir(folder)
                removed.append(folder)
    return MigrationReport(
        moved=moved,
        conflicts=tuple(conflicts),
        removed_dirs=tuple(removed),
        errors=tuple(errors),
    )
