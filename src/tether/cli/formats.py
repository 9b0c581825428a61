"""`tether run --output-format`: what a script reads on stdout.

    stream-json   one JSON event per line as the run goes (the default; `tether.agent.events`)
    json          one JSON object when the run ends: answer, session id, usage, cost, stop
                  reason, exit code (and the error, when the run failed)
    text          the answer's text only

Owns: `OUTPUT_FORMATS`, `OutputSink` and `sink_for` (the host's `on_event` for each format, and
what it prints when the run ends). Diagnostics stay on stderr in every format.
Does not own: the events (`tether.agent.events`), exit codes (`tether.cli.run`).
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any, Literal

from tether.cli.output import EventWriter

if TYPE_CHECKING:
    from tether.agent.events import AgentEvent, DoneEvent
    from tether.messages import Usage

OutputFormat = Literal["stream-json", "json", "text"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("stream-json", "json", "text")


class OutputSink:
    """Takes the run's events (`__call__`, the host's `on_event`) and, when the run ended,
    prints what its format prints (`finish`). The base keeps the `done` and `error` events."""

    def __init__(self) -> None:
        self.done: DoneEvent | None = None
        self.error: str | None = None
        self.session_id: str | None = None

    def __call__(self, event: AgentEvent) -> None:
        from tether.agent.events import DoneEvent, ErrorEvent, SessionStartEvent

        if isinstance(event, DoneEvent):
            self.done = event
        elif isinstance(event, ErrorEvent):
            self.error = f"{event.kind}: {event.message}"
        elif isinstance(event, SessionStartEvent):
            self.session_id = event.session_id

    def finish(self, *, exit_code: int, cost_usd: float | None, session_id: str | None) -> None:
        """Print what the format prints at the end (nothing for `stream-json`)."""

    def _write(self, text: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):  # a reader gone: nothing to do
            sys.stdout.write(text)
            sys.stdout.flush()


class StreamJsonSink(OutputSink):
    """Every event as a JSON line, as it happens (`EventWriter`)."""

    def __init__(self) -> None:
        super().__init__()
        self._writer = EventWriter()

    def __call__(self, event: AgentEvent) -> None:
        super().__call__(event)
        self._writer(event)


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


class JsonSink(OutputSink):
    """One object at the end: `{"type": "result", "answer", "session_id", "usage", "cost_usd",
    "stop_reason", "turns", "exit_code", "error"}` (`answer` null when the run gave none;
    `error` null unless it failed)."""

    def finish(self, *, exit_code: int, cost_usd: float | None, session_id: str | None) -> None:
        done = self.done
        out: dict[str, Any] = {
            "type": "result",
            "answer": done.text if done is not None and done.message is not None else None,
            "session_id": session_id or (done.session_id if done else None) or self.session_id,
            "usage": _usage_dict(done.usage) if done is not None else None,
            "cost_usd": cost_usd,
            "stop_reason": done.stop_reason if done is not None else "error",
            "turns": done.turns if done is not None else 0,
            "exit_code": exit_code,
            "error": self.error,
        }
        self._write(json.dumps(out, ensure_ascii=False) + "\n")


class TextSink(OutputSink):
    """The answer's text, then a newline (nothing when the run gave no answer)."""

    def finish(self, *, exit_code: int, cost_usd: float | None, session_id: str | None) -> None:
        if self.done is not None and self.done.text:
            text = self.done.text
            self._write(text if text.endswith("\n") else text + "\n")


def sink_for(fmt: OutputFormat) -> OutputSink:
    """The sink of an output format."""
    if fmt == "json":
        return JsonSink()
    if fmt == "text":
        return TextSink()
    return StreamJsonSink()
