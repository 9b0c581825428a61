"""The shadow repository: what a snapshot holds (ignore rules, the size cap, the project's own
`.git` untouched, nested repositories left out) and the rewind round trip as a property: after
random edit / write / delete / create turns, restoring each turn's checkpoint gives exactly
the tree it had."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.checkpoint.restore import restore
from tether.checkpoint.shadow import ShadowRepo


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (outside `.git`), relative path → content."""
    out: dict[str, bytes] = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def put(root: Path, rel: str, data: bytes) -> None:
    """Write `rel` as an agent would: a file standing where a folder must be is removed."""
    path = root / rel
    for parent in reversed(Path(rel).parents):
        spot = root / parent
        if str(parent) != "." and spot.is_file():
            spot.unlink()
    if path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_a_snapshot_honours_gitignore_skips_large_files_and_nested_repos(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    put(root, "src/a.py", b"a")
    put(root, "build/out.bin", b"o")
    put(root, "x.log", b"l")
    put(root, "big.bin", b"0" * 2000)
    put(root, ".git/info/exclude", b"secret.txt\n")
    put(root, "secret.txt", b"s")
    put(root, "vendor/lib/code.c", b"c")
    subprocess.run(["git", "init", "-q", str(root / "vendor" / "lib")], check=True)
    before = tree(root / ".git")
    repo = ShadowRepo(root, store=tmp_path / "store", max_file_bytes=1000)
    snap = repo.snapshot()
    assert set(repo.files(snap.commit)) == {".gitignore", "src/a.py"}
    assert set(snap.skipped) == {"big.bin", "vendor/lib"}
    assert tree(root / ".git") == before  # the project's own repository is untouched
    assert repo.git_dir.parent == tmp_path / "store"


def test_restore_keeps_protected_and_kept_paths_and_removes_created_folders(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    put(root, "a.txt", b"1")
    put(root, "big.bin", b"0" * 50)
    repo = ShadowRepo(root, store=tmp_path / "store", max_file_bytes=10)
    first = repo.snapshot()
    put(root, "a.txt", b"2")
    put(root, "new/deep/n.txt", b"n")
    put(root, "mine.txt", b"user edit")
    now = repo.snapshot()
    report = restore(repo, now.commit, first.commit, keep=["mine.txt"], protect=first.skipped)
    assert tree(root) == {"a.txt": b"1", "big.bin": b"0" * 50, "mine.txt": b"user edit"}
    assert not (root / "new").exists()
    assert report.removed == ("new/deep/n.txt",) and report.kept == ("mine.txt",)


def test_an_unchanged_folder_gives_the_same_commit_and_modes_and_links_come_back(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    put(root, "run.sh", b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("run.sh")
    repo = ShadowRepo(root, store=tmp_path / "store")
    first = repo.snapshot()
    assert repo.snapshot().commit == first.commit
    (root / "run.sh").unlink()
    (root / "link").unlink()
    restore(repo, repo.snapshot().commit, first.commit)
    assert os.access(root / "run.sh", os.X_OK)
    assert os.readlink(root / "link") == "run.sh"


def test_git_missing_is_a_checkpoint_error(tmp_path: Path) -> None:
    from tether.checkpoint.shadow import CheckpointError

    repo = ShadowRepo(tmp_path, store=tmp_path / "store", git="/nonexistent/git")
    try:
        repo.snapshot()
    except CheckpointError as exc:
        assert "git" in str(exc)
    else:
        raise AssertionError("expected CheckpointError")


PATHS = ["a", "b.txt", "d", "d/c", "d/e/f", "g/h"]
op = st.tuples(st.sampled_from(["write", "delete"]), st.sampled_from(PATHS), st.binary(max_size=8))


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    initial=st.dictionaries(st.sampled_from(["a", "b.txt", "d/c"]), st.binary(max_size=8)),
    turns=st.lists(st.lists(op, min_size=1, max_size=4), min_size=1, max_size=4),
    order=st.randoms(use_true_random=False),
)
def test_rewinding_to_each_checkpoint_gives_exactly_that_tree(
    tmp_path_factory: object, initial: dict[str, bytes], turns: list[list[tuple[str, str, bytes]]],
    order: object,
) -> None:
    import random
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "p"
        root.mkdir()
        for rel, data in initial.items():
            put(root, rel, data)
        repo = ShadowRepo(root, store=Path(tmp) / "store")
        checkpoints: list[tuple[str, dict[str, bytes]]] = []
        for ops in turns:
            checkpoints.append((repo.snapshot().commit, tree(root)))
            for kind, rel, data in ops:
                target = root / rel
                if kind == "write":
                    put(root, rel, data)
                elif target.is_file():
                    target.unlink()
                elif target.is_dir():
                    shutil.rmtree(target)
        assert isinstance(order, random.Random)
        picks = list(range(len(checkpoints)))
        order.shuffle(picks)
        for i in picks:
            commit, expected = checkpoints[i]
            restore(repo, repo.snapshot().commit, commit)
            assert tree(root) == expected


def test_the_shadow_repository_ignores_the_users_git_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = /nonexistent\n[commit]\n\tgpgSign = true\n")
    root = tmp_path / "p"
    root.mkdir()
    put(root, "a", b"1")
    env = {**os.environ, "HOME": str(home)}
    old = os.environ.copy()
    os.environ.update(env)
    try:
        snap = ShadowRepo(root, store=tmp_path / "store").snapshot()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = subprocess.run(
        ["git", "--git-dir", str(ShadowRepo(root, store=tmp_path / "store").git_dir), "cat-file", "-t", snap.commit],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == "commit"


def test_a_snapshot_spawns_few_git_processes_and_git_accepts_what_tether_wrote(
    tmp_path: Path, monkeypatch: object
) -> None:
    """The repository is created and each commit written without a git process (they were ten
    processes for a first snapshot and one more per change: most of a short run's wall time);
    git itself then reads the chain: `fsck --strict` finds nothing wrong, `log` walks it."""
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    spawned: list[str] = []
    real_run = subprocess.run

    def counting_run(argv: list[str], *args: object, **kwargs: object) -> object:
        spawned.append(next(a for a in argv[1:] if not a.startswith("-") and "=" not in a))
        return real_run(argv, *args, **kwargs)  # pyright: ignore[reportUnknownVariableType, reportArgumentType, reportCallIssue]

    root = tmp_path / "p"
    root.mkdir()
    put(root, "a.txt", b"1")
    put(root, "d/b.txt", b"2")
    repo = ShadowRepo(root, store=tmp_path / "store")
    monkeypatch.setattr(subprocess, "run", counting_run)
    first = repo.snapshot("first")
    assert spawned == ["ls-files", "update-index", "write-tree"]
    spawned.clear()
    put(root, "a.txt", b"changed")
    second = repo.snapshot("second")
    assert spawned == ["status", "update-index", "write-tree"]
    spawned.clear()
    assert repo.snapshot("unchanged").commit == second.commit
    assert spawned == ["status"]
    monkeypatch.undo()
    env = {"GIT_DIR": str(repo.git_dir), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    fsck = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], env=env, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    log = subprocess.run(["git", "log", "--format=%H %P %s"], env=env, capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == [f"{second.commit} {first.commit} second", f"{first.commit}  first"]
    assert repo.files(first.commit) == {"a.txt": b"1", "d/b.txt": b"2"}
    restore(repo, second.commit, first.commit)
    assert tree(root) == {"a.txt": b"1", "d/b.txt": b"2"}
