"""`tether run` and the sandbox: `--safe` offers read-only tools only; without an OS sandbox safe
mode is forced with one warning (stderr line + `warning` event); a bad `TETHER_SANDBOX` is a
usage error."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from kit.cli import Completed, run_cli
from kit.sandbox import sandbox_or_skip


class _Recorder(BaseHTTPRequestHandler):
    """Records each request body, then answers 500 (the run stops with exit code 4)."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        body = b'{"error": {"message": "boom", "type": "server_error"}}'
        self.send_response(500)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _run(tmp_path: Path, args: list[str], sandbox: str) -> tuple[Completed, list[str]]:
    """`tether run` (in process) against a loopback server that records the offered tools."""
    _Recorder.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        cmd = ["run", "--no-session", "-m", "openai/m", "--base-url", url, "--max-turns", "1"]
        proc = run_cli([*cmd, *args, "hi"], tmp_path / "home", cwd=tmp_path, TETHER_SANDBOX=sandbox)
    finally:
        server.shutdown()
        server.server_close()
    tools = (
        [t["function"]["name"] for t in _Recorder.bodies[0].get("tools", [])]
        if _Recorder.bodies
        else []
    )
    return proc, tools


SAFE = ["read", "ls", "glob", "grep", "shell_output", "shell_kill", "todo", "skill"]


def test_no_sandbox_forces_safe_mode_with_one_warning(tmp_path: Path) -> None:
    proc, tools = _run(tmp_path, [], "none")
    assert proc.stderr.count("no OS sandbox") == 1, proc.stderr
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    warnings = [e for e in events if e["type"] == "warning"]
    assert len(warnings) == 1 and warnings[0]["kind"] == "no_sandbox"
    assert tools == SAFE


def test_safe_flag_offers_read_only_tools(tmp_path: Path) -> None:
    sandbox_or_skip()
    proc, tools = _run(tmp_path, [], "auto")
    assert "no OS sandbox" not in proc.stderr
    assert "write" in tools and "bash" in tools
    proc, tools = _run(tmp_path, ["--safe"], "auto")
    assert tools == SAFE, proc.stderr


def test_bad_sandbox_setting_is_a_usage_error(tmp_path: Path) -> None:
    proc, tools = _run(tmp_path, [], "sideways")
    assert proc.returncode == 1 and "TETHER_SANDBOX" in proc.stderr and tools == []
