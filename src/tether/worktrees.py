"""Git worktrees for isolated sessions: `tether run|chat --worktree NAME` and a subagent with
`isolation: "worktree"`.

Owns: `Worktree` (a worktree tether made: its folder, branch and the commit it started from),
`create` (a new worktree on a new branch `tether/NAME`), `changed` and `finish` (at exit an
unchanged worktree is removed with its branch, a changed one is kept; one line says which);
a failure is a `tether.errors.WorktreeError`. It drives the `git` command line.
Does not own: the session run in it (`tether.cli.run`, `tether.tui`, `tether.agent.subagents`).

Where: `<repository root>/.tether/worktrees/FOLDER`, on branch `tether/NAME`, from the current
`HEAD`. NAME is any name git takes for a branch (`git check-ref-format --branch`: `feat/login`,
`fix-42`, `héllo`); FOLDER is NAME made safe for a folder (`folder_name`: `/` becomes `+`, any
other character but letters, digits, `.`, `_`, `-` becomes `-`: `feat+login`); a folder that
holds another name's worktree is refused. Claude Code's convention is `.claude/worktrees/NAME` at the repository root (branch
`worktree-NAME`); tether keeps the place, in its own folder: the worktree sits beside the
project it came from (its paths read alike, the project's `.tether/` settings are one folder
up), and `.tether/` is already read-only to the tools of an agent working in the main
checkout, so that agent cannot write into a worktree another session works in. The path is
added to the repository's `info/exclude` so the main checkout does not list it as untracked.
A worktree left from an earlier session of the same name is used again.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import tether.hostgit as hostgit
from tether.errors import WorktreeError

WORKTREES_DIR = Path(".tether") / "worktrees"
"""Where worktrees go, relative to the repository root."""
BRANCH_PREFIX = "tether/"
MAX_NAME = 100
"""The longest worktree name (characters)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
_EXCLUDE_LINE = "/.tether/worktrees/"


@dataclass(frozen=True, slots=True, kw_only=True)
class Worktree:
    """A worktree tether made (or found from an earlier session of the same name).

    Attributes:
        name: its name (`--worktree NAME`).
        path: its folder (real path).
        branch: its branch (`tether/NAME`).
        base: the commit it started from (an unchanged worktree still points at it).
        repo: the repository root it was made from.
    """

    name: str
    path: Path
    branch: str
    base: str
    repo: Path


_RUNS_DRIVERS = frozenset({"status", "worktree"})
"""Subcommands that may run a filter driver (a checkout, an index refresh)."""


