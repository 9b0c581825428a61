"""`tether run --token` (issue 39, audit row "flags"): the key for --model's provider from the
command line or a file (`@PATH`), never put in the environment (a tool cannot print it), never
stored in the session, never printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.cli import run_cli
from kit.endpoint import Endpoint
from tether import credentials

KEY = "sk-flag-0123456789abcdef"


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    yield
    credentials._GIVEN.clear()  # pyright: ignore[reportPrivateUsage] - the CLI runs in-process


def _run(url: str, home: Path, *args: str):
    return run_cli(["run", "--model", "openai/m", "--base-url", url, *args], home)


def test_the_key_reaches_the_provider_and_nothing_else(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Endpoint() as server:
        proc = _run(server.url, home, "--session", "t1", "--token", KEY, "hi")
    assert proc.returncode == 0, proc.stderr
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in proc.stdout + proc.stderr
    stored = "".join(p.read_text() for p in (home / "sessions").rglob("*") if p.is_file())
    assert stored and KEY not in stored


def test_at_path_reads_the_key_from_a_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    keyfile = tmp_path / "key"
    keyfile.write_text(KEY + "\n")
    with Endpoint() as server:
        proc = _run(server.url, home, "--no-session", "--token", f"@{keyfile}", "hi")
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_mistakes_are_one_line_and_exit_1(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Endpoint() as server:
        for args in (
            ["--token", f"@{tmp_path / 'missing'}"],
            ["--token", "  "],
        ):
            proc = _run(server.url, home, "--no-session", *args, "hi")
            assert proc.returncode == 1 and "--token" in proc.stderr, proc.stderr
            assert "Traceback" not in proc.stderr
        no_model = run_cli(["run", "--no-session", "--token", KEY, "hi"], home)
        assert no_model.returncode == 1 and "--token needs --model" in no_model.stderr
        assert KEY not in no_model.stderr
        assert server.requests == []
