"""A proxy's HTML error page answered with status 200 (trial5: nginx's `502 Bad Gateway`) is
said as such, not as `network: stream ended before completion`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kit.cli import run_cli

PAGE = b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body></html>\r\n"


class _Html(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture
def html_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_an_html_page_is_reported_with_its_first_line(tmp_path: Path, html_url: str) -> None:
    args = ["run", "--output-format", "text", "--model", "openai/m", "--base-url", html_url]
    proc = run_cli([*args, "--no-session", "hi"], tmp_path / "home")
    assert proc.returncode != 0
    assert "the endpoint answered text/html, not an event stream: 502 Bad Gateway" in proc.stderr
    assert "stream ended before completion" not in proc.stderr
