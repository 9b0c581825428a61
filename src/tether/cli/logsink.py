"""The log sink of `tether run`: levelled, timestamped lines on stderr (stdlib `logging`).

Owns: `install` (one handler on the `tether` logger, writing to the current `sys.stderr`),
`KvFormatter` (`<ISO time> <LEVEL> <message> <k=v …>`, the seed's terminal sink; the `k=v` pairs
are the record's `extra` fields), `level_for` (`--log-level`, else `TETHER_LOG_LEVEL`, else the
`log.level` setting) and `logged` (an event callback that also logs each agent event on
`tether.events`: `debug` for all but the streamed deltas, `info` for the session, turns, tool
starts and results, `warning` for retries, fallbacks and warnings, `error` for errors).
Every `tether.*` module's own records (MCP, LSP, the sandbox) go to the same sink.
stdout is untouched: the events stay the JSON stream. `tether acp --log-level` installs it too
(the level from the flag or `TETHER_LOG_LEVEL`; the protocol's events are not logged). The TUI
installs none (stderr is its screen).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from tether.agent.events import AgentEvent, SubagentEvent, event_to_dict
from tether.errors import ConfigError

LEVELS = ("debug", "info", "warning", "error")
ENV = "TETHER_LOG_LEVEL"
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
_EVENT_LEVEL = {
    "session_start": logging.INFO,
    "turn_start": logging.INFO,
    "turn_end": logging.INFO,
    "tool_start": logging.INFO,
    "tool_result": logging.INFO,
    "compaction_end": logging.INFO,
    "done": logging.INFO,
    "retry": logging.WARNING,
    "fallback": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_SKIPPED = frozenset({"text_delta", "thinking_delta"})
_FIELDS = ("id", "tool_call_id", "name", "turn", "kind", "provider", "model", "session_id",
           "stop_reason", "is_error", "duration_ms", "attempt", "delay_s", "reason")  # fmt: skip


class KvFormatter(logging.Formatter):
    """`2026-12-07T14:03:01.123Z WARNING message k=v k2="two words"` (UTC, milliseconds)."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        line = f"{when}.{int(record.msecs):03d}Z {record.levelname} {record.getMessage()}"
        pairs = [
            f"{k}={_value(v)}" for k, v in record.__dict__.items() if k not in _STANDARD
        ]
        if record.exc_info:
            pairs.append(f"exc={_value(self.formatException(record.exc_info))}")
        return " ".join([line, *pairs])


def _value(v: object) -> str:
    text = str(v)
    if not text or any(c.isspace() or c in "\"=" for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


class _Stderr(logging.StreamHandler[TextIO]):
    """Writes to whatever `sys.stderr` is when a record comes (redirections included)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def level_for(flag: str | None, setting: str | None) -> str | None:
    """The level: `--log-level`, else `TETHER_LOG_LEVEL`, else the setting (None: no sink).

    Raises:
        ConfigError: a flag or variable that is no level.
    """
    for source, value in (("--log-level", flag), (ENV, os.environ.get(ENV))):
        if value:
            if value.strip().lower() not in LEVELS:
                raise ConfigError(f"{source} {value!r}: use one of {', '.join(LEVELS)}")
            return value.strip().lower()
    return setting


def install(level: str | None, *, propagate: bool = True) -> logging.Handler | None:
    """Send the `tether` logger's records of `level` and above to stderr (replacing an earlier
    sink), formatted by `KvFormatter`; returns the handler. `propagate=False` keeps them from
    the root logger's handlers too (`tether acp` has one). None: no sink (an earlier one is
    removed, the logger as Python's defaults leave it)."""
    logger = logging.getLogger("tether")
    for old in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(old)
    if level is None:
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        return None
    handler = _Stderr()
    handler.setFormatter(KvFormatter())
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = propagate
    return handler


def logged(on_event: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]:
    """`on_event`, and each event logged on `tether.events` (module docstring)."""
    log = logging.getLogger("tether.events")

    sink = logging.getLogger("tether")

    def both(event: AgentEvent) -> None:
        on_event(event)
        if not any(isinstance(h, _Stderr) for h in sink.handlers):
            return  # no sink asked for: Python's last-resort handler would print it bare
        inner = event.event if isinstance(event, SubagentEvent) else event
        if inner.type in _SKIPPED:
            return
        level = _EVENT_LEVEL.get(inner.type, logging.DEBUG)
        if not log.isEnabledFor(level):
            return
        data = event_to_dict(inner)
        extra: dict[str, Any] = {  # `name` is a LogRecord's own attribute: `tool` here
            ("tool" if k == "name" else k): data[k] for k in _FIELDS if data.get(k) is not None
        }
        if isinstance(event, SubagentEvent):
            extra["agent"] = "/".join(event.agent_path)
        message = data.get("message") if isinstance(data.get("message"), str) else None
        log.log(level, inner.type + (f": {message}" if message else ""), extra=extra)

    return both
