"""Sandbox policy: what the file tools may touch and what the settings confine, as data and
pure rules.

Owns: `PathPolicy` (the file tools' deny list, as globs over root-relative paths, their write
scope, and the unix sockets commands may reach) with `compile_glob`, `expand_write_paths`,
`DEFAULT_POLICY` and the checks `check_policy`, `check_protected`, `check_hardlinks`; the `tools`
settings as these shapes (`policy_for`, `limits_for`, `unix_socket_paths`); safe mode's rule and
`NO_SANDBOX_WARNING`.
Does not own: what one confined command may touch (`tether.sandbox.config.SandboxConfig`),
containment by real path (`tether.sandbox.paths`), the OS mechanisms (`tether.sandbox.base` and
its kinds), which tools a request offers (`tether.tools.safe_mode`).

The write scope of the file tools: `.git/` (at any depth: a nested repository's too),
`.tether/` and the policy's `protected` folders (tool folders) are read-only to `write`/`edit`
unless the policy opts in (`allow_protected_writes`), and with `write_paths` set only paths
matching one of its globs (or below a match) may be written — both by real path, so
`output/../x` or a symlink into `.git` is refused. A file with more than one hard link is
checked against the read deny list by inode too (`check_hardlinks`), so a hard link made by
`bash` cannot defeat it. Commands are held to the same rules by the OS sandbox
(`tether.sandbox.config.confinement`): the same folders read-only, the files the read deny list
refuses shown empty.

Safe mode: with no OS sandbox, safe mode is forced (nothing could stop a write or a shell
command from reaching outside the working folder); there is no opt-out.

Raises `tether.errors.PathDeniedError` from the checks.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol, cast

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from tether.errors import PathDeniedError
from tether.sandbox.limits import ResourceLimits
from tether.sandbox.paths import is_inside


class ToolsConfinement(Protocol):
    """What `policy_for` and `limits_for` read of the `tools` settings
    (`tether.settings.tools.ToolsSettings` has these fields; the sandbox does not import the
    settings, which sit above it)."""

    @property
    def deny_paths(self) -> Sequence[str]: ...
    @property
    def folders(self) -> Sequence[str]: ...
    @property
    def add_dirs(self) -> Sequence[str]: ...
    @property
    def write_paths(self) -> Sequence[str] | None: ...
    @property
    def allow_protected_writes(self) -> bool: ...
    @property
    def allow_unix_sockets(self) -> Sequence[str]: ...
    @property
    def max_processes(self) -> int | None: ...
    @property
    def max_file_size(self) -> int | None: ...

NO_SANDBOX_WARNING = (
    "no OS sandbox is available (install bubblewrap, or use a Linux kernel with Landlock): "
    "safe mode is forced, only read-only tools are offered and run"
)


_FILE_TAIL = "(?:(?P<ps_d>/)|$)"
"""How pathspec ends the regex of a pattern that may name a file: it also matches everything
below a folder of that name; `compile_glob` matches the path itself."""
_DIR_TAIL = "(?P<ps_d>/)"
"""How pathspec ends the regex of a folder-only pattern (`out/`): what is below the folder."""


@lru_cache(maxsize=256)
def compile_glob(pattern: str, *, anchored: bool = False) -> re.Pattern[str]:
    """Compile a glob to a regex over `/`-separated relative paths, with gitignore semantics
    (pathspec's translation).

    `*` and `?` stay within one component, `**` spans components (`**/x` also matches `x`),
    `[...]` is a character class (`[!...]` negated). A pattern without `/` matches the basename
    at any depth (gitignore style): `*.py` matches `a/b/c.py` — unless `anchored` (then it
    matches from the start, as `Path.glob` does). The regex matches the whole path (a folder's
    name does not also match what is below it; callers that want that test the prefixes); a
    folder-only pattern (`out/`) matches what is below the folder. A string pathspec does not
    take as a pattern (an unclosed `[`, a leading `!` or `#`) matches literally.
    """
    anchored = anchored or "/" in pattern.strip("/")
    pat = "/" + pattern.strip("/") if anchored else pattern
    regex, include = GitIgnoreSpecPattern.pattern_to_regex(pat)
    if regex is None or not include:
        literal = re.escape(pattern.strip("/"))
        return re.compile(("" if anchored else "(?:.*/)?") + literal + r"\Z")
    if regex.endswith(_FILE_TAIL):
        return re.compile(regex.removesuffix(_FILE_TAIL) + r"\Z")
    return re.compile(regex.removesuffix(_DIR_TAIL) + ("/" if regex.endswith(_DIR_TAIL) else ""))


PROTECTED_DIRS = (".git", ".tether")
"""Folders of the working folder that are read-only to every tool (the write scope): git's hooks and
config run code for the user, `.tether/` holds the settings and tools the next run loads. A
`.git` at any depth (a nested repository's) is read-only too."""
GIT_DIR = ".git"


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
        unix_sockets: unix sockets (or folders of them) outside the sandbox that commands may
            connect to, as real absolute paths (settings `tools.allow_unix_sockets`).
        read_roots: folders outside the working folder that `read` alone may open, read-only
            (absolute real paths: the skill folders of the session's catalog); the deny list
            applies to paths relative to each.
        add_dirs: extra folders outside the working folder (`tools.add_dirs`, `--add-dir`)
            every file tool may read and write, and commands may write (absolute real paths);
            the deny list applies to paths relative to each, their `.git` and `.tether` are
            read-only like the root's, `write_paths` does not apply to them.
        add_dirs_ro: extra folders added read-only (`PATH:ro`): read, never written.
    """

    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    write_paths: tuple[str, ...] | None = None
    protected: tuple[str, ...] = ()
    allow_protected_writes: bool = False
    unix_sockets: tuple[str, ...] = ()
    read_roots: tuple[str, ...] = ()
    add_dirs: tuple[str, ...] = ()
    add_dirs_ro: tuple[str, ...] = ()
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

    def extra_dir_of(self, resolved: str) -> tuple[str, bool] | None:
        """`(folder, writable)` for the extra folder holding the real path `resolved` (a
        read-only one first: it wins where one is inside another), else None."""
        for d in self.add_dirs_ro:
            if is_inside(resolved, d):
                return d, False
        for d in self.add_dirs:
            if is_inside(resolved, d):
                return d, True
        return None

    def to_json(self) -> dict[str, object]:
        """The policy as JSON (for the tool worker); `from_json` reverses it."""
        return {
            "deny_read": list(self.deny_read),
            "deny_write": list(self.deny_write),
            "allow_read": list(self.allow_read),
            "write_paths": None if self.write_paths is None else list(self.write_paths),
            "protected": list(self.protected),
            "allow_protected_writes": self.allow_protected_writes,
            "unix_sockets": list(self.unix_sockets),
            "add_dirs": list(self.add_dirs),
            "add_dirs_ro": list(self.add_dirs_ro),
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
            unix_sockets=strs("unix_sockets"),
            add_dirs=strs("add_dirs"),
            add_dirs_ro=strs("add_dirs_ro"),
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
            inside = is_inside(real, root_real) and real != root_real
            if inside and c.exists() and Path(real) not in out:
                out.append(Path(real))
    return tuple(out)


DEFAULT_POLICY = PathPolicy(
    deny_read=("**/.env", "**/.env.*", "**/*.env"),
    allow_read=("**/.env.example", "**/.env.sample", "**/.env.template", "**/.env.dist"),
)
"""What the agent loop applies unless told otherwise: every dotenv variant holds secrets (the dotenv
rule: `.env.production` too); `.env.example`, `.env.sample`, `.env.template` and
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
    if is_inside(real, root_s):  # a nested repository's `.git`, existing or not
        parts = os.path.relpath(real, root_s).split(os.sep)
        if GIT_DIR in parts:
            tops.append(os.path.join(root_s, *parts[: parts.index(GIT_DIR) + 1]))
    for top in tops:
        if is_inside(real, top):
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


def policy_for(tools: ToolsConfinement, root: Path | None = None) -> PathPolicy:
    """The file tools' policy from the `tools` settings: the built-in dotenv rules plus
    `deny_paths` (refused to read and to write), `write_paths`, `allow_protected_writes`,
    `allow_unix_sockets`, `add_dirs` (relative ones from `root`), and, with `root`, the tool
    folders (`root/<tools.folders>`, real paths) as protected."""
    extra = tuple(tools.deny_paths)
    protected: tuple[str, ...] = ()
    if root is not None:
        protected = tuple(os.path.realpath(root / f) for f in tools.folders)
    added = add_dir_entries(tools.add_dirs, root or Path.cwd())
    return PathPolicy(
        add_dirs=tuple(dict.fromkeys(p for p, writable in added if writable)),
        add_dirs_ro=tuple(dict.fromkeys(p for p, writable in added if not writable)),
        deny_read=(*DEFAULT_POLICY.deny_read, *extra),
        deny_write=(*DEFAULT_POLICY.deny_write, *extra),
        allow_read=DEFAULT_POLICY.allow_read,
        write_paths=None if tools.write_paths is None else tuple(tools.write_paths),
        protected=protected,
        allow_protected_writes=tools.allow_protected_writes,
        unix_sockets=unix_socket_paths(tools.allow_unix_sockets),
    )


READ_ONLY_SUFFIX = ":ro"
"""`--add-dir PATH:ro`: the folder is added read-only."""
WRITABLE_SUFFIX = ":rw"
"""`--add-dir PATH:rw`: read-write, as `PATH` alone (said explicitly)."""


def parse_add_dir(entry: str, base: Path) -> tuple[str, bool]:
    """`PATH`, `PATH:rw` or `PATH:ro` (`tools.add_dirs`, `--add-dir`) as `(real absolute
    path, writable)`; `~` expanded, a relative path taken from `base` (the working folder)."""
    read_only = entry.endswith(READ_ONLY_SUFFIX)
    path = entry.removesuffix(READ_ONLY_SUFFIX) if read_only else entry.removesuffix(WRITABLE_SUFFIX)
    p = Path(os.path.expanduser(path))
    return os.path.realpath(p if p.is_absolute() else base / p), not read_only


def add_dir_entries(entries: Iterable[str], base: Path) -> tuple[tuple[str, bool], ...]:
    """`tools.add_dirs` as `(real path, writable)` pairs, in order, each folder once (the
    first spelling wins)."""
    out: dict[str, bool] = {}
    for entry in entries:
        path, writable = parse_add_dir(entry, base)
        out.setdefault(path, writable)
    return tuple(out.items())


def unix_socket_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """`tools.allow_unix_sockets` as real absolute paths (`~` expanded, symlinks resolved:
    the unix-socket guard compares the real path of the socket a command names)."""
    return tuple(dict.fromkeys(os.path.realpath(os.path.expanduser(p)) for p in paths))


def limits_for(tools: ToolsConfinement) -> ResourceLimits:
    """`tools.max_processes` and `tools.max_file_size` as `ResourceLimits`."""
    return ResourceLimits(
        max_processes=tools.max_processes, max_file_size_bytes=tools.max_file_size
    )
