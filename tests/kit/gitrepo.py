"""A real git repository for a test: `git(cwd, *args)` (a fixed identity, output returned) and
`repo(tmp_path, files)` (a `proj` folder with those files committed on `main`)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    """`git -C cwd ARGS` with a test identity; its stdout, stripped. Raises on failure."""
    out = subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def repo(tmp_path: Path, files: Mapping[str, str]) -> Path:
    """`tmp_path/proj`, a repository on branch `main` whose first commit holds `files`
    (relative path → text)."""
    root = tmp_path / "proj"
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root
