"""The tracing interface and its no-op implementation (tracing off).

Owns: `Tracing` (where the loop opens spans; this base class is tracing off), `NO_TRACING`,
and `Span` (the handle a span's owner reports its outcome through; no-op here). Re-exported by
`tether.tracing`; the OpenTelemetry implementation (`tether.tracing.otel`) subclasses both.
Does not own: when tracing is on (`tether.tracing.tracing_for`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.compaction.summarize import CompactionResult
    from tether.messages import ToolCallBlock, ToolResultBlock, Usage
    from tether.providers.assemble import Assembler
    from tether.providers.base import ModelRequest, Provider
    from tether.tools.base import ToolContext

__all__ = ["NO_SPAN", "NO_TRACING", "Span", "Tracing"]


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
