"""A host that limits file sizes (`ulimit -f`: the same write error as a full disk or a quota,
deterministic): the third trial's full disk mid-run printed a 60-line traceback; and under a
hard limit lower than `tools.max_file_size` every command failed to start ("Exception
occurred in preexec_fn": a child cannot raise its hard limit). Now the commands run under the
host's limit, and the failed write is one line, exit 1, the session resumable."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from kit.cli import cli_env
from kit.faultserver import FaultServer, text, tool
from tether.session import SessionStore

TETHER = [sys.executable, "-m", "tether.cli"]
LIMIT = 20_000
"""Bytes: more than the session's first lines, less than the command's output line."""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_write_the_disk_refuses_is_one_line_and_the_session_resumes(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = cli_env(home, TETHER_CONFIG_DIR=str(tmp_path / "cfg"))
    args = ["run", "-m", "openai/m", "--session", "s1", "--output-format", "text"]
    with FaultServer([tool("bash", command="seq 1 4000"), text("done"), text("again")]) as server:
        base = [*TETHER, *args, "--base-url", server.openai_url]
        ran = subprocess.run(
            [*base, "count"], env=env, cwd=work, capture_output=True, text=True,
            preexec_fn=_limited, timeout=120,
        )
        assert ran.returncode == 1, ran.stderr
        assert "Traceback" not in ran.stderr, ran.stderr
        lines = [x for x in ran.stderr.splitlines() if "cannot write" in x]
        assert lines == [
            "tether: cannot write: File too large; what was saved before stays (make room, "
            "then `--resume` continues the session)"
        ], ran.stderr
        again = subprocess.run(
            [*TETHER, "run", "-m", "openai/m", "--base-url", server.openai_url, "--resume", "s1",
             "--output-format", "text", "go on"],
            env=env, cwd=work, capture_output=True, text=True, timeout=120,
        )
        assert again.returncode == 0, again.stderr
    turns = SessionStore(home / "sessions").load("s1").turns
    results = [r.text for t in turns for r in t.tool_results]
    assert results and not any("preexec_fn" in r for r in results), results
