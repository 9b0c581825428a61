"""The path guard: every file a tool touches must be inside the working folder, by REAL path.

Owns: `resolve_inside` (containment by real path: symlinks in every component, including the final
one and dangling links, are resolved before the check), `PathOutsideError`, the optional deny-list
`PathPolicy`, `compile_glob` (the glob dialect of policies and grep's filter), and the race-aware
open helpers `open_inside` / `atomic_write` (every component opened from the root with no-follow,
openat-style, so a symlink swapped in after the check cannot redirect the operation).
Also owns the write scope of the file tools (issue 11): `.git/`, `.tether/` and the policy's
`protected` folders (tool folders) are read-only to `write`/`edit` unless the policy opts in
(`allow_protected_writes`), and with `write_paths` set only paths matching one of its globs (or
below a match) may be written — both by real path, so `output/../x` or a symlink into `.git` is
refused. A file with more than one hard link is checked against the read deny list by inode too
(`check_hardlinks`), so a hard link made by `bash` cannot defeat it.
Does not own: OS-level sandboxing. The deny list binds the file tools only; `bash` is confined by
the OS sandbox instead (`tether.tools.sandbox`: the same read-only and write-scope rules).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import cast

from tether.tools.base import ToolError

_MAX_LINK_HOPS = 40


class PathOutsideError(ToolError):
    """A path resolves outside the working folder (or is refused: `~`, a symlink loop).

    Attributes:
        resolved: the real path it resolved to, when known.
    """

    def __init__(self, message: str, resolved: str | None = None) -> None:
        super().__init__(message)
        self.resolved = resolved


class PathDeniedError(ToolError):
    """A path inside the working folder is refused by the deny policy."""


def _is_inside(path: str, root: str) -> bool:
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
    if not _is_inside(resolved, root_real):
        raise PathOutsideError(
            f"path {user_path!r} resolves to {resolved}, outside the working folder {root_real}; "
            "refused",
            resolved,
        )
    return Path(resolved)


@lru_cache(maxsize=256)
def compile_glob(pattern: str, *, anchored: bool = False) -> re.Pattern[str]:
    """Compile a glob to a regex over `/`-separated relative paths.

    `*` and `?` stay within one component, `**` spans components (`**/x` also matches `x`),
    `[...]` is a character class. A pattern without `/` matches the basename at any depth
    (gitignore style): `*.py` matches `a/b/c.py` — unless `anchored` (then it matches from the
    start, as `Path.glob` does).
    """
    anchored = anchored or "/" in pattern.strip("/")
    pat = pattern.strip("/") if anchored else pattern
    out: list[str] = [] if anchored else ["(?:.*/)?"]
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (j := pat.find("]", i + 2)) != -1:
            body = pat[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


PROTECTED_DIRS = (".git", ".tether")
"""Folders of the working folder that are read-only to every tool (issue 11): git's hooks and
config run code for the user, `.tether/` holds the settings and tools the next run loads."""


@dataclass(frozen=True, slots=True)
class PathPolicy:
    """A deny list for the file tools, as globs over root-relative paths (`compile_glob`), and
    their write scope.

    Checked against both the path as given and its resolved real path.

    Attributes:
        deny_read: globs the read tools (read, grep) refuse, e.g. `**/.env`, `*appsettings*`.
        deny_write: globs the write tools (write, edit) refuse.
        allow_read: exceptions to `deny_read` (e.g. `**/.env.example`).
        write_paths: globs (relative to the root, anchored) the write tools may write at or
            below; None: the whole working folder (settings `tools.write_paths`).
        protected: further read-only folders (absolute real paths, e.g. tool folders), besides
            the root's `.git` and `.tether` (`PROTECTED_DIRS`).
        allow_protected_writes: the user's opt-in to let tools write the protected folders.
    """

    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    write_paths: tuple[str, ...] | None = None
    protected: tuple[str, ...] = ()
    allow_protected_writes: bool = False
    _read: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _write: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _scope: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_read", tuple(compile_glob(p) for p in self.deny_read))
        object.__setattr__(self, "_write", tuple(compile_glob(p) for p in self.deny_write))
        object.__setattr__(self, "_allow", tuple(compile_glob(p) for p in self.allow_read))
        scope = tuple(compile_glob(p, anchored=True) for p in self.write_paths or ())
        object.__setattr__(self, "_scope", scope)

    def denied(self, rel_paths: Iterable[str], *, write: bool) -> str | None:
        """The first deny glob matching any of `rel_paths`, or None."""
        pats, globs = (self._write, self.deny_write) if write else (self._read, self.deny_read)
        rels = tuple(rel_paths)
        if not write and any(rx.match(r) for r in rels for rx in self._allow):
            return None
        for rel in rels:
            for rx, g in zip(pats, globs, strict=True):
                if rx.match(rel):
                    return g
        return None

    def in_write_scope(self, rel: str) -> bool:
        """True when the root-relative real path `rel` may be written: `write_paths` is None,
        or `rel` or one of its parent folders matches one of its globs."""
        if self.write_paths is None:
            return True
        parts = rel.split(os.sep)
        for i in range(len(parts), 0, -1):
            prefix = "/".join(parts[:i])
            if any(rx.match(prefix) for rx in self._scope):
                return True
        return False

    def to_json(self) -> dict[str, object]:
        """The policy as JSON (for the tool worker); `from_json` reverses it."""
        return {
            "deny_read": list(self.deny_read),
            "deny_write": list(self.deny_write),
            "allow_read": list(self.allow_read),
            "write_paths": None if self.write_paths is None else list(self.write_paths),
            "protected": list(self.protected),
            "allow_protected_writes": self.allow_protected_writes,
        }

    @classmethod
    def from_json(cls, raw: dict[str, object]) -> PathPolicy:
        def strs(key: str) -> tuple[str, ...]:
            value: object = raw.get(key)
            items = cast("list[object]", value) if isinstance(value, list) else []
            return tuple(str(v) for v in items)

        return cls(
            deny_read=strs("deny_read"),
            deny_write=strs("deny_write"),
            allow_read=strs("allow_read"),
            write_paths=None if raw.get("write_paths") is None else strs("write_paths"),
            protected=strs("protected"),
            allow_protected_writes=bool(raw.get("allow_protected_writes", False)),
        )


def expand_write_paths(root: Path, globs: Iterable[str]) -> tuple[Path, ...]:
    """The real paths under `root` that `write_paths` globs name, for the OS sandbox (bound
    writable): a glob without wildcards names a folder, created when missing; others are
    expanded against what exists. Paths resolving outside the root are dropped."""
    out: list[Path] = []
    root_real = os.path.realpath(root)
    for g in globs:
        g = g.strip("/")
        if not any(c in g for c in "*?["):
            candidates = [Path(root_real, g)]
            with contextlib.suppress(OSError):
                candidates[0].mkdir(parents=True, exist_ok=True)
        else:
            candidates = sorted(Path(root_real).glob(g.removesuffix("/**")))
        for c in candidates:
            real = os.path.realpath(c)
            inside = _is_inside(real, root_real) and real != root_real
            if inside and c.exists() and Path(real) not in out:
                out.append(Path(real))
    return tuple(out)


DEFAULT_POLICY = PathPolicy(
    deny_read=("**/.env", "**/.env.*", "**/*.env"),
    allow_read=("**/.env.example", "**/.env.sample", "**/.env.template", "**/.env.dist"),
)
"""What the agent loop applies unless told otherwise: every dotenv variant holds secrets (case
T31, issue 11: `.env.production` too); `.env.example`, `.env.sample`, `.env.template` and
`.env.dist` stay readable."""


def check_policy(
    policy: PathPolicy | None, root: Path, user_path: str, resolved: Path, *, write: bool
) -> None:
    """Raise PathDeniedError when `policy` denies `user_path` or its resolved path, or, for a
    write, when the resolved path is protected (`.git`, `.tether`, `policy.protected`) or out
    of the policy's write scope. The protected folders are refused even with no policy."""
    rel = os.path.relpath(resolved, root)
    if write:
        check_protected(policy, root, resolved)
    if policy is None:
        return
    given = os.path.normpath(user_path)
    if os.path.isabs(given):
        given = os.path.relpath(given, root)
    hit = policy.denied((rel, given), write=write)
    if hit is not None:
        verb = "writing" if write else "reading"
        raise PathDeniedError(f"{verb} {rel} is denied by the policy ({hit})")
    if write and not policy.in_write_scope(rel):
        scope = ", ".join(policy.write_paths or ())
        raise PathDeniedError(
            f"writing {rel} is outside the write scope (tools.write_paths: {scope}); refused"
        )


