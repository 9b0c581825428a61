"""`glob` and `grep` skip what the project's ignore files ignore (`.gitignore` at the root and
below, `.git/info/exclude`), as ripgrep does, without walking the ignored folders; a path or
pattern naming an ignored folder still searches it. The rules are `tether.gitignore`'s, checked
here against git itself."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tether.gitignore import IgnoreRules
from tether.messages import ToolResultBlock
from tether.tools.builtin.search import fd_glob

Call = Callable[..., Awaitable[ToolResultBlock]]


def _project(root: Path) -> None:
    """A project with a README-style `.venv`, a `build/`, a nested `.gitignore` and an
    exclude file; every file holds the word `needle`."""
    files = [
        "src/app.py",
        "src/pkg/mod.py",
        "src/pkg/gen_out.py",  # src/pkg/.gitignore: gen_*.py
        "src/pkg/gen_keep.py",  # ... but !gen_keep.py
        "gen_top.py",  # the nested rule does not apply above its folder
        "docs/guide.md",
        "notes.local",  # .git/info/exclude: *.local
        ".venv/lib/python3.11/site-packages/dep/core.py",
        "build/lib/app.py",
        "src/build/x.py",  # build/ (unanchored) matches at any depth
    ]
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("needle = 1\n")
    (root / ".gitignore").write_text(".venv/\nbuild/\n")
    (root / "src" / "pkg" / ".gitignore").write_text("gen_*.py\n!gen_keep.py\n")
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("*.local\n")


KEPT = [
    "docs/guide.md",
    "gen_top.py",
    "src/app.py",
    "src/pkg/gen_keep.py",
    "src/pkg/mod.py",
]


async def test_glob_and_grep_skip_ignored_files(call: Call, root: Path) -> None:
    _project(root)
    r = await call("glob", pattern="**/*.py")
    assert r.text.splitlines() == [p for p in KEPT if p.endswith(".py")]
    r = await call("glob", pattern="**/*")
    files = [p for p in r.text.splitlines() if not p.endswith("/")]
    assert sorted(files) == sorted([*KEPT, ".gitignore", "src/pkg/.gitignore"])
    r = await call("grep", pattern="needle")
    assert sorted(line.split(":")[0] for line in r.text.splitlines()) == KEPT
    r = await call("grep", pattern="needle", path="src")
    assert sorted(line.split(":")[0] for line in r.text.splitlines()) == [
        p for p in KEPT if p.startswith("src/")
    ]


async def test_a_path_into_an_ignored_folder_is_searched(call: Call, root: Path) -> None:
    _project(root)
    dep = ".venv/lib/python3.11/site-packages/dep/core.py"
    (root / ".venv" / ".gitignore").write_text("*\n")  # as venv, virtualenv and uv write it
    r = await call("grep", pattern="needle", path=".venv/lib")
    assert r.text == f"{dep}:1: needle = 1"
    r = await call("grep", pattern="needle", path=dep)
    assert r.text == f"{dep}:1: needle = 1"
    r = await call("grep", pattern="needle", glob=".venv/**/*.py")
    assert r.text == f"{dep}:1: needle = 1"
    assert (await call("glob", pattern=".venv/**/*.py")).text == dep
    assert (await call("glob", pattern="**/*.py", path=".venv")).text == dep
    assert (await call("glob", pattern="lib/*.py", path="build")).text == "build/lib/app.py"
    assert "no matches" in (await call("glob", pattern="nope/**/*.py")).text


def test_an_ignored_folder_is_never_walked(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(root)
    for i in range(20):
        (root / ".venv" / f"d{i}").mkdir()
    listed: list[str] = []
    real_scandir = os.scandir

    def counting(path: int | str = ".") -> object:
        listed.append(os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int) else path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    found = fd_glob(root, root, "**/*.py", show_git=False)
    assert sorted(found) == [p for p in KEPT if p.endswith(".py")]
    walked = sorted(os.path.relpath(p, root) for p in listed)
    assert walked == [".", "docs", "src", "src/pkg"]


CASES = [
    ".venv",
    ".venv/lib/x.py",
    "build",
    "src/build",
    "src/build/x.py",
    "src/pkg/gen_out.py",
    "src/pkg/gen_keep.py",
    "src/pkg/mod.py",
    "gen_top.py",
    "notes.local",
    "docs/guide.md",
]


@pytest.mark.parametrize("path", CASES)
def test_the_rules_agree_with_git(root: Path, path: str) -> None:
    _project(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git" / "info" / "exclude").write_text("*.local\n")
    git = subprocess.run(["git", "check-ignore", "-q", path], cwd=root, check=False)
    assert git.returncode in (0, 1)
    assert IgnoreRules.covers(root, path) == (git.returncode == 0)
