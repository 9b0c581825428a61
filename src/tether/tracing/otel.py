"""Tracing backed by the OpenTelemetry SDK (the `tracing` extra); imported only when on.

Owns: `OtelTracing` (spans named and attributed per the OpenTelemetry GenAI semantic
conventions), `exporting_tracing` (one process-wide `TracerProvider` exporting over OTLP/HTTP),
and the W3C trace context handed to tool subprocesses as `TRACEPARENT` / `TRACESTATE`.
Does not own: when tracing is on (`tether.tracing.tracing_for`).

Spans (GenAI semantic conventions, "gen-ai-spans" and "gen-ai-agent-spans",
https://opentelemetry.io/docs/specs/semconv/gen-ai/):
- `invoke_agent tether` (INTERNAL) per `Agent.run`: `gen_ai.operation.name=invoke_agent`,
  `gen_ai.agent.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.conversation.id`
  (the session id); at the end the run's summed `gen_ai.usage.*`, `tether.stop_reason`,
  `tether.turns`. A run started inside another run's tool call (a subagent) is its child and
  carries `tether.subagent=true`.
- `chat {model}` (CLIENT) per request to one provider, its retries included:
  `gen_ai.operation.name=chat`, `gen_ai.provider.name`, `gen_ai.request.model`,
  `gen_ai.request.max_tokens`, `gen_ai.request.temperature`, `gen_ai.response.model`,
  `gen_ai.usage.input_tokens` (the whole prompt: "SHOULD include cached tokens"),
  `gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`,
  `gen_ai.usage.cache_creation.input_tokens`, `gen_ai.response.finish_reasons`; a `retry` event
  per retried attempt; error status and `error.type` when the provider failed.
- `execute_tool {name}` (INTERNAL) per tool call: `gen_ai.operation.name=execute_tool`,
  `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type=function`; error status when the
  result is an error.
- `compaction` (INTERNAL) per compaction: `tether.compaction.reason`, tokens before/after,
  turns replaced, generation, truncated; its summary request is a child `chat` span.

A collector that does not answer never holds up or clutters a run (`_Export`): each export gives
up after `EXPORT_TIMEOUT_S` (unless `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` / `..._TIMEOUT` say
otherwise), a failed export is one warning line on the `tether.tracing` logger (not the SDK's
retry lines), and the spans of the next `QUIET_AFTER_FAILURE_S` are dropped without trying, so
a run's exit does not wait on a dead endpoint again.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tether.tracing.base import Span, Tracing

if TYPE_CHECKING:
    from tether.compaction.summarize import CompactionResult
    from tether.messages import ToolCallBlock, ToolResultBlock, Usage
    from tether.providers.assemble import Assembler
    from tether.providers.base import ModelRequest, Provider
    from tether.tools.context import ToolContext

SCOPE = "tether"
"""The instrumentation scope name of every span."""
_PROVIDER_NAMES = {"google": "gcp.gemini"}
"""tether provider names whose GenAI well-known `gen_ai.provider.name` differs."""
_PROPAGATOR = TraceContextTextMapPropagator()
_in_run: contextvars.ContextVar[bool] = contextvars.ContextVar("tether_in_run", default=False)
log = logging.getLogger(__name__)

EXPORT_TIMEOUT_S = 2.0
"""How long one export of a batch may take, its retries included (the SDK's default is 10 s,
which a run's exit waited out when the collector was down)."""
QUIET_AFTER_FAILURE_S = 60.0
"""After a failed export, the spans of this many seconds are dropped without trying."""
_TIMEOUT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
_SDK_EXPORT_LOGS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
)
"""The OTLP/HTTP span exporter's loggers (a logger's filter does not cover its children):
their retry and failure records are dropped (`_Export` says it once, in one line)."""
_REASONS = (
    ("Connection refused", "connection refused"),
    ("Name or service not known", "unknown host"),
    ("NameResolutionError", "unknown host"),
    ("timed out", "timed out"),
    ("Timeout", "timed out"),
)


class _SdkFailures(logging.Filter):
    """Keeps the first OTLP exporter failure message of an export (the one with the cause, for
    `_Export`'s one line; the last only says it gave up) and drops the record."""

    def __init__(self) -> None:
        super().__init__()
        self.last = ""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self.last = self.last or record.getMessage()
            return False
        return True


