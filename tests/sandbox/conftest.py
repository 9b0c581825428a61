"""Fixtures of the containment suite: `kind` runs each test under bwrap and under Landlock."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=("bwrap", "landlock"))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project with a `.git` (config, an executable hook) and a `.tether` (settings)."""
    r = (tmp_path / "proj").resolve()
    (r / ".git" / "hooks").mkdir(parents=True)
    (r / ".git" / "config").write_text("[core]\n")
    hook = r / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    (r / ".tether").mkdir()
    (r / ".tether" / "settings.json").write_text("{}\n")
    return r
