"""tether's own git calls on the host run nothing a repository's config names: a repository
whose `core.fsmonitor`, hooks, filter and diff drivers each write a marker file, put through
checkpoints (snapshot, rewind), worktrees (create, check, remove) and the prompt's git facts,
leaves no marker; the same repository's own `git status` / `git worktree add` writes one (the
trap is live)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tether.checkpoint.restore import restore
from tether.checkpoint.shadow import ShadowRepo
from tether.prompt.gather import git_facts
from tether.worktrees import changed, create, finish

HOOKS = ("post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change")


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def _trapped_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with one commit whose config names a program at every place git would run
    one; each appends to the marker file."""
    root, marker = tmp_path / "repo", tmp_path / "marker"
    root.mkdir()
    trap = tmp_path / "trap.sh"
    trap.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    trap.chmod(0o755)
    _git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    for key, value in (
        ("core.fsmonitor", str(trap)),
        ("filter.evil.clean", str(trap)),
        ("filter.evil.smudge", str(trap)),
        ("filter.evil.required", "true"),
        ("diff.evil.textconv", str(trap)),
        ("diff.external", str(trap)),
        ("core.pager", str(trap)),
    ):
        _git(root, "config", key, value)
    hooks = root / ".git" / "hooks"
    for name in HOOKS:
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    (root / "a.txt").write_text("two\n")  # a changed file: status must look at its content
    os.utime(root / "a.txt", (1, 1))
    return root, marker


def test_the_trap_is_live_for_plain_git(tmp_path: Path) -> None:
    root, marker = _trapped_repo(tmp_path)
    _git(root, "status", "--porcelain")
    assert marker.is_file() and marker.read_text()


def test_checkpoints_worktrees_and_git_facts_run_nothing_the_repository_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, marker = _trapped_repo(tmp_path)
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(tmp_path / "trap.sh"))
    monkeypatch.setenv("GIT_PAGER", str(tmp_path / "trap.sh"))

    facts, why = git_facts(root)
    assert facts is not None, why
    assert facts.dirty

    shadow = ShadowRepo(root, store=tmp_path / "store")
    first = shadow.snapshot()
    (root / "b.txt").write_text("new\n")
    (root / "a.txt").write_text("three\n")
    second = shadow.snapshot()
    assert second.commit != first.commit
    restore(shadow, second.commit, first.commit)
    assert (root / "a.txt").read_text() == "two\n" and not (root / "b.txt").exists()

    kept = create(root, "work")
    assert (kept.path / "a.txt").read_text() == "one\n"
    (kept.path / "c.txt").write_text("x\n")
    assert changed(kept)
    finish(kept)
    gone = create(root, "gone")
    assert not changed(gone)
    finish(gone)
    assert not gone.path.exists()

    assert not marker.exists(), marker.read_text()


def test_a_required_filter_emptied_does_not_fail_the_worktree(tmp_path: Path) -> None:
    root, _marker = _trapped_repo(tmp_path)
    tree = create(root, "req")
    assert stat.S_ISREG((tree.path / "a.txt").stat().st_mode)


def test_a_driver_defined_in_an_included_file_is_emptied_too(tmp_path: Path) -> None:
    """The git facts skip asking git for drivers when the repository's config names none; an
    `[include]` may hide one, so it counts as naming one."""
    root, marker = _trapped_repo(tmp_path)
    for key in ("filter.evil.clean", "filter.evil.smudge", "filter.evil.required",
                "diff.evil.textconv"):  # fmt: skip
        _git(root, "config", "--unset", key)
    extra = tmp_path / "extra.cfg"
    trap = tmp_path / "trap.sh"
    extra.write_text(f'[filter "evil"]\n\tclean = {trap}\n\tsmudge = {trap}\n')
    _git(root, "config", "include.path", str(extra))
    _git(root, "status", "--porcelain")
    assert marker.is_file()  # live for plain git
    marker.unlink()
    facts, why = git_facts(root)
    assert facts is not None and facts.dirty, why
    assert not marker.exists(), marker.read_text()
