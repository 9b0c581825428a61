"""Deleting a session's files best effort: what was removed and what could not be.

Owns: `DeleteReport` and `remove_all` (remove paths and the trees below them, going on past a
failure, never following a symlink).
Does not own: which paths make up a session (`tether.session.store.SessionStore.delete`,
`tether.session.migrate.legacy_folders`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteReport:
    """What `SessionStore.delete` removed.

    Attributes:
        removed: the paths removed (the session file, its artifact folder, its legacy artifact
            folders), each with everything below it.
        errors: one line per entry that could not be removed (`path: ErrorType: message`);
            the rest was removed all the same.
        detached: the forks of the session made self-contained before it went (their own
            copy of the history they read from it).
        broken_forks: forks whose history did not load already (a broken parent chain),
            left as they were.
    """

    removed: tuple[Path, ...] = ()
    errors: tuple[str, ...] = ()
    detached: tuple[str, ...] = ()
    broken_forks: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether everything was removed."""
        return not self.errors


def remove_all(paths: Iterable[Path]) -> DeleteReport:
    """Remove each path (a file, a symlink: unlinked, never followed; a folder: with its whole
    tree), carrying on past every failure.

    Returns:
        A `DeleteReport`: a path is in `removed` when it is gone afterwards; every entry that
        could not be removed (a permission error, say) is one line of `errors`. Nothing raises.
    """
    removed: list[Path] = []
    errors: list[str] = []

    def failed(_fn: object, where: str, info: tuple[type[BaseException], BaseException, object]) -> None:
        if not isinstance(info[1], FileNotFoundError):  # gone already: fine
            errors.append(f"{where}: {info[0].__name__}: {info[1]}")

    for path in paths:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, onerror=failed)  # Python 3.11: `onexc` is 3.12
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        if not os.path.lexists(path):
            removed.append(path)
    return DeleteReport(removed=tuple(removed), errors=tuple(errors))