_sdk_failures = _SdkFailures()


def _reason(message: str) -> str:
    """A short reason for an SDK failure message (`connection refused`, `HTTP 503`)."""
    for needle, reason in _REASONS:
        if needle in message:
            return reason
    for word in ("code:", "status"):
        at = message.find(word)
        if at >= 0:
            digits = "".join(c for c in message[at + len(word) : at + len(word) + 6] if c.isdigit())
            if len(digits) == 3:
                return f"HTTP {digits}"
    return "export failed"


class _Export(SpanExporter):
    """The OTLP exporter, quiet and bounded: a failure is one `tether.tracing` warning (again
    only after an export succeeded in between), and for `QUIET_AFTER_FAILURE_S` after it
    batches are dropped without a try. `clock` is injectable for tests."""

    def __init__(
        self, inner: SpanExporter, target: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.inner = inner
        self.target = target
        self.clock = clock
        self.quiet_until = 0.0
        self.down = False
        self.dropped = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self.clock() < self.quiet_until:
                self.dropped += len(spans)
                return SpanExportResult.FAILURE
            _sdk_failures.last = ""
            result = self.inner.export(spans)
            if result is SpanExportResult.SUCCESS:
                self.down = False
                return result
            self.quiet_until = self.clock() + QUIET_AFTER_FAILURE_S
            self.dropped += len(spans)
            if not self.down:
                self.down = True
                log.warning(
                    "tracing: cannot export spans to %s (%s); spans are dropped until it answers",
                    self.target,
                    _reason(_sdk_failures.last),
                )
            return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def provider_name(provider: Provider) -> str:
    """`gen_ai.provider.name` for a provider (`gcp.gemini` for Google's Gemini API)."""
    return _PROVIDER_NAMES.get(provider.name, provider.name)


def _usage_attributes(usage: Usage) -> dict[str, int]:
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }


class OtelSpan(Span):
    """A `Span` over an OpenTelemetry span."""

    __slots__ = ("span",)

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def request_done(self, assembler: Assembler) -> None:
        if assembler.usage is not None:
            self.span.set_attributes(_usage_attributes(assembler.usage))
        if assembler.done is not None:
            reason = assembler.done.raw_stop_reason or assembler.done.stop_reason
            self.span.set_attribute("gen_ai.response.finish_reasons", [reason])
            self.span.set_attribute("tether.stop_reason", assembler.done.stop_reason)
        if assembler.provenance is not None:
            self.span.set_attribute("gen_ai.response.model", assembler.provenance.model)
        self.span.set_attribute("gen_ai.response.id", assembler.turn_id)

    def retry(self, attempt: int, kind: str, delay_s: float) -> None:
        self.span.add_event(
            "retry", {"tether.attempt": attempt, "error.type": kind, "tether.delay_s": delay_s}
        )

    def tool_done(self, result: ToolResultBlock) -> None:
        self.span.set_attribute("tether.tool.is_error", result.is_error)
        if result.is_error:
            self.span.set_status(Status(StatusCode.ERROR, result.text[:200]))

    def compaction_done(self, result: CompactionResult | None) -> None:
        if result is None:
            self.span.set_attribute("tether.compaction.turns_replaced", 0)
            return
        self.span.set_attributes(
            {
                "tether.compaction.tokens_before": result.tokens_before,
                "tether.compaction.tokens_after": result.tokens_after,
                "tether.compaction.turns_replaced": len(result.replaced_ids),
                "tether.compaction.generation": result.generation,
                "tether.compaction.truncated": result.truncated,
            }
        )
        if result.usage is not None:
            self.span.set_attributes(_usage_attributes(result.usage))

    def run_done(self, stop_reason: str, usage: Usage, turns: int) -> None:
        self.span.set_attributes(_usage_attributes(usage))
        self.span.set_attribute("tether.stop_reason", stop_reason)
        self.span.set_attribute("tether.turns", turns)
        if stop_reason == "error":
            self.span.set_status(Status(StatusCode.ERROR))

    def failed(self, kind: str, message: str) -> None:
        self.span.set_attribute("error.type", kind)
        self.span.set_status(Status(StatusCode.ERROR, message[:200]))