def _git(cwd: Path, *args: str) -> str:
    """Run `git -C cwd ARGS`, hardened (`tether.hostgit`: none of the repository's hooks,
    fsmonitor or drivers run); its stdout, stripped.

    Raises:
        WorktreeError: git is missing or failed (its first error line).
    """
    extra = hostgit.repo_overrides(cwd) if args[0] in _RUNS_DRIVERS else []
    try:
        done = subprocess.run(
            hostgit.argv("git", "-C", str(cwd), *args, overrides=extra),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
            env=hostgit.env(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"git {args[0]} failed: {exc}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        raise WorktreeError(f"git {args[0]} failed: {first}")
    return done.stdout.strip()


def folder_name(name: str) -> str:
    """The folder of worktree `name` (a legal branch name): `/` → `+`, any other character
    but ASCII letters, digits, `.`, `_`, `-` → `-` (`feat/login` → `feat+login`)."""
    return _UNSAFE.sub("-", name.replace("/", "+"))


def check_name(cwd: Path, name: str) -> None:
    """Refuse a worktree name git would not take for a branch (`git check-ref-format
    --branch`, whose `@{-N}` expansion is refused too).

    Raises:
        WorktreeError: the name is not a legal branch name, or longer than `MAX_NAME`.
    """
    bad = WorktreeError(
        f"worktree name {name!r}: use a name git takes for a branch (letters, digits, '/', "
        f"'.', '_', '-'; no spaces, '..', '~^:?*[\\' or a leading '-' or '.'), up to "
        f"{MAX_NAME} characters"
    )
    if not name or len(name) > MAX_NAME or name.startswith("-") or "@{" in name:
        raise bad
    try:
        legal = _git(cwd, "check-ref-format", "--branch", name) == name
    except WorktreeError:
        legal = False
    if not legal:
        raise bad


def repository_root(cwd: Path) -> Path:
    """The top folder of the git repository holding `cwd`.

    Raises:
        WorktreeError: `cwd` is not in a git repository (or git is missing).
    """
    try:
        top = _git(cwd, "rev-parse", "--show-toplevel")
    except WorktreeError:
        raise WorktreeError(
            f"{cwd} is not in a git repository: --worktree needs one"
        ) from None
    return Path(top).resolve()


def create(cwd: Path, name: str) -> Worktree:
    """A worktree named `name` for the repository holding `cwd`: made at
    `<root>/.tether/worktrees/NAME` on a new branch `tether/NAME` from `HEAD`, or the one an
    earlier session of that name left there.

    Raises:
        WorktreeError: a bad name, not a git repository, a repository without commits, a
            branch `tether/NAME` that exists without its worktree, git failing.
    """
    check_name(cwd, name)
    repo = repository_root(cwd)
    path = repo / WORKTREES_DIR / folder_name(name)
    branch = BRANCH_PREFIX + name
    try:
        head = _git(repo, "rev-parse", "--verify", "HEAD^{commit}")
    except WorktreeError:
        raise WorktreeError(f"{repo} has no commit yet: a worktree starts from one") from None
    if path.is_dir() and (path / ".git").exists():  # left by an earlier session: used again
        held = _git(path, "rev-parse", "--abbrev-ref", "HEAD")
        if held not in (branch, "HEAD"):  # another name that maps to the same folder (`a/b`, `a+b`)
            raise WorktreeError(
                f"worktree folder {path} holds branch {held}, not {branch}: pick another name"
            )
        base = _git(repo, "merge-base", head, branch) if _has_branch(repo, branch) else head
        return Worktree(name=name, path=path.resolve(), branch=branch, base=base, repo=repo)
    if _has_branch(repo, branch):
        raise WorktreeError(
            f"branch {branch} exists but its worktree {path} does not: pick another name or "
            f"delete the branch (git branch -D {branch})"
        )
    _exclude(repo)
    _git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), head)
    return Worktree(name=name, path=path.resolve(), branch=branch, base=head, repo=repo)


def _has_branch(repo: Path, branch: str) -> bool:
    try:
        _git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    except WorktreeError:
        return False
    return True


def _exclude(repo: Path) -> None:
    """Add `/.tether/worktrees/` to the repository's `info/exclude` (once), so the main
    checkout does not show the worktrees as untracked files."""
    try:
        common = Path(_git(repo, "rev-parse", "--git-common-dir"))
        exclude = (common if common.is_absolute() else repo / common) / "info" / "exclude"
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if _EXCLUDE_LINE not in text.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            sep = "" if not text or text.endswith("\n") else "\n"
            exclude.write_text(f"{text}{sep}{_EXCLUDE_LINE}\n", encoding="utf-8")
    except (OSError, WorktreeError):
        pass  # only cosmetic: the worktree works without it


def changed(tree: Worktree) -> bool:
    """Whether the worktree holds work: a file changed, added (untracked, not ignored) or
    deleted, or a commit on its branch since it started."""
    if _git(tree.path, "status", "--porcelain", "--untracked-files=normal"):
        return True
    return _git(tree.path, "rev-parse", "HEAD") != tree.base


def finish(tree: Worktree) -> str:
    """At the end of the session: remove an unchanged worktree and its branch, keep a changed
    one. Returns the one line saying which (and where).

    Raises:
        WorktreeError: git failed (the worktree is then left as it is).
    """
    if changed(tree):
        return f"worktree kept: {tree.path} (branch {tree.branch} has changes)"
    _git(tree.repo, "worktree", "remove", str(tree.path))
    _git(tree.repo, "branch", "-D", "--quiet", tree.branch)
    return f"worktree {tree.name} removed: nothing changed"


def folder_in(tree: Worktree, cwd: Path) -> Path:
    """Where a session started in `cwd` works in the worktree: the same subfolder of it."""
    try:
        rel = cwd.resolve().relative_to(tree.repo)
    except ValueError:
        return tree.path
    inside = tree.path / rel
    return inside if inside.is_dir() else tree.path


def close(tree: Worktree) -> str:
    """`finish`, with a failure told as the line (the worktree then stays as it is)."""
    try:
        return finish(tree)
    except WorktreeError as exc:
        return f"worktree kept: {tree.path} (could not clean it up: {exc})"
