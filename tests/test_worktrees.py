"""`tether.worktrees` with real git: a worktree on a new branch `tether/NAME` under
`.tether/worktrees/`, removed with its branch when nothing changed, kept when something did;
a folder outside a repository is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.gitrepo import git
from kit.gitrepo import repo as make_repo
from tether.worktrees import WorktreeError, changed, create, finish, folder_in


def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, {"src/a.txt": "one\n"})


def test_unchanged_worktree_is_removed_with_its_branch(tmp_path: Path) -> None:
    root = repo(tmp_path)
    tree = create(root / "src", "feat")
    assert tree.path == (root / ".tether" / "worktrees" / "feat").resolve()
    assert git(tree.path, "branch", "--show-current") == "tether/feat"
    assert (tree.path / "src" / "a.txt").read_text() == "one\n"
    assert folder_in(tree, root / "src") == tree.path / "src"
    assert git(root, "status", "--porcelain") == ""  # excluded: not an untracked folder
    assert not changed(tree)
    line = finish(tree)
    assert line == "worktree feat removed: nothing changed"
    assert not tree.path.exists()
    assert "tether/feat" not in git(root, "branch", "--list")


def test_changed_worktree_is_kept(tmp_path: Path) -> None:
    root = repo(tmp_path)
    tree = create(root, "work")
    (tree.path / "new.txt").write_text("hi\n")
    assert changed(tree)
    line = finish(tree)
    assert line == f"worktree kept: {tree.path} (branch tether/work has changes)"
    assert (tree.path / "new.txt").exists() and not (root / "new.txt").exists()
    again = create(root, "work")  # the same name finds it again
    assert again.path == tree.path and again.base == tree.base


def test_a_commit_counts_as_a_change(tmp_path: Path) -> None:
    root = repo(tmp_path)
    tree = create(root, "c")
    (tree.path / "src" / "a.txt").write_text("two\n")
    git(tree.path, "commit", "-q", "-am", "two")
    assert git(tree.path, "status", "--porcelain") == ""
    assert changed(tree)


def test_not_a_repository_and_bad_names(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError) as caught:
        create(plain, "x")
    assert str(caught.value) == f"{plain} is not in a git repository: --worktree needs one"
    root = repo(tmp_path)
    for bad in ("../up", "a//b", "-x", "x.lock", ""):  # "a/b" is a legal branch name now
        with pytest.raises(WorktreeError):
            create(root, bad)
