"""Tracing: OpenTelemetry spans for a run, each request, each tool call, each compaction (and
each subagent, as a nested run), behind one object the loop calls.

Owns: `tracing_for` (settings → the tracing to use), re-exporting from `tether.tracing.base`
`Tracing` (the interface and its no-op implementation, `NO_TRACING`) and `Span` (the handle a
span's owner reports its outcome through; no-op there). The OpenTelemetry-backed implementation is `tether.tracing.otel`, imported
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
from typing import TYPE_CHECKING

from tether.errors import TracingUnavailableError
from tether.tracing.base import NO_TRACING, Span, Tracing

if TYPE_CHECKING:
    from tether.settings.model import TracingSettings

__all__ = ["ENDPOINT_ENV", "NO_TRACING", "Span", "Tracing", "TracingUnavailableError", "tracing_for"]

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""The OpenTelemetry exporter's standard endpoint variable; set, it turns tracing on."""
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""The traces-only endpoint variable (OpenTelemetry SDK environment specification)."""
EXTRA_HINT = "tracing needs the OpenTelemetry SDK: pip install 'tether[tracing]'"


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
