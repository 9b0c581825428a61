"""Gathering the facts at session start: git, instruction files on disk (order, names, caps,
imports kept inside the project), and subfolder files added once as the agent touches them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.messages import CompactSummaryBlock, Turn
from tether.prompt.gather import SubfolderInstructions, git_facts, load_instructions
from tether.tools.exec.run import system_note_block

NAMES = ["AGENTS.md", "CLAUDE.md"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def repo(path: Path, *, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    if commit:
        (path / "f.txt").write_text("x")
        git(path, "add", ".")
        git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    return path


def test_git_facts_say_branch_dirty_and_no_commits(tmp_path: Path) -> None:
    r = repo(tmp_path / "r")
    facts, _ = git_facts(r)
    assert facts is not None and facts.branch == "main" and facts.has_commits and not facts.dirty
    (r / "new.txt").write_text("y")
    dirty, _ = git_facts(r)
    assert dirty is not None and dirty.dirty
    empty, _ = git_facts(repo(tmp_path / "e", commit=False))
    assert empty is not None and not empty.has_commits
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_facts(plain) == (None, "not a git repository")


def test_git_missing_is_a_fact_not_an_error(tmp_path: Path) -> None:
    def no_git(*_a: object, **_k: object) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError("git")

    assert git_facts(tmp_path, run=no_git) == (None, "git is not installed")


def load(cwd: Path, user: Path, cap: int = 32 * 1024, names: list[str] = NAMES):
    return load_instructions(cwd, names=names, user_dir=user, home=user.parent, cap_bytes=cap)


def test_user_file_then_git_root_down_to_the_working_folder(tmp_path: Path) -> None:
    r = repo(tmp_path / "r", commit=False)
    cwd = r / "a" / "b"
    cwd.mkdir(parents=True)
    user = tmp_path / "cfg"
    user.mkdir()
    (user / "AGENTS.md").write_text("user rules")
    (r / "AGENTS.md").write_text("root rules")
    (r / "CLAUDE.md").write_text("not read: AGENTS.md wins in this folder")
    (r / "a" / "CLAUDE.md").write_text("a rules")
    (cwd / "AGENTS.md").write_text("b rules")
    (tmp_path / "AGENTS.md").write_text("above the repository: not read")
    got = load(cwd, user)
    assert [(f.name, f.scope, f.text) for f in got.files] == [
        ("~/cfg/AGENTS.md", "user", "user rules"),
        ("AGENTS.md", "project", "root rules"),
        ("a/CLAUDE.md", "project", "a rules"),
        ("a/b/AGENTS.md", "project", "b rules"),
    ]
    assert got.files[1].size_bytes == len("root rules") and len(got.files[1].sha256) == 64
    assert [f.name for f in load(cwd, user, names=["CLAUDE.md"]).files] == ["CLAUDE.md", "a/CLAUDE.md"]
    assert load(cwd, user, names=[]).files == ()


def test_outside_git_only_the_folder_itself(tmp_path: Path) -> None:
    cwd = tmp_path / "w"
    cwd.mkdir()
    (tmp_path / "AGENTS.md").write_text("parent")
    (cwd / "AGENTS.md").write_text("here")
    assert [f.text for f in load(cwd, tmp_path / "nocfg").files] == ["here"]


def test_imports_are_expanded_and_kept_inside_the_project(tmp_path: Path) -> None:
    cwd = repo(tmp_path / "r", commit=False)
    (tmp_path / "outside.md").write_text("SECRET")
    (cwd / "docs").mkdir()
    (cwd / "docs" / "style.md").write_text("tabs")
    (cwd / "docs" / "link.md").symlink_to(tmp_path / "outside.md")
    (cwd / "AGENTS.md").write_text("@docs/style.md @docs/link.md @../outside.md")
    got = load(cwd, tmp_path / "cfg")
    assert got.files[0].text == "tabs @docs/link.md @../outside.md"
    assert "SECRET" not in got.files[0].text
    assert got.files[0].imports == (str(cwd / "docs" / "style.md"),)
    assert len(got.problems) == 1  # `../outside.md`; the link resolves outside and reads as missing


def test_the_total_is_capped_with_a_note(tmp_path: Path) -> None:
    cwd = repo(tmp_path / "r", commit=False)
    (cwd / "AGENTS.md").write_text("line\n" * 100)
    got = load(cwd, tmp_path / "cfg", cap=50)
    assert got.files[0].text == "line\n" * 10
    assert got.note == "instruction files over the 50-byte cap: AGENTS.md cut to 50 of 500 bytes"


def history_with(notes: list[str], *, replaced: bool = False) -> list[Turn]:
    turns = [Turn(id="u1", role="user", content=tuple(system_note_block(n) for n in notes))]
    if replaced:
        turns.append(Turn(id="m1", role="user",
                          content=(CompactSummaryBlock(summary="s", replaces_turn_ids=("u1",)),)))
    return turns


@pytest.fixture
def project(tmp_path: Path) -> Path:
    cwd = repo(tmp_path / "r", commit=False)
    (cwd / "api" / "v1").mkdir(parents=True)
    (cwd / "api" / "AGENTS.md").write_text("api rules")
    (cwd / "api" / "v1" / "CLAUDE.md").write_text("v1 rules")
    (cwd / "api" / "v1" / "x.py").write_text("")
    (cwd / "web").mkdir()
    return cwd


def tracker(cwd: Path) -> SubfolderInstructions:
    return SubfolderInstructions(cwd, names=NAMES, cap_bytes=1000, home=cwd.parent, user_dir=cwd.parent / "cfg")


def test_a_subfolder_file_is_added_once_when_first_touched(project: Path) -> None:
    t = tracker(project)
    history: list[Turn] = []
    notes = t.notes_for("read", {"path": "api/v1/x.py"}, history)
    assert [n.splitlines()[0] for n in notes] == [
        "Instruction file api/AGENTS.md (for work under api/), read as you first worked there:",
        "Instruction file api/v1/CLAUDE.md (for work under api/v1/), read as you first worked there:",
    ]
    assert notes[0].splitlines()[1] == "api rules"
    assert t.notes_for("edit", {"path": "api/v1/x.py"}, history) == ()
    assert t.notes_for("ls", {"path": "web"}, history) == ()
    assert t.notes_for("bash", {"command": "cat api/AGENTS.md"}, history) == ()
    assert t.notes_for("read", {"path": "AGENTS.md"}, history) == ()  # the working folder's own


def test_notes_already_in_a_resumed_history_count_until_a_compaction_replaces_them(project: Path) -> None:
    note = tracker(project).notes_for("ls", {"path": "api"}, [])[0]
    resumed = history_with([note])
    assert tracker(project).notes_for("ls", {"path": "api"}, resumed) == ()
    t = tracker(project)
    assert t.notes_for("ls", {"path": "api"}, resumed) == ()
    compacted = history_with([note], replaced=True)
    again = t.notes_for("ls", {"path": "api"}, compacted)
    assert len(again) == 1 and "api rules" in again[0]
