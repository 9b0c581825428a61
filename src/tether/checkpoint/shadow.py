"""The shadow repository: snapshots of a working folder in a git repository tether owns.

Owns: `ShadowRepo` (one per project, under the data folder: `<data>/checkpoints/<name>-<hash>`),
`snapshot` (the working folder as a commit), `changes` (what differs between two snapshots); a
failure is a `tether.errors.CheckpointError`. Putting files back: `tether.checkpoint.restore`. It drives the `git` command line with `GIT_DIR` / `GIT_WORK_TREE` set, so
the project's own `.git` is never read or written (git never indexes a path named `.git`);
the user's and the system's git configuration are not read either (`GIT_CONFIG_GLOBAL` is the
null device, `GIT_CONFIG_NOSYSTEM` is set), so their hooks, signing and filters do not apply.
Does not own: when snapshots are taken (`tether.agent.turn.checkpoints`), which snapshot a rewind
goes to (`tether.checkpoint.timeline`), the session entries that name them.

Two things are written in Python rather than by a git process (each process costs
milliseconds, more on a busy machine, and a short run's snapshots were most of its wall time
beyond its CPU time): the repository's creation (its layout, `config`, `HEAD`) and each
snapshot's commit object (a loose object, as `commit-tree` writes it). A first snapshot runs
`ls-files`, `update-index`, `write-tree`; a later one `status` (and `update-index`,
`write-tree` when something changed).

Why the git CLI rather than dulwich: git's index keeps a stat cache, so an incremental
snapshot hashes only the files whose stat changed (`git status` then `update-index` with the
changed paths); dulwich would walk and stat the tree in Python. The measured cost is in
`bench/checkpoints.py`.

What a snapshot holds: every file of the working folder that the project's ignore rules
(`.gitignore` files, `.git/info/exclude`) do not exclude, except files larger than
`max_file_bytes` (listed in `Snapshot.skipped`, never deleted by a restore) and nested git
repositories (listed too: their files are theirs). Empty folders are not recorded.
Commits are chained (each has the previous snapshot as parent) on `refs/heads/main`, so every
snapshot stays reachable and `git gc` never loses one.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs
from filelock import FileLock

import tether.hostgit as hostgit
from tether.atomic import write_atomic
from tether.errors import CheckpointError

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
"""Files larger than this (bytes) are left out of a snapshot, with a warning."""

REF = "refs/heads/main"

GITLINK, SYMLINK, EXEC = "160000", "120000", "100755"
"""git modes: a nested repository, a symlink, an executable file."""
_PACK_AT = 256
"""New files from which a snapshot writes one pack rather than one object file per file."""


def default_store() -> Path:
    """Where shadow repositories live: `$TETHER_HOME/checkpoints` when `TETHER_HOME` is set,
    else `platformdirs.user_data_path("tether") / "checkpoints"` (not created here)."""
    home = os.environ.get("TETHER_HOME", "")
    if home:
        return Path(home).expanduser() / "checkpoints"
    return platformdirs.user_data_path("tether") / "checkpoints"


def repo_name(root: Path) -> str:
    """The shadow repository's folder name for a project: its folder name (made safe) and 16
    hex digits of the SHA-256 of its real path (two projects named alike never share one)."""
    real = os.path.realpath(root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(real) or "root")[:40]
    return f"{base}-{digest}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """One snapshot of the working folder.

    Attributes:
        commit: the commit id in the shadow repository.
        tree: its tree id (equal trees: equal folders).
        skipped: paths left out (over the size cap, or a nested repository), relative, `/`.
        seconds: how long taking it took.
    """

    commit: str
    tree: str
    skipped: tuple[str, ...] = ()
    seconds: float = 0.0


ChangeKind = Literal["added", "modified", "deleted"]


@dataclass(frozen=True, slots=True)
class Change:
    """One path that differs from snapshot `a` to snapshot `b` (`added`: only in `b`)."""

    path: str
    kind: ChangeKind
    mode: str = ""
    """The mode in `b` (`100644`, `100755`, `120000` a symlink); empty for a deletion."""
    blob: str = ""
    """The content's id in `b`; empty for a deletion."""


