"""Exit codes and refusals of `tether run` that need no model: the table of docs/cli.md, checked."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kit.cli import Completed, run_cli, tether
from tether.session import SessionStore


def _tether(args: list[str], home: Path, stdin: str | None = None) -> Completed:
    """`tether ARGS` in process, in `home`'s parent folder."""
    return run_cli(args, home, cwd=home.parent, input=stdin or "")


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["run", "--bogus"], 1, "No such option"),
        (["run", "--max-turns", "0", "hi"], 1, "max-turns"),
        (["nope"], 1, "No such command"),
        (["run", ""], 1, "empty prompt"),
        (["run", "--resume", "x", "--no-session", "hi"], 1, "cannot be combined"),
        (["run", "--session", "a", "--resume", "b", "hi"], 1, "cannot be combined"),
        (["run", "--model", "nope/x", "hi"], 1, "unknown provider"),
        (["run", "--model", "openai/gpt-4o", "hi"], 2, "OPENAI_API_KEY"),
        (["run", "--model", "anthropic/claude-sonnet-4-5", "hi"], 2, "ANTHROPIC_API_KEY"),
        (["run", "--resume", "missing", "hi"], 1, "no session"),
        (["sessions", "show", "missing"], 1, "no session"),
    ],
)
def test_usage_and_auth_exit_codes(tmp_path: Path, args: list[str], code: int, says: str) -> None:
    home = tmp_path / "home"
    proc = _tether(args, home)
    assert proc.returncode == code, proc.stderr
    assert says in proc.stderr
    assert proc.stdout == ""
    assert not list((home / "sessions").glob("*.jsonl"))  # nothing persisted


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "--bogus"], "tether: run: No such option: --bogus (see `tether run --help`)"),
        (["nope"], "tether: No such command 'nope'. (see `tether --help`)"),
        (
            ["sessions", "show"],
            "tether: sessions show: Missing argument 'SESSION_ID'. "
            "(see `tether sessions show --help`)",
        ),
    ],
)
def test_a_usage_error_is_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    """Click prints a usage error in three lines (usage, hint, error); tether in one."""
    proc = _tether(args, tmp_path / "home")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [line]


@pytest.mark.parametrize(
    ("args", "code"), [(["nope"], 1), (["run", "--model", "openai/gpt-4o", "hi"], 2)]
)
def test_the_exit_code_is_the_processs(tmp_path: Path, args: list[str], code: int) -> None:
    """The codes above, as a real `tether` process ends with them (the console entry)."""
    proc = tether(args, tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == code, proc.stderr


def test_a_broken_json_context_exits_5(tmp_path: Path) -> None:
    proc = _tether(["run", "--no-session"], tmp_path / "home", stdin='{"messages": [\n')
    assert proc.returncode == 5 and "malformed input" in proc.stderr


def test_a_session_being_written_elsewhere_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    with store.create("busy", cwd=str(tmp_path)):
        proc = _tether(["run", "--resume", "busy", "hi"], home)
    assert proc.returncode == 1
    assert "being written by another process" in proc.stderr
    assert store.load("busy").turns == ()


class _Fail(BaseHTTPRequestHandler):
    status = 500

    def do_POST(self) -> None:
        body = b'{"error": {"message": "boom", "type": "server_error"}}'
        self.send_response(self.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Unauthorized(_Fail):
    status = 401


@pytest.mark.parametrize(("handler", "code"), [(_Fail, 4), (_Unauthorized, 2)])
def test_provider_errors_map_to_exit_codes(
    tmp_path: Path, handler: type[BaseHTTPRequestHandler], code: int
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        proc = _tether(["run", "--model", "openai/m", "--base-url", url, "hi"], tmp_path / "home")
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == code, proc.stderr
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [e["type"] for e in events][-2:] == ["error", "done"]


def test_an_unreachable_server_is_exit_3(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again on exit: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    proc = _tether(["run", "--model", "openai/m", "--base-url", url, "hi"], tmp_path / "home")
    assert proc.returncode == 3, proc.stderr