class OtelTracing(Tracing):
    """Tracing into an OpenTelemetry `TracerProvider` (the caller's, e.g. one with an
    in-memory exporter in tests, or `exporting_tracing`'s).

    Args:
        provider: where spans go (None: the global provider, `trace.get_tracer_provider()`).
    """

    enabled = True

    def __init__(self, provider: trace.TracerProvider | None = None) -> None:
        self.provider = provider
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=provider)

    @contextmanager
    def _span(
        self,
        name: str,
        attributes: Mapping[str, str | int | float | bool],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        parent: otel_context.Context | None = None,
    ) -> Generator[Span]:
        with self.tracer.start_as_current_span(
            name, context=parent, kind=kind, attributes=dict(attributes)
        ) as span:
            yield OtelSpan(span)

    @contextmanager
    def run(
        self, provider: Provider, *, session_id: str | None, env: Mapping[str, str]
    ) -> Generator[Span]:
        nested = _in_run.get()
        parent = None
        if not nested and not trace.get_current_span().get_span_context().is_valid:
            carrier = {k.lower(): env[k] for k in ("TRACEPARENT", "TRACESTATE") if k in env}
            if carrier:  # tether started by a traced process: continue its trace
                parent = _PROPAGATOR.extract(carrier)
        attributes: dict[str, str | int | float | bool] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "tether",
            "gen_ai.provider.name": provider_name(provider),
            "gen_ai.request.model": provider.model,
            "tether.subagent": nested,
        }
        if session_id is not None:
            attributes["gen_ai.conversation.id"] = session_id
        token = _in_run.set(True)
        try:
            with self._span("invoke_agent tether", attributes, parent=parent) as span:
                yield span
        finally:
            _in_run.reset(token)

    def request(self, provider: Provider, request: ModelRequest) -> AbstractContextManager[Span]:
        attributes: dict[str, str | int | float | bool] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(provider),
            "gen_ai.request.model": request.model,
            "tether.api": provider.target,
        }
        if request.max_output_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        return self._span(f"chat {request.model}", attributes, kind=SpanKind.CLIENT)

    def tool_call(self, call: ToolCallBlock) -> AbstractContextManager[Span]:
        return self._span(
            f"execute_tool {call.name}",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )

    def compaction(self, reason: str) -> AbstractContextManager[Span]:
        return self._span("compaction", {"tether.compaction.reason": reason})

    def tool_context(self, ctx: ToolContext) -> ToolContext:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        if "traceparent" not in carrier:
            return ctx
        env = {k: v for k, v in ctx.env.items() if k not in ("TRACEPARENT", "TRACESTATE")}
        env["TRACEPARENT"] = carrier["traceparent"]
        if carrier.get("tracestate"):
            env["TRACESTATE"] = carrier["tracestate"]
        return replace(ctx, env=env)


_EXPORTING: dict[tuple[str | None, str], OtelTracing] = {}


def exporting_tracing(*, endpoint: str | None, service_name: str = "tether") -> OtelTracing:
    """One process-wide tracing per (endpoint, service name) exporting over OTLP/HTTP in
    batches (flushed at interpreter exit by the SDK), quiet and bounded when the collector does
    not answer (`_Export`). `endpoint` is the OTLP base URL
    (`http://host:4318`; `/v1/traces` is appended); None leaves it to the SDK's environment
    variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).

    Raises:
        ImportError: the OTLP exporter package (the `tracing` extra) is missing.
    """
    key = (endpoint, service_name)
    found = _EXPORTING.get(key)
    if found is not None:
        return found
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url = None if endpoint is None else endpoint.rstrip("/") + "/v1/traces"
    timeout = None if any(os.environ.get(v) for v in _TIMEOUT_ENVS) else EXPORT_TIMEOUT_S
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
    for name in _SDK_EXPORT_LOGS:
        logger = logging.getLogger(name)
        if _sdk_failures not in logger.filters:
            logger.addFilter(_sdk_failures)
    target = str(getattr(exporter, "_endpoint", url or "the OTLP endpoint"))
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(_Export(exporter, target)))
    tracing = _EXPORTING[key] = OtelTracing(provider)
    return tracing
