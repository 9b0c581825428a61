"""Real MCP servers for the MCP tests: `demo_server.py` over stdio or streamable HTTP on a
loopback port the test picks, started and stopped by the tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tether.settings.model import McpServerSettings

DEMO = Path(__file__).resolve().parents[1] / "mcp" / "demo_server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not listen in time")


STARTUP_TIMEOUT = "60s"
"""The demo server's start-up limit in tests: its interpreter imports the MCP SDK, which takes
seconds on a loaded machine (the 10 s default then fails tests that are not about it)."""


def stdio_settings(marks: Path, **kw: Any) -> McpServerSettings:
    """The demo server as a stdio server writing its markers to `marks` (start-up limit
    `STARTUP_TIMEOUT` unless `startup_timeout` is given)."""
    env = {"MARK_DIR": str(marks), **kw.pop("env", {})}
    kw.setdefault("startup_timeout", STARTUP_TIMEOUT)
    return McpServerSettings.model_validate(
        {"command": sys.executable, "args": [str(DEMO)], "env": env, **kw}
    )


class HttpDemo:
    """The demo server over streamable HTTP (a subprocess on a free loopback port)."""

    def __init__(self, marks: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = {**os.environ, "MARK_DIR": str(marks)}
        self.proc = subprocess.Popen(
            [sys.executable, str(DEMO), "http", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
