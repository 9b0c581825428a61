"""Tracing end to end (issue 16): `tether run` with `OTEL_EXPORTER_OTLP_ENDPOINT` set exports
its spans over OTLP/HTTP to a loopback collector the test starts (the SDK's exporter, real
protobuf), against a loopback model server; with `tracing.enabled: false` nothing is sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from kit.cli import tether
from kit.faultserver import FaultServer, text, tool


class _Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Collector  # pyright: ignore[reportIncompatibleVariableOverride]  # served by _Collector only

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.bodies.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _spans(collector: _Collector) -> list[tuple[str, dict[str, object]]]:
    out: list[tuple[str, dict[str, object]]] = []
    for path, body in collector.bodies:
        assert path == "/v1/traces"
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs: dict[str, object] = {}
                    for kv in span.attributes:
                        v = kv.value
                        attrs[kv.key] = v.string_value or v.int_value or v.bool_value
                    out.append((span.name, attrs))
    return out


def test_tether_run_exports_spans_to_the_otlp_endpoint(
    tmp_path: Path, collector: _Collector
) -> None:
    home = tmp_path / "home"
    with FaultServer([tool("ls", path="."), text("listed")]) as server:
        proc = tether(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", "hi"],
            home,
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["text"] == "listed"
    spans = _spans(collector)
    names = sorted(name for name, _ in spans)
    assert names == ["chat m", "chat m", "execute_tool ls", "invoke_agent tether"]
    chat = next(a for n, a in spans if n == "chat m")
    assert chat["gen_ai.provider.name"] == "openai" and chat["gen_ai.usage.output_tokens"] == 5


def test_tracing_disabled_in_settings_sends_nothing(tmp_path: Path, collector: _Collector) -> None:
    home = tmp_path / "home"
    config = tmp_path / "_tether_user_config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text('{"tracing": {"enabled": false}}')
    with FaultServer([text("hello")]) as server:
        proc = tether(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", "hi"],
            home,
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            TETHER_CONFIG_DIR=str(config),
        )
    assert proc.returncode == 0, proc.stderr
    assert collector.bodies == []
