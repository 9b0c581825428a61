"""A warning a user could act on reaches stderr in every format (the third trial: a safety
hook that could not run, and a file checkpoints skipped, were only `warning` events of
stream-json; a `text` run said nothing), and is not said twice where another line tells it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kit.cli import run_cli
from kit.faultserver import FaultServer, text, tool


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_hook_that_failed_is_said_on_stderr(tmp_path: Path, fmt: str) -> None:
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    hook = {"command": str(tmp_path / "nowhere" / "check.sh"), "tools": ["bash"]}
    (config / "settings.json").write_text(json.dumps({"hooks": {"before_tool": [hook]}}))
    work = tmp_path / "work"
    work.mkdir()
    with FaultServer([tool("bash", command="echo hi"), text("done")]) as server:
        ran = run_cli(
            ["run", "-m", "openai/m", "--base-url", server.openai_url, "--no-session",
             "--output-format", fmt, "go"],
            tmp_path / "home",
            cwd=work,
        )
    assert ran.returncode == 0, ran.stderr
    said = [line for line in ran.stderr.splitlines() if "before_tool hook" in line]
    failed = [line for line in said if "failed: exit code 127" in line]
    assert len(failed) == 1 and failed[0].startswith("tether: warning: before_tool hook ")
    # and once at start, before any call: the script cannot be run there
    [start] = [line for line in said if "cannot run" in line]
    assert start.startswith("tether: warning: before_tool hook `") and "no such file" in start
    assert said == [start, *failed], ran.stderr
    assert "hook_failed" not in ran.stdout