@dataclass(slots=True)
class ShadowRepo:
    """The shadow repository of the working folder `root`.

    Args:
        root: the working folder (resolved to its real path).
        store: the folder holding shadow repositories (default `default_store()`).
        max_file_bytes: files larger than this are left out of snapshots.
        git: the git executable.

    Raises (from the operations): CheckpointError: git is missing or failed, the store is not
    writable.
    """

    root: Path
    store: Path = field(default_factory=default_store)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    git: str = "git"
    _ready: bool = field(default=False, repr=False)
    _trees: dict[str, str] = field(default_factory=dict[str, str], repr=False)
    """Commit → tree, for the commits this object made or looked up."""

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))

    @property
    def git_dir(self) -> Path:
        """The repository folder: `<store>/<repo_name(root)>`."""
        return self.store / repo_name(self.root)

    def exists(self) -> bool:
        """Whether the repository was created (a snapshot was taken once)."""
        return (self.git_dir / "HEAD").is_file()

    # -- git ----------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = hostgit.env()
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.root),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_TERMINAL_PROMPT="0",
            GIT_AUTHOR_NAME="tether",
            GIT_AUTHOR_EMAIL="tether@localhost",
            GIT_COMMITTER_NAME="tether",
            GIT_COMMITTER_EMAIL="tether@localhost",
            LC_ALL="C",
        )
        return env

    def _run(self, *args: str, data: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
        argv = hostgit.argv(self.git, "-c", "core.quotepath=false")
        exclude = self.root / ".git" / "info" / "exclude"
        if exclude.is_file():  # the project's own exclude list, as its git would read it
            argv += ["-c", f"core.excludesFile={exclude}"]
        try:
            proc = subprocess.run(
                [*argv, *args],
                input=data,
                capture_output=True,
                env=self._env(),
                cwd=self.root,
                check=False,
            )
        except (FileNotFoundError, NotADirectoryError):
            raise CheckpointError(
                f"checkpoints need git, and `{self.git}` was not found on PATH"
            ) from None
        except OSError as exc:
            raise CheckpointError(f"cannot run git: {exc.strerror or exc}") from None
        if proc.returncode not in ok:
            msg = proc.stderr.decode(errors="replace").strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {msg[-1] if msg else proc.returncode}")
        return proc.stdout

    def _ensure(self) -> None:
        """Create the repository the first time (in Python: its folders, `config` and `HEAD`,
        the layout `git init` writes, without the ten git processes `init` and `config` took),
        `HEAD` last (`exists()` reads it), each file replaced atomically so two processes
        creating it at once agree."""
        if self._ready:
            return
        git_dir = self.git_dir
        try:
            git_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self.exists():
                for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
                    (git_dir / sub).mkdir(parents=True, exist_ok=True)
                write_atomic(git_dir / "config", _CONFIG, durable=False, mode=0o600)
                write_atomic(
                    git_dir / "tether-project",
                    (str(self.root) + "\n").encode(),
                    durable=False,
                    mode=0o600,
                )
                write_atomic(git_dir / "HEAD", f"ref: {REF}\n".encode(), durable=False, mode=0o600)
        except OSError as exc:
            raise CheckpointError(
                f"cannot create the checkpoint store {git_dir}: {exc.strerror or exc}"
            ) from None
        self._ready = True

    def _lock(self) -> FileLock:
        return FileLock(str(self.git_dir) + ".lock", timeout=60)

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, message: str = "checkpoint") -> Snapshot:
        """Record the working folder now (only what changed since the last snapshot is
        hashed). Returns the previous commit when nothing changed.

        Raises:
            CheckpointError: git is missing or failed; the store is not writable.
        """
        started = time.perf_counter()
        self._ensure()
        with self._lock():
            changed = False
            skipped: list[str] = []
            head = self._head()
            for _ in range(3):  # again when a file became a folder: its files show up then
                add, drop, skipped, again = self._changed_paths(fresh=head is None)
                if drop:
                    self._run("update-index", "--force-remove", "-z", "--stdin", data=_z(drop))
                if len(add) >= _PACK_AT:  # many new files: one pack, not a file per blob
                    self._import(add)
                elif add:
                    self._run("update-index", "--add", "--remove", "-z", "--stdin", data=_z(add))
                changed = changed or bool(add or drop)
                if not again:
                    break
            if head is not None and not changed:  # nothing changed: no new tree
                commit, tree = head
            else:
                tree = self._run("write-tree").decode().strip()
                if head is not None and head[1] == tree:
                    commit = head[0]
                else:
                    commit = self._commit(tree, head[0] if head is not None else None, message)
                    self._set_head(commit)
            self._trees[commit] = tree
        return Snapshot(
            commit=commit,
            tree=tree,
            skipped=tuple(sorted(skipped)),
            seconds=time.perf_counter() - started,
        )

    def _changed_paths(self, *, fresh: bool = False) -> tuple[list[str], list[str], list[str], bool]:
        """(paths to add or drop from the index, tracked paths grown past the cap, paths left
        out, whether a tracked file became a folder: look again once it is dropped) since the
        index was last written. `git status` in normal untracked mode (served
        by the untracked cache) names a new folder once; its files are listed by `ls-files`.
        `fresh` (no snapshot yet: nothing is tracked): every file is new, listed by one
        `ls-files` without the `status` before it."""
        if fresh and not (self.git_dir / "index").exists():
            return self._classify(
                [
                    (b"??", os.fsdecode(raw))
                    for raw in self._run("ls-files", "-z", "--others", "--exclude-standard")
                    .split(b"\0")
                    if raw
                ]
            )
        out = self._run(
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--no-renames",
            "--ignore-submodules=all",
        )
        entries: list[tuple[bytes, str]] = []
        folders: list[str] = []
        for entry in out.split(b"\0"):
            if len(entry) < 4:
                continue
            code, path = entry[:2], os.fsdecode(entry[3:])
            if code == b"??" and path.endswith("/"):
                folders.append(path)
            elif code == b"??" or code[1:2] != b" ":  # untracked, or changed in the folder
                entries.append((code, path))
        if folders:
            listed = self._run("ls-files", "-z", "--others", "--exclude-standard", "--", *folders)
            for raw in listed.split(b"\0"):
                if raw:
                    entries.append((b"??", os.fsdecode(raw)))
        return self._classify(entries)

    def _classify(
        self, entries: list[tuple[bytes, str]]
    ) -> tuple[list[str], list[str], list[str], bool]:
        """Sort `git status` entries (code, path) into `_changed_paths`' four answers."""
        add: list[str] = []
        drop: list[str] = []
        skipped: list[str] = []
        again = False
        for code, path in entries:
            if path.endswith("/"):  # a folder ls-files did not enter: a nested repository
                skipped.append(path.rstrip("/"))
                continue
            try:
                st = os.lstat(self.root / path)
            except (FileNotFoundError, NotADirectoryError):
                if code != b"??":
                    add.append(path)  # `--remove` drops it from the index
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                skipped.append(path)
                if code != b"??":
                    drop.append(path)
                continue
            if stat.S_ISDIR(st.st_mode):
                if code != b"??":  # a tracked file is a folder now
                    drop.append(path)
                    again = True
                continue
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) or code != b"??":
                add.append(path)
        return add, drop, skipped, again

    def _import(self, paths: Sequence[str]) -> None:
        """Add `paths` to the index with their contents written as one pack (`git
        fast-import`), then refresh their stat data: a first snapshot of 10,000 files makes a
        few files instead of 10,000 loose objects."""
        marks = self.git_dir / "tether-import.marks"
        modes: list[tuple[str, str]] = []
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(
                hostgit.argv(
                    self.git, "fast-import", "--quiet", "--depth=0", f"--export-marks={marks}"
                ),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=self._env(),
                cwd=self.root,
            )
            assert proc.stdin is not None
            try:
                for path in paths:
                    full = self.root / path
                    try:
                        st = os.lstat(full)
                        if stat.S_ISLNK(st.st_mode):
                            data, mode = os.fsencode(os.readlink(full)), SYMLINK
                        else:
                            data = full.read_bytes()
                            mode = EXEC if st.st_mode & 0o111 else "100644"
                    except OSError:  # gone or unreadable since: left to `update-index`
                        continue
                    modes.append((path, mode))
                    mark = len(modes)
                    proc.stdin.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
                    proc.stdin.write(data)
                    proc.stdin.write(b"\n")
                proc.stdin.close()
            except BrokenPipeError:
                pass
            if proc.wait() != 0:
                errors.seek(0)
                tail = errors.read().decode(errors="replace").strip().splitlines()
                raise CheckpointError(
                    f"git fast-import failed: {tail[-1] if tail else proc.returncode}"
                )
        ids = {
            int(k[1:]): v
            for k, v in (line.split(" ", 1) for line in marks.read_text().splitlines())
        }
        marks.unlink(missing_ok=True)
        info = b"".join(
            f"{mode} {ids[i]}\t".encode() + os.fsencode(path) + b"\0"
            for i, (path, mode) in enumerate(modes, 1)
        )
        self._run("update-index", "-z", "--index-info", data=info)
        rest = sorted(set(paths) - {p for p, _ in modes})
        if rest:
            self._run("update-index", "--add", "--remove", "-z", "--stdin", data=_z(rest))
        self._run("update-index", "-q", "--refresh", ok=(0, 1))

    def _set_head(self, commit: str) -> None:
        """Point the branch at `commit` (its loose ref file, replaced atomically; the
        repository lock is held)."""
        ref = self.git_dir / REF
        write_atomic(ref, (commit + "\n").encode(), durable=False, folder_mode=0o777)

    def _commit(self, tree: str, parent: str | None, message: str) -> str:
        """Write the commit object of `tree` (its parent `parent`) as a loose object, as
        `git commit-tree` does with the environment's author (no git process)."""
        ident = b"tether <tether@localhost> %d +0000" % int(time.time())
        body = b"tree %s\n" % tree.encode()
        if parent is not None:
            body += b"parent %s\n" % parent.encode()
        body += b"author %s\ncommitter %s\n\n%s\n" % (ident, ident, message.encode())
        return _write_object(self.git_dir, b"commit", body)

    def _head(self) -> tuple[str, str] | None:
        """The head commit and its tree, or None before the first snapshot (the loose ref
        file is read directly: another process may have moved it since)."""
        try:
            commit = (self.git_dir / REF).read_text().strip()
        except (FileNotFoundError, NotADirectoryError):
            if not (self.git_dir / "packed-refs").exists():
                return None  # no ref at all: no process to ask
            out = self._run("rev-parse", "--verify", "--quiet", REF, ok=(0, 1)).decode().strip()
            if not out:
                return None
            commit = out
        tree = self._trees.get(commit)
        if tree is None:
            tree = self._run("rev-parse", f"{commit}^{{tree}}").decode().strip()
            self._trees[commit] = tree
        return commit, tree

    def ignored(self, paths: Sequence[str]) -> tuple[str, ...]:
        """The paths among `paths` (relative to the root) that the project's ignore rules
        exclude: snapshots never hold them, so a restore cannot bring them back."""
        if not paths or not self.exists():
            return ()
        out = self._run("check-ignore", "-z", "--no-index", "--stdin", data=_z(paths), ok=(0, 1))
        return tuple(os.fsdecode(raw) for raw in out.split(b"\0") if raw)

    def has(self, commit: str) -> bool:
        """Whether `commit` is a snapshot of this repository."""
        if not self.exists():
            return False
        out = self._run("cat-file", "-t", commit, ok=(0, 1, 128)).decode().strip()
        return out == "commit"

    def changes(self, a: str, b: str) -> tuple[Change, ...]:
        """The paths that differ from snapshot `a` to snapshot `b`, sorted by path.

        Raises:
            CheckpointError: an unknown snapshot.
        """
        if a == b:
            return ()
        self._ensure()
        out = self._run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", a, b)
        fields = out.split(b"\0")
        found: list[Change] = []
        for i in range(0, len(fields) - 1, 2):
            head, path = fields[i].decode(), os.fsdecode(fields[i + 1])
            if not head.startswith(":"):
                continue
            _mode_a, mode_b, _blob_a, blob_b, status = head[1:].split(" ")
            if status == "D":
                found.append(Change(path, "deleted"))
            else:
                kind: ChangeKind = "added" if status == "A" else "modified"
                found.append(Change(path, kind, mode_b, blob_b))
        return tuple(sorted(found, key=lambda c: c.path))

    def files(self, commit: str) -> dict[str, bytes]:
        """Every file of a snapshot and its content (for tests and small trees)."""
        self._ensure()
        out = self._run("ls-tree", "-r", "-z", commit)
        entries = [e for e in out.split(b"\0") if e]
        listed: list[tuple[str, str]] = []
        for e in entries:
            meta, path = e.split(b"\t", 1)
            mode, _kind, blob = meta.decode().split(" ")
            if mode != GITLINK:
                listed.append((os.fsdecode(path), blob))
        blobs = self.blobs([b for _, b in listed])
        return {p: blobs[b] for p, b in listed}

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs by id (`git cat-file --batch`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        out = self._run("cat-file", "--batch", data="".join(f"{i}\n" for i in wanted).encode())
        found: dict[str, bytes] = {}
        pos = 0
        for blob in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode().split(" ")
            if len(header) != 3:
                raise CheckpointError(f"snapshot content {blob} is missing from {self.git_dir}")
            size = int(header[2])
            found[blob] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return found

_CONFIG = b"""[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tautocrlf = false
\tsymlinks = true
\tuntrackedCache = true
\tsplitIndex = false
[gc]
\tauto = 0
[commit]
\tgpgsign = false
"""
"""The shadow repository's configuration (what `git init` and the former `git config` calls
wrote)."""


def _write_object(git_dir: Path, kind: bytes, body: bytes) -> str:
    """Store one loose object (`objects/xx/yyyy…`, zlib-compressed `kind size\\0body`, read-only
    as git writes it) and return its id; an object already there is left as is."""
    data = b"%s %d\0%s" % (kind, len(body), body)
    oid = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    path = git_dir / "objects" / oid[:2] / oid[2:]
    if not path.exists():
        write_atomic(path, zlib.compress(data, 1), durable=False, mode=0o444, folder_mode=0o777)
    return oid


def _z(paths: Sequence[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)
