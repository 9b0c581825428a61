"""The `log` settings section: the levelled, timestamped log sink on stderr (`tether run`).

Owns: `LogLevel`, `LogSettings`. `tether.settings.model` holds it as `AgentConfig.log`; the sink
itself is `tether.cli.logsink` (`--log-level` and `TETHER_LOG_LEVEL` win over the setting).
"""

from __future__ import annotations

from typing import Literal

from tether.settings.base import Section as _Section

__all__ = ["LogLevel", "LogSettings"]

LogLevel = Literal["debug", "info", "warning", "error"]
"""The least severe record the sink writes."""


class LogSettings(_Section):
    """`log`: what `tether run` writes to stderr as `<ISO time> <LEVEL> <message> <k=v …>` lines.

    Attributes:
        level: `debug` (every event of the run but the streamed text), `info` (sessions, model
            requests, tool starts and results), `warning` (retries, fallbacks, warnings),
            `error`; None (the default): no log lines, only tether's one-line diagnostics
            (`tether: …`), so nothing is said twice.
    """

    level: LogLevel | None = None
