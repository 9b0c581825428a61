"""Issue 40 item 3: none of the background shells a `tether run` starts outlives it — the run
ending (in process: the agent's close), SIGTERM mid-run, and `kill -9` of the tether process
(the sandbox's kernel-side reaping), under bwrap and under Landlock. The model is a loopback
server that plays a script (`kit.faultserver`)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kit.cli import cli_env, popen, run_cli, tether
from kit.faultserver import FaultServer, text, tool
from kit.procs import alive, left, marker
from kit.sandbox import sandbox_for
from tether.session import SessionStore


@pytest.fixture(params=("bwrap", "landlock"))
def kind(request: pytest.FixtureRequest) -> str:
    sandbox_for(str(request.param))  # skips where it does not work
    return str(request.param)


def _wait_for(check: Callable[[], bool], timeout_s: float = 60.0) -> bool:
    """Whether `check` held within `timeout_s` (60 s: a tether process starting, requesting and
    spawning under bwrap took over 20 s on a CI machine loaded by a second test run)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def _args(server: FaultServer) -> list[str]:
    return ["run", "-m", "openai/m", "--base-url", server.openai_url, "--session", "s1"]


def test_a_run_that_started_a_background_shell_leaves_nothing(tmp_path: Path, kind: str) -> None:
    mark = marker()
    home = tmp_path / "home"
    script = [
        tool("bash", command=f"echo up; sleep {mark}", run_in_background=True),
        tool("bash", command="sleep 1"),  # the shell has started and written by then
        text("done"),
    ]
    with FaultServer(script) as server:
        proc = run_cli([*_args(server), "start it"], home, TETHER_SANDBOX=kind)
    assert proc.returncode == 0, proc.stderr
    turns = SessionStore(home / "sessions").load("s1").turns
    (result,) = turns[2].tool_results
    assert "started background shell bash_1" in result.text, result.text
    log = home / "sessions" / "s1" / "tasks" / "bash_1.log"
    assert log.read_text().startswith("up")
    # the run ended in this very process: only the agent's close can have ended the shell
    assert left(f"sleep {mark}") == [], f"a background shell outlived `tether run` under {kind}"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_tether_ended_mid_run_takes_its_background_shells(
    tmp_path: Path, kind: str, sig: signal.Signals
) -> None:
    mark = marker()
    home = tmp_path / "home"
    script = [
        tool("bash", command=f"sleep {mark}", run_in_background=True),
        tool("bash", command="sleep 60"),
        text("done"),
    ]
    with FaultServer(script) as server:
        child = popen([*_args(server), "go"], home, env=cli_env(home, TETHER_SANDBOX=kind))
        try:
            assert _wait_for(lambda: bool(alive(f"sleep {mark}")) and len(server.requests) >= 2), (
                "the background shell never started"
            )
            child.send_signal(sig)
            code = child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert code == (130 if sig == signal.SIGTERM else -signal.SIGKILL)
    assert left(f"sleep {mark}") == [], f"a background shell outlived tether's {sig.name} under {kind}"


@pytest.mark.slow
def test_a_tether_process_exits_and_leaves_nothing(tmp_path: Path, kind: str) -> None:
    """The real process, start to end: exit 0, nothing left."""
    mark = marker()
    home = tmp_path / "home"
    script = [tool("bash", command=f"sleep {mark}", run_in_background=True), text("done")]
    with FaultServer(script) as server:
        proc = tether([*_args(server), "go"], home, TETHER_SANDBOX=kind)
    assert proc.returncode == 0, proc.stderr
    assert left(f"sleep {mark}") == [], f"a background shell outlived the tether process under {kind}"
