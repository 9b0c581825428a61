"""A call a run-wide cancel kills (SIGINT / SIGTERM / SIGHUP, the terminal closing, during a
`bash sleep`) gets its
`tool_result` event (is_error, the `cancelled while running` text) on stdout before `done`, as
its result is stored in the session file: a real `tether run` process against a loopback model
server, signalled while the call runs."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from kit.cli import cli_env, popen
from kit.faultserver import FaultServer, text, tool
from kit.waits import wait_until
from tether.agent.sessions import CANCELLED_RUNNING


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_killed_call_gets_its_tool_result_event_before_done(tmp_path: Path, sig: int) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    script = [tool("bash", command="touch started && sleep 30"), text("never")]
    with FaultServer(script) as server:
        args = ["run", "--model", "openai/m", "--base-url", server.openai_url, "sleep please"]
        env = cli_env(home, OPENAI_API_KEY="sk-test", TETHER_CONFIG_DIR=str(tmp_path / "cfg"))
        proc = popen(args, home, cwd=work, capture=True, env=env)
        try:
            wait_until(lambda: (work / "started").exists(), timeout_s=60, what="the call runs")
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert "tool_result" in kinds and "done" in kinds, kinds
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("done"), kinds
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["is_error"] is True and result["content"] == CANCELLED_RUNNING, result
    assert result["name"] == "bash"
    assert err.splitlines().count("tether: cancelled") == 1, err