def check_protected(policy: PathPolicy | None, root: Path, resolved: Path) -> None:
    """Raise PathDeniedError when the real path `resolved` is, or is inside, a protected folder
    (see `PathPolicy`) and the policy does not opt in."""
    if policy is not None and policy.allow_protected_writes:
        return
    root_s = os.path.realpath(root)
    real = str(resolved)
    tops = [os.path.join(root_s, d) for d in PROTECTED_DIRS]
    if policy is not None:
        tops += list(policy.protected)
    for top in tops:
        if _is_inside(real, top):
            raise PathDeniedError(
                f"writing {os.path.relpath(real, root_s)} is refused: {os.path.relpath(top, root_s)} "
                "is read-only to tools (it holds code or settings that run later)"
            )


def check_hardlinks(policy: PathPolicy | None, root: Path, st: os.stat_result) -> None:
    """Raise PathDeniedError when a file with several hard links (`st`, from `os.stat`) is the
    same inode as a file under `root` the read deny list refuses (a hard link made by `bash`
    must not defeat it). Costs a walk of the root, only for files with `st_nlink > 1`."""
    if policy is None or st.st_nlink < 2 or not policy.deny_read:
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if policy.denied((rel,), write=False) is None:
                continue
            try:
                other = os.lstat(full)
            except OSError:
                continue
            if (other.st_ino, other.st_dev) == (st.st_ino, st.st_dev):
                raise PathDeniedError(
                    f"reading this file is denied: it is a hard link to {rel}, which the "
                    "policy refuses"
                )


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_parent(root: Path, path: Path, *, create: bool) -> tuple[int, str]:
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


open_parent = _open_parent
"""Public name of `_open_parent` (used by `ls`/`glob`, which walk from a folder fd)."""


def open_inside(root: Path, path: Path, flags: int, mode: int = 0o666) -> int:
    """`os.open` a path returned by `resolve_inside` race-free: every folder is opened from the
    root with no-follow (openat), and so is the final component.

    Returns:
        The file descriptor (the caller closes it).

    Raises:
        PathOutsideError: a component turned into a symlink since the check.
        OSError: the open failed.
    """
    dfd, name = _open_parent(root, path, create=False)
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

    Returns:
        True when the file was created, False when it was replaced.

    Raises:
        PathOutsideError: a component turned into a symlink since the check.
        IsADirectoryError: `path` is a directory.
        OSError: the write failed.
    """
    dfd, name = _open_parent(root, path, create=True)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path} is a directory")
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o666, dir_fd=dfd)
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
