"""The project's ignore rules, as git reads them: one matcher for `glob`, `grep`, `@path`
listings and the TUI's `@` completion.

Owns: `IgnoreRules` (the rules in force in one folder of a walk: the working folder's
`.git/info/exclude` and the `.gitignore` files from the working folder down to that folder,
deeper files first, the last matching line of a file deciding, `!` re-including),
`read_gitignore`.
Does not own: the walks (their callers prune the folders `ignored` names, so nothing below an
ignored folder is visited), checkpoints (they run git itself).

Like git, a `.gitignore` that is a symbolic link is not read, and the rules of a folder apply
to the paths below it, relative to it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pathspec

__all__ = ["IgnoreRules", "read_gitignore"]

MAX_IGNORE_FILE_BYTES = 1024 * 1024
"""A larger ignore file is not read (nothing it names is ignored)."""


def _read_lines(path: str | Path, dir_fd: int | None = None) -> list[str] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IGNORE_FILE_BYTES:
            return None
        data = os.read(fd, MAX_IGNORE_FILE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace").splitlines()


def read_gitignore(
    folder: Path | None = None, *, dir_fd: int | None = None
) -> pathspec.GitIgnoreSpec | None:
    """The `.gitignore` of `folder` (or of the folder open as `dir_fd`), None when it has none
    (or it is unreadable, a symbolic link, or holds no rule)."""
    path = ".gitignore" if folder is None else folder / ".gitignore"
    lines = _read_lines(path, dir_fd)
    return _spec(lines) if lines is not None else None


def _spec(lines: list[str]) -> pathspec.GitIgnoreSpec | None:
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if spec.patterns else None


def _git_exclude(root: Path) -> pathspec.GitIgnoreSpec | None:
    """`.git/info/exclude` of the repository whose working tree is `root` (a worktree's `.git`
    file leads to it through `gitdir:` and `commondir`)."""
    git = root / ".git"
    if git.is_file():
        lines = _read_lines(git) or []
        gitdir = next((ln[7:].strip() for ln in lines if ln.startswith("gitdir:")), "")
        if not gitdir:
            return None
        git = root / gitdir
        common = _read_lines(git / "commondir")
        if common:
            git = git / common[0].strip()
    lines = _read_lines(git / "info" / "exclude")
    return _spec(lines) if lines is not None else None


@dataclass(frozen=True, slots=True)
class IgnoreRules:
    """The ignore rules in force in one folder of a walk below a root (the working folder).

    Attributes:
        specs: `(prefix, spec)` for each `.gitignore` from the root down (the prefix is the
            folder's path relative to the root, `""` or ending in `/`).
        exclude: the root's `.git/info/exclude`, below every `.gitignore` in precedence.
    """

    specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()
    exclude: pathspec.GitIgnoreSpec | None = None

    @classmethod
    def at(cls, root: Path, folder: str = "") -> IgnoreRules:
        """The rules in force in `folder` (relative to `root`, `/`-separated): the root's
        exclude file and the `.gitignore` files of the root and of each folder down to
        `folder`. (Whether `folder` itself is ignored is `covers`'s question.)"""
        rules = cls(exclude=_git_exclude(root)).enter("", read_gitignore(root))
        prefix = ""
        for part in [p for p in folder.split("/") if p not in ("", ".")]:
            prefix += part + "/"
            rules = rules.enter(prefix, read_gitignore(root / prefix))
        return rules

    def enter(self, prefix: str, spec: pathspec.GitIgnoreSpec | None) -> IgnoreRules:
        """The rules below the folder `prefix` (relative to the root, ending in `/`, or `""`
        for the root), whose `.gitignore` is `spec`."""
        if spec is None:
            return self
        return IgnoreRules((*self.specs, (prefix, spec)), self.exclude)

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        """Whether `path` (relative to the root, in a folder these rules are in force in) is
        ignored: the deepest `.gitignore` with a matching line decides, then the exclude file."""
        name = path + "/" if is_dir else path
        for prefix, spec in reversed(self.specs):
            if name.startswith(prefix):
                decided = spec.check_file(name[len(prefix) :]).include
                if decided is not None:
                    return decided
        return self.exclude is not None and bool(self.exclude.check_file(name).include)

    @classmethod
    def covers(cls, root: Path, path: str) -> bool:
        """Whether `path` (relative to `root`) is ignored or lies in an ignored folder."""
        parts = [p for p in path.split("/") if p not in ("", ".")]
        rules = cls.at(root)
        prefix = ""
        for i, part in enumerate(parts):
            here = prefix + part
            is_dir = i < len(parts) - 1 or (root / here).is_dir()
            if rules.ignored(here, is_dir=is_dir):
                return True
            prefix = here + "/"
            if is_dir:
                rules = rules.enter(prefix, read_gitignore(root / prefix))
        return False
