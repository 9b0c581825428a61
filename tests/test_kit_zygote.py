"""`kit.zygote`: a command forked from the warmed interpreter behaves as `python -m tether.cli`
started afresh (same output, exit code, environment and folder of its own), and is a process
of its own (its pid, its session, killed by a signal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kit import cli, zygote
from kit.jobs import LoopModel, env, popen, project

pytestmark = pytest.mark.slow  # real processes, and a server importing DBOS once


@pytest.mark.parametrize("args", [["--help"], ["nosuchcommand"], ["config", "show"]])
def test_a_forked_command_prints_and_exits_as_a_fresh_interpreter_does(
    tmp_path: Path, args: list[str]
) -> None:
    e = cli.cli_env(tmp_path / "home")
    fresh = subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=tmp_path,
        env=e,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    forked = zygote.run(args, env=e, cwd=tmp_path)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )


def test_each_command_has_its_own_environment_and_folder(tmp_path: Path) -> None:
    user = tmp_path / "cfg"
    user.mkdir()
    (user / "settings.json").write_text(json.dumps({"retry": {"max": "7s"}}))
    shown: list[dict[str, Any]] = []
    for k in range(2):
        here = tmp_path / f"p{k}"
        (here / ".tether").mkdir(parents=True)
        (here / ".tether" / "settings.json").write_text(
            json.dumps({"tools": {"timeout": f"{k + 1}m"}})
        )
        e = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path / "home"),
            "TETHER_HOME": str(tmp_path / "home"),
            "PYTHONPATH": cli.SRC,
        }
        if k == 0:
            e["TETHER_CONFIG_DIR"] = str(user)
        done = zygote.run(["config", "show"], env=e, cwd=here)
        assert done.returncode == 0, done.stderr
        shown.append(json.loads(done.stdout)["settings"])
    assert [s["retry"]["max"] for s in shown] == ["7s", "30s"]  # the first's variable is gone
    assert [s["tools"]["timeout"] for s in shown] == ["1m", "2m"]  # each its project's


def test_a_command_in_a_session_of_its_own_is_killed_with_its_group(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings={"poll_interval": "100ms"})
        worker = popen(tmp_path, root, "worker", "--id", "w", start_new_session=True)
        try:
            assert worker.poll() is None
            assert os.getpgid(worker.pid) == worker.pid != os.getpid()
            with pytest.raises(subprocess.TimeoutExpired):
                worker.wait(timeout=0.5)  # a worker runs until stopped
        finally:
            os.killpg(worker.pid, signal.SIGKILL)
        assert worker.wait(timeout=30) == -signal.SIGKILL
        assert worker.poll() == -signal.SIGKILL
    assert env(tmp_path)["TETHER_HOME"] == str(tmp_path / "home")


def test_a_ctrl_c_to_the_group_leaves_the_server_and_a_dead_server_is_replaced(
    tmp_path: Path,
) -> None:
    e = cli.cli_env(tmp_path / "home")
    assert zygote.run(["--help"], env=e, cwd=tmp_path).returncode == 0
    server = zygote._server  # pyright: ignore[reportPrivateUsage]
    assert server is not None
    os.kill(server.pid, signal.SIGINT)  # what a Ctrl-C at the terminal sends the whole group
    assert zygote.run(["--help"], env=e, cwd=tmp_path).returncode == 0
    assert server.poll() is None
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings={"poll_interval": "100ms"})
        worker = popen(tmp_path, root, "worker", "--id", "w", start_new_session=True)
        server.kill()  # the server dies while the worker runs
        server.wait()
        assert worker.poll() is None
        worker.kill()  # still reaches the worker (through its pidfd)
        with pytest.raises(RuntimeError, match=r"exit of .* is unknown"):
            worker.wait(timeout=30)
        with pytest.raises(RuntimeError, match=r"exit of .* is unknown"):  # and again
            worker.poll()
    assert zygote.run(["--help"], env=e, cwd=tmp_path).returncode == 0  # a new server
    assert zygote._server is not server  # pyright: ignore[reportPrivateUsage]


def test_relative_folders_large_environments_and_missing_folders_as_popen_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "settings.json").write_text(json.dumps({"tools": {"timeout": "7m"}}))
    monkeypatch.chdir(tmp_path)
    e = cli.cli_env(tmp_path / "home") | {f"BIG{k}": "x" * 100_000 for k in range(3)}
    done = zygote.run(["config", "show"], env=e, cwd=Path("."))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["settings"]["tools"]["timeout"] == "7m"
    with pytest.raises(FileNotFoundError) as info:
        zygote.run(["--help"], env=e, cwd=tmp_path / "nowhere")
    assert info.value.filename == str(tmp_path / "nowhere")
