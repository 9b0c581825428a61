"""A `--worktree` session of a repository under `/tmp` (a `mktemp` clone, CI): git works in
the sandbox (found by a new user: bubblewrap's private `/tmp` hid the repository's `.git`, and
every git command failed "not a git repository"); the git folders it sees stay read-only."""

from __future__ import annotations

from pathlib import Path

from kit.gitrepo import repo as make_repo
from kit.sandbox import bash, context
from tether.sandbox.config import worktree_git
from tether.worktrees import create


async def test_git_works_in_a_worktree_of_a_repository_under_tmp(kind: str, tmp_path: Path) -> None:
    repository = make_repo(tmp_path, {"a.txt": "one\n"})
    assert str(repository).startswith("/tmp/")
    tree = create(repository, "ok1")
    common = (repository / ".git").resolve()
    assert worktree_git(tree.path) == (common / "worktrees" / "ok1", common)
    ctx = context(tree.path, kind)
    out = await bash(ctx, "git log --oneline | wc -l; git status --short | wc -l; cat a.txt")
    assert not out.is_error, out.text
    assert out.text.split()[:3] == ["1", "0", "one"], out.text
    wrote = await bash(ctx, f"touch {common}/planted 2>&1; echo x > b.txt && cat b.txt")
    assert "Read-only file system" in wrote.text or "Permission denied" in wrote.text, wrote.text
    assert not (common / "planted").exists()
    assert (tree.path / "b.txt").read_text() == "x\n"  # the worktree itself is the agent's


def test_a_plain_folder_or_repository_has_no_outside_git(tmp_path: Path) -> None:
    repository = make_repo(tmp_path, {"a.txt": "one\n"})
    assert worktree_git(repository) == ()
    assert worktree_git(tmp_path / "nothing") == ()
