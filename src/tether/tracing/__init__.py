"""Tracing: OpenTelemetry spans for a run, each request, each tool call, each compaction (and
each subagent, as a nested run), behind one object the loop calls.

Owns: `Tracing` (the interface and its no-op implementation, `NO_TRACING`), `Span` (the
handle a span's owner reports its outcome through; no-op here), and `tracing_for` (settings →
the tracing to use). The OpenTelemetry-backed implementation is `tether.tracing.otel`, imported
only when tracing is on: with tracing off nothing of OpenTelemetry is imported and each span
is one call returning a shared no-op context manager.
Does not own: the exporter's transport (the OpenTelemetry SDK's), the span names and
attributes (the GenAI semantic conventions, applied in `tether.tracing.otel`).

Tracing is on when `tracing.enabled` is True, or when it is None (the default) and
`OTEL_EXPORTER_OTLP_ENDPOINT` is set in the environment; the SDK and the OTLP exporter are the
`tracing` extra (`pip install 'tether[tracing]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from tether.errors import ConfigError

if TYPE_CHECKING:
    from tether.compaction.summarize import CompactionResult
    from tether.messages import ToolCallBlock, ToolResultBlock, Usage
    from tether.providers.assemble import Assembler
    from tether.providers.base import ModelRequest, Provider
    from tether.settings.model import TracingSettings
    from tether.tools.context import ToolContext

__all__ = ["ENDPOINT_ENV", "NO_TRACING", "Span", "Tracing", "TracingUnavailableError", "tracing_for"]

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""The OpenTelemetry exporter's standard endpoint variable; set, it turns tracing on."""
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""The traces-only endpoint variable (OpenTelemetry SDK environment specification)."""
EXTRA_HINT = "tracing needs the OpenTelemetry SDK: pip install 'tether[tracing]'"


class TracingUnavailableError(ConfigError):
    """Tracing was asked for (`tracing.enabled: true`) but the `tracing` extra is missing."""


class Span:
    """The handle of an open span; the owner reports the outcome through it. This base class
    is the no-op handle (tracing off): every method does nothing."""

    __slots__ = ()

    def request_done(self, assembler: Assembler) -> None:
        """A request's reply arrived (`assembler.done` is set): usage, finish reason."""

    def retry(self, attempt: int, kind: str, delay_s: float) -> None:
        """A failed attempt of this request will be retried after `delay_s` seconds."""

    def tool_done(self, result: ToolResultBlock) -> None:
        """A tool call's result (is_error marks the span as failed)."""

    def compaction_done(self, result: CompactionResult | None) -> None:
        """A compaction finished (None: nothing to compact)."""

    def run_done(self, stop_reason: str, usage: Usage, turns: int) -> None:
        """A run ended: why, its summed usage (tokens), its request count."""

    def failed(self, kind: str, message: str) -> None:
        """The spanned work failed (`kind` from the error taxonomy)."""


NO_SPAN = Span()


class _NoSpanContext(AbstractContextManager[Span]):
    __slots__ = ()

    def __enter__(self) -> Span:
        return NO_SPAN

    def __exit__(self, *_exc: object) -> None:
        return None


_NO_CONTEXT = _NoSpanContext()


class Tracing:
    """Where the loop opens spans. This base class is tracing off (`NO_TRACING`): each method
    returns one shared context manager yielding the no-op `Span`, and `tool_context` returns
    its argument.

    Attributes:
        enabled: False here; True for the OpenTelemetry implementation.
    """

    enabled: bool = False

    def run(
        self, provider: Provider, *, session_id: str | None, env: Mapping[str, str]
    ) -> AbstractContextManager[Span]:
        """A span for one `Agent.run` (a subagent's run nests under the tool call that
        started it). `env` is the process environment: a `TRACEPARENT` there parents a
        top-level run (tether started by a traced process)."""
        return _NO_CONTEXT

    def request(self, provider: Provider, request: ModelRequest) -> AbstractContextManager[Span]:
        """A span for one request to one provider (its retries included)."""
        return _NO_CONTEXT

    def tool_call(self, call: ToolCallBlock) -> AbstractContextManager[Span]:
        """A span for one tool call."""
        return _NO_CONTEXT

    def compaction(self, reason: str) -> AbstractContextManager[Span]:
        """A span for one compaction (`reason`: `threshold`, `overflow`, `manual`, ...)."""
        return _NO_CONTEXT

    def tool_context(self, ctx: ToolContext) -> ToolContext:
        """`ctx` with `TRACEPARENT` (W3C trace context of the current span) in the
        environment of tool subprocesses; `ctx` itself when tracing is off."""
        return ctx


NO_TRACING = Tracing()
"""Tracing off."""


def _wanted(settings: TracingSettings | None, env: Mapping[str, str]) -> bool:
    if settings is not None and settings.enabled is not None:
        return settings.enabled
    return bool(env.get(ENDPOINT_ENV) or env.get(TRACES_ENDPOINT_ENV))


def tracing_for(
    settings: TracingSettings | None,
    env: Mapping[str, str],
    *,
    note: Callable[[str], None] | None = None,
) -> Tracing:
    """The tracing the settings ask for: `NO_TRACING` unless `settings.enabled`, or unless
    it is None and `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set in `env`.
    When on, spans go to one process-wide OTLP/HTTP exporter (`settings.endpoint`, else the
    SDK's environment variables; see `tether.tracing.otel.exporting_tracing`).

    Args:
        settings: the config's `tracing` section (None: defaults).
        env: the environment read for the OTLP variables.
        note: told (one line) when the environment variable asks for tracing and the extra
            is missing: tracing then stays off.

    Raises:
        TracingUnavailableError: tracing was explicitly enabled and the `tracing` extra is not
            installed.
    """
    if not _wanted(settings, env):
        return NO_TRACING
    try:
        from tether.tracing.otel import exporting_tracing
    except ImportError as exc:
        if settings is not None and settings.enabled:
            raise TracingUnavailableError(EXTRA_HINT) from exc
        if note is not None:
            note(f"{ENDPOINT_ENV} is set but tracing is off: {EXTRA_HINT}")
        return NO_TRACING
    return exporting_tracing(
        endpoint=settings.endpoint if settings is not None else None,
        service_name=settings.service_name if settings is not None else "tether",
    )
