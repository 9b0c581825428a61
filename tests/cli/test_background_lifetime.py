"""Issue 40 item 3: none of the background shells a `tether run` starts outlives it — the run
ending (in process: the agent's close), SIGTERM mid-run, and `kill -9` of the tether process
(the sandbox's kernel-side reaping), under bwrap and under Landlock. The model is a loopback
server that plays a script (`kit.faultserver`)."""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kit.cli import cli_env, popen, run_cli, tether
from kit.faultserver import FaultServer, text, tool
from kit.sandbox import sandbox_for
from tether.session import SessionStore

_n = itertools.count(1)


@pytest.fixture(params=("bwrap", "landlock"))
def kind(request: pytest.FixtureRequest) -> str:
    sandbox_for(str(request.param))  # skips where it does not work
    return str(request.param)


def _marker() -> str:
    return f"{os.getpid() % 9000 + 1000}{next(_n) + 700:03d}"


def _alive(mark: str) -> list[int]:
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if f"sleep {mark}" in cmd and ") Z" not in stat:
            out.append(int(name))
    return out


def _left(mark: str) -> list[int]:
    """Wait up to 3 s for `sleep MARK` to be gone; what is left is killed and returned."""
    left: list[int] = []
    for _ in range(60):
        left = _alive(mark)
        if not left:
            return []
        time.sleep(0.05)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def _wait_for(check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def _args(server: FaultServer) -> list[str]:
    return ["run", "-m", "openai/m", "--base-url", server.openai_url, "--session", "s1"]


def test_a_run_that_started_a_background_shell_leaves_nothing(tmp_path: Path, kind: str) -> None:
    mark = _marker()
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
    assert _left(mark) == [], f"a background shell outlived `tether run` under {kind}"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_tether_ended_mid_run_takes_its_background_shells(
    tmp_path: Path, kind: str, sig: signal.Signals
) -> None:
    mark = _marker()
    home = tmp_path / "home"
    script = [
        tool("bash", command=f"sleep {mark}", run_in_background=True),
        tool("bash", command="sleep 60"),
        text("done"),
    ]
    with FaultServer(script) as server:
        child = popen([*_args(server), "go"], home, env=cli_env(home, TETHER_SANDBOX=kind))
        try:
            assert _wait_for(lambda: bool(_alive(mark)) and len(server.requests) >= 2), (
                "the background shell never started"
            )
            child.send_signal(sig)
            code = child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert code == (130 if sig == signal.SIGTERM else -signal.SIGKILL)
    assert _left(mark) == [], f"a background shell outlived tether's {sig.name} under {kind}"


@pytest.mark.slow
def test_a_tether_process_exits_and_leaves_nothing(tmp_path: Path, kind: str) -> None:
    """The real process, start to end: exit 0, nothing left."""
    mark = _marker()
    home = tmp_path / "home"
    script = [tool("bash", command=f"sleep {mark}", run_in_background=True), text("done")]
    with FaultServer(script) as server:
        proc = tether([*_args(server), "go"], home, TETHER_SANDBOX=kind)
    assert proc.returncode == 0, proc.stderr
    assert _left(mark) == [], f"a background shell outlived the tether process under {kind}"
