"""Tracing end to end (issue 16): `tether run` with `OTEL_EXPORTER_OTLP_ENDPOINT` set exports
its spans over OTLP/HTTP to a loopback collector the test starts (the SDK's exporter, real
protobuf), against a loopback model server; with `tracing.enabled: false` nothing is sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

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


def _closed_port_url() -> str:
    """A loopback URL nothing listens on (a port bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_collector_that_is_down_is_one_line_and_does_not_hold_up_the_exit(
    tmp_path: Path,
) -> None:
    """trial5: with the collector down every run printed the SDK's 4 retry lines and waited
    ~10 s at exit; now one `tracing:` line, and the exit waits at most the export timeout."""
    import time

    home = tmp_path / "home"
    with FaultServer([text("hello")]) as server:
        started = time.monotonic()
        proc = tether(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", "hi"],
            home,
            OTEL_EXPORTER_OTLP_ENDPOINT=_closed_port_url(),
        )
        took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "tracing" in ln or "export" in ln]
    assert len(lines) == 1, proc.stderr
    assert "cannot export spans to" in lines[0] and "connection refused" in lines[0]
    assert "Transient error" not in proc.stderr and "Traceback" not in proc.stderr
    assert took < 30, took  # generous for a loaded machine; the exit itself is checked below


def test_the_exporter_gives_up_within_its_timeout_and_then_stays_quiet(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A real OTLP exporter against a closed port: the first export returns within the bounded
    timeout (the SDK's own default retried for ~10 s), says so once, and the next batch inside
    the quiet window is dropped without a try."""
    import time

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tether.tracing import otel

    now = [100.0]
    inner = OTLPSpanExporter(endpoint=_closed_port_url() + "/v1/traces", timeout=otel.EXPORT_TIMEOUT_S)
    exporter = otel._Export(inner, "the collector", clock=lambda: now[0])  # pyright: ignore[reportPrivateUsage]
    for name in otel._SDK_EXPORT_LOGS:  # pyright: ignore[reportPrivateUsage]
        import logging

        logger = logging.getLogger(name)
        if otel._sdk_failures not in logger.filters:  # pyright: ignore[reportPrivateUsage]
            logger.addFilter(otel._sdk_failures)  # pyright: ignore[reportPrivateUsage]
    provider = TracerProvider()
    spans: list[ReadableSpan] = []
    provider.add_span_processor(SimpleSpanProcessor(_Keep(spans)))
    provider.get_tracer("t").start_span("one").end()
    provider.get_tracer("t").start_span("two").end()
    caplog.set_level("WARNING")
    started = time.monotonic()
    assert exporter.export([spans[0]]) is SpanExportResult.FAILURE
    assert time.monotonic() - started < otel.EXPORT_TIMEOUT_S + 1.5
    records = [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.name for r in records] == ["tether.tracing.otel"]
    assert "the collector (connection refused)" in records[0].getMessage()
    now[0] += otel.QUIET_AFTER_FAILURE_S / 2
    inner_calls: list[int] = []
    real_export = inner.export
    inner.export = lambda batch: inner_calls.append(len(batch)) or real_export(batch)  # type: ignore[method-assign]
    assert exporter.export([spans[1]]) is SpanExportResult.FAILURE
    assert inner_calls == [] and exporter.dropped == 2


class _Keep(SpanExporter):
    """A span exporter that keeps the finished spans (to hand them to the exporter under test)."""

    def __init__(self, out: list[ReadableSpan]) -> None:
        self.out = out

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.out.extend(spans)
        return SpanExportResult.SUCCESS
