"""One-time migration of older artifact layouts into `<root>/<session_id>/<kind>/`, and where
each session's legacy folders are (so `SessionStore.delete` reclaims them and the `read` tool
still reads a legacy persisted output).

Owns: `migrate_artifacts` and its `MigrationReport`; `legacy_folders` and
`legacy_tool_results` (one session's legacy folders). `SessionStore` runs the migration when it
is opened; when nothing legacy exists it costs one `scandir` of the root.
Does not own: the current layout (`tether.session.layout`), session files (never touched),
deleting (`tether.session.store`).

Legacy layouts (`<kind>` is `tool-results`, `tasks` or `mcp-warnings`):

1. `<root>/tool-results/<session_id>/<file>` (not a legacy folder when `<root>/tool-results.jsonl`
   exists: then `<root>/tool-results/` is the artifact folder of a session named
   `tool-results`).
2. `<root>/<session_id>.artifacts/<kind>/<file>` → `<root>/<session_id>/<kind>/<file>`
   (not legacy when `<root>/<session_id>.artifacts.jsonl` exists, for the same reason;
   sub-folders that are not a known kind are left alone).

Persisted tool outputs (layout 1, and the `tool-results` kind of layout 2) are never moved:
the stub stored in the session names its file by absolute path, so a moved file could no
longer be read. They stay where they are, readable by the `read` tool of a resumed session,
until the session is deleted. `tasks` and `mcp-warnings` of layout 2 are folded in.

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


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def legacy_folders(root: Path, session_id: str) -> tuple[Path, ...]:
    """The legacy artifact folders of one session that exist (module docstring): what deleting
    the session reclaims besides `<root>/<session_id>/`. Symlinks are not followed (a
    symlinked legacy folder is listed; unlinking it is the caller's business)."""
    out: list[Path] = []
    one = root / LEGACY_TOOL_RESULTS / session_id
    if not (root / (LEGACY_TOOL_RESULTS + SESSION_SUFFIX)).exists() and os.path.lexists(one):
        out.append(one)
    two = root / (session_id + LEGACY_SUFFIX)
    if not (root / (two.name + SESSION_SUFFIX)).exists() and os.path.lexists(two):
        out.append(two)
    return tuple(out)


def legacy_tool_results(session_dir: Path) -> tuple[Path, ...]:
    """The legacy folders holding persisted outputs of the session whose artifact folder is
    `session_dir` (`<root>/<session_id>`), existing real folders only."""
    root, sid = session_dir.parent, session_dir.name
    out: list[Path] = []
    for folder in legacy_folders(root, sid):
        sub = folder / "tool-results" if folder.name.endswith(LEGACY_SUFFIX) else folder
        if _real_dir(folder) and _real_dir(sub):
            out.append(sub)
    return tuple(out)


def _legacy_sources(root: Path, names: set[str]) -> list[tuple[Path, str, str, list[Path]]]:
    """(legacy kind folder, session id, kind, [legacy folders to try removing, innermost first]);
    persisted tool outputs are not sources (module docstring)."""
    found: list[tuple[Path, str, str, list[Path]]] = []
    for name in sorted(names):
        if not name.endswith(LEGACY_SUFFIX) or name + SESSION_SUFFIX in names:
            continue
        sid = name[: -len(LEGACY_SUFFIX)]
        top = root / name
        if not _valid_id(sid) or top.is_symlink() or not top.is_dir():
            continue
        for kind in ARTIFACT_KINDS:
            if kind == "tool-results":
                continue
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
    if not any(n.endswith(LEGACY_SUFFIX) for n in names):
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
