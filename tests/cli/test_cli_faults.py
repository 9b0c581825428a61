"""`tether run` (in process, `kit.cli.run_cli`) against the fault-injection server: exit codes, attempts made,
retry events on stdout, nothing partial in the session file, nothing executed, the usage line on
stderr. Retries wait 10 ms (TETHER_RETRY_BASE), so nothing really sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kit.cli import Completed, run_cli
from kit.events import jsonl
from kit.faultserver import (
    FaultServer,
    Step,
    error_after_200,
    malformed,
    reset,
    stall,
    status,
    text,
    tool,
    truncated_tool,
)
from tether.session import SessionStore


def run_openai(server: FaultServer, home: Path, *args: str) -> Completed:
    return run_cli(
        [
            "run",
            "--model",
            "openai/m",
            "--base-url",
            server.openai_url,
            "--session",
            "s1",
            *args,
            "hi",
        ],
        home,
    )


def events(proc: Completed) -> list[dict[str, Any]]:
    return jsonl(proc.stdout)


def roles(home: Path) -> list[str]:
    return [t.role for t in SessionStore(home / "sessions").load("s1").turns]


def test_a_429_then_success_exits_0_with_a_retry_event(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([status(429), text("hello")]) as server:
        proc = run_openai(server, home)
        assert len(server.requests) == 2
    assert proc.returncode == 0, proc.stderr
    evs = events(proc)
    (retry,) = [e for e in evs if e["type"] == "retry"]
    assert retry["kind"] == "rate_limited" and retry["attempt"] == 1
    assert 0.01 <= retry["delay_s"] <= 0.0125
    assert evs[-1]["type"] == "done" and evs[-1]["text"] == "hello"
    assert roles(home) == ["user", "assistant"]
    assert "usage: in 10 / 5 out" in proc.stderr


@pytest.mark.parametrize(
    ("fault", "code", "attempts"),
    [
        (error_after_200(), 4, 3),  # T28: overloaded after HTTP 200, budget spent
        (status(500), 4, 3),
        (reset(), 3, 3),
        (status(401), 2, 1),
        (malformed(), 5, 1),
        (
            status(
                429,
                {
                    "error": {
                        "message": "quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            ),
            2,
            1,
        ),
    ],
)
def test_exhausted_faults_exit_with_their_code_and_persist_nothing_partial(
    tmp_path: Path, fault: Step, code: int, attempts: int
) -> None:
    home = tmp_path / "home"
    with FaultServer([fault] * 3) as server:
        proc = run_openai(server, home)
        assert len(server.requests) == attempts
    assert proc.returncode == code, proc.stderr
    evs = events(proc)
    assert [e["type"] for e in evs][-2:] == ["error", "done"]
    assert len([e for e in evs if e["type"] == "retry"]) == attempts - 1
    assert roles(home) == ["user"]


def test_t29_retry_after_beyond_the_cap_is_reported(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([status(429, retry_after="60")]) as server:
        proc = run_openai(server, home)
        assert len(server.requests) == 1
    assert proc.returncode == 4
    assert "retry after 60 s" in proc.stderr


def test_anthropic_overload_then_tool_then_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = [error_after_200(), tool("write", path="out.md", content="x"), text("wrote it")]
    with FaultServer(script) as server:
        proc = run_cli(
            [
                "run",
                "--model",
                "anthropic/m",
                "--base-url",
                server.anthropic_url,
                "--session",
                "s1",
                "hi",
            ],
            home,
            ANTHROPIC_API_KEY="k",
        )
        assert len(server.requests) == 3
    assert proc.returncode == 0, proc.stderr
    assert (home.parent / "work" / "out.md").read_text() == "x"
    assert roles(home) == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize("termination", ["closed", "length", "tool_calls"])
def test_t30_cut_arguments_are_never_executed(tmp_path: Path, termination: str) -> None:
    home = tmp_path / "home"
    cut = '{"path": "notes.md", "content": "line1\\nline2'
    with FaultServer([truncated_tool("write", cut, termination), text("ok")]) as server:
        proc = run_openai(server, home)
    assert proc.returncode == 0, proc.stderr
    assert not (home.parent / "work" / "notes.md").exists()
    results = [e for e in events(proc) if e["type"] == "tool_result"]
    assert all(r["is_error"] for r in results)


def test_sessions_show_prints_the_session_usage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([tool("ls", path="."), text("done")]) as server:
        assert run_openai(server, home).returncode == 0
    proc = run_cli(["sessions", "show", "s1"], home)
    assert proc.returncode == 0
    assert "usage: in 20 / 10 out" in proc.stderr  # two requests of 10 in / 5 out


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_stream_that_stalls_is_cut_after_the_idle_timeout_and_retried(
    tmp_path: Path, wire: str
) -> None:
    """trial5: a stream that sent its first chunk and then nothing (a stuck proxy) held the
    run silently for the SDK's 10-minute read timeout per attempt. `retry.stream_idle_timeout`
    cuts it as a network fault: a `retry` event naming the silence, then the next attempt."""
    home = tmp_path / "home"
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text('{"retry": {"stream_idle_timeout": "1s"}}')
    with FaultServer([stall(seconds=30), text("hello")]) as server:
        url = server.openai_url if wire == "openai" else server.anthropic_url
        proc = run_cli(
            ["run", "--model", f"{wire}/m", "--base-url", url, "--session", "s1", "hi"],
            home,
            TETHER_CONFIG_DIR=str(config),
            ANTHROPIC_API_KEY="k",
            OPENAI_API_KEY="k",
        )
        assert len(server.requests) == 2
    assert proc.returncode == 0, proc.stderr
    evs = events(proc)
    (retry,) = [e for e in evs if e["type"] == "retry"]
    assert retry["kind"] == "network"
    assert "the model sent nothing for 1 s (retry.stream_idle_timeout)" in retry["message"]
    assert evs[-1]["type"] == "done" and evs[-1]["text"] == "hello"
    assert roles(home) == ["user", "assistant"]
