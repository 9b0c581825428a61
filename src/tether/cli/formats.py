"""`tether run`'s output formats (`run.output_format` in the config, `--output-format`): what
a script reads on stdout.

    stream-json   one JSON event per line as the run goes (the default; `tether.agent.events`)
    json          one JSON object when the run ends: answer, session id, usage, cost, stop
                  reason, turns, exit code (and the error, when the run failed)
    text          the answer's text only

Owns: `OutputSink` (the host's `on_event` for each format, and what it prints when the run
ends). Diagnostics stay on stderr in every format.
Does not own: the field (`tether.settings.model.RunSettings.output_format`), the events
(`tether.agent.events`), exit codes (`tether.cli.run`).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, get_args

from tether.cli.output import EventWriter, err
from tether.settings.model import OutputFormat

if TYPE_CHECKING:
    from tether.agent.events import AgentEvent, DoneEvent, FallbackEvent
    from tether.messages import Turn, Usage

OUTPUT_FORMATS: tuple[OutputFormat, ...] = get_args(OutputFormat)
"""The formats, in the order the usage line names them."""

TOLD_ELSEWHERE = frozenset({"untrusted_project", "no_sandbox", "max_budget", "max_tool_calls"})
"""The `warning` events a `text` or `json` run does NOT repeat on stderr: another stderr line
tells each already (the trust note, the sandbox warning, the `stopped:` lines), as it does the
MCP and language servers' (`TOLD_PREFIXES`: setup notes). Every other warning (a hook that
failed, a file checkpoints skip, a prompt a provider cut) is said there as `tether: warning: …`
(in `stream-json` they are events on stdout): a warning a user could act on is never only in a
format they did not ask for. `prompt_denied` is said: it carries the hook's reason, which the
`stopped:` line does not (trial5)."""


TOLD_PREFIXES = ("mcp_", "lsp_")


def _told(kind: str) -> bool:
    return kind in TOLD_ELSEWHERE or kind.startswith(TOLD_PREFIXES)


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


class OutputSink:
    """Takes the run's events (`__call__`, the host's `on_event`) and prints them as its format
    says: each as it comes (`stream-json`), or one result when the run ended (`finish`).

    The format is known once the config is (`use`, after the settings files are read); events
    that come before it are held, then written if the format turns out to be `stream-json`.

    Args:
        fmt: the format, or None until `use` is called (`finish` falls back to `stream-json`).

    Attributes:
        cost_usd: the run's cost in USD (set by the caller before `finish`; None: unknown).
        session_id: the session's id (from the events, or set by the caller).
    """

    def __init__(self, fmt: OutputFormat | None = None) -> None:
        self.fmt: OutputFormat | None = fmt
        self.done: DoneEvent | None = None
        self.error: str | None = None
        self.session_id: str | None = None
        self.cost_usd: float | None = None
        self.fell_back = False  # a `fallback` event came: the usage line names the model
        self._held: list[AgentEvent] = []
        self._events = EventWriter()

    def use(self, fmt: OutputFormat) -> None:
        """Fix the format; held events are written now when it is `stream-json`."""
        self.fmt = fmt
        held, self._held = self._held, []
        for event in held:
            self._emit(event)

    def __call__(self, event: AgentEvent) -> None:
        from tether.agent.events import DoneEvent, ErrorEvent, FallbackEvent, SessionStartEvent

        if isinstance(event, DoneEvent):
            self.done = event
        elif isinstance(event, ErrorEvent):
            self.error = f"{event.kind}: {event.message}"
        elif isinstance(event, SessionStartEvent):
            self.session_id = event.session_id
        elif isinstance(event, FallbackEvent):
            self.fell_back = True
        if self.fmt is None:
            self._held.append(event)
        else:
            self._emit(event)

    def _emit(self, event: AgentEvent) -> None:
        """`event` as the format shows it: a line on stdout (`stream-json`), else only a
        warning not `TOLD_ELSEWHERE` and each fallback, on stderr."""
        from tether.agent.events import FallbackEvent, WarningEvent

        if self.fmt == "stream-json":
            self._events(event)
        elif isinstance(event, WarningEvent) and not _told(event.kind):
            err(f"warning: {event.message}")
        elif isinstance(event, FallbackEvent):  # the user asked for another model: say so
            err(f"warning: {fallback_line(event)}")

    def result(self, exit_code: int) -> dict[str, Any]:
        """The `json` format's object: `{"type": "result", "answer", "model", "session_id", "usage",
        "children_usage", "cost_usd", "stop_reason", "turns", "exit_code", "error", "structured"}` (`structured`:
        the answer parsed, when `run.output_schema` is set and it validated; `answer` null when the run
        gave no answer text; `model` the `provider/model` that wrote the last reply, a fallback's
        after a fallback, null when none did; `stop_reason` `error` when it never ended, `error`
        null unless it failed)."""
        done = self.done
        return {
            "type": "result",
            "model": self.model(),
            # null, not "", when the run stopped without answer text (`text` prints nothing)
            "answer": (done.text or None) if done is not None and done.message is not None else None,
            "session_id": self.session_id or (done.session_id if done else None),
            "usage": _usage_dict(done.usage) if done is not None else None,
            # the part of `usage` the subagents (`task` calls) spent; null when none ran
            "children_usage": _usage_dict(done.children_usage)
            if done is not None and done.children_usage is not None
            else None,
            "cost_usd": self.cost_usd,
            "stop_reason": done.stop_reason if done is not None else "error",
            "turns": done.turns if done is not None else 0,
            "exit_code": exit_code,
            "error": self.error,
            "structured": done.structured if done is not None else None,  # --output-schema
        }

    def model(self) -> str | None:
        """`provider/model` of the run's last reply, or None when none came."""
        message = self.done.message if self.done is not None else None
        made = message.provenance if message is not None else None
        return f"{made.provider}/{made.model}" if made is not None and made.model else None

    def usage_line(self, ran: Sequence[Turn], children: Usage | None) -> str:
        """`run_usage_line`, ending `· by provider/model` after a fallback."""
        line = run_usage_line(ran, children)
        model = self.model() if self.fell_back else None
        return f"{line} · by {model}" if model else line

    def finish(self, exit_code: int) -> None:
        """Print what the format prints at the end: the result object (`json`), the answer
        and a newline (`text`; nothing without an answer), nothing (`stream-json`)."""
        if self.fmt is None:
            self.use("stream-json")
        if self.fmt == "json":
            self._write(json.dumps(self.result(exit_code), ensure_ascii=False) + "\n")
        elif self.fmt == "text" and self.done is not None and self.done.text:
            text = self.done.text
            self._write(text if text.endswith("\n") else text + "\n")

    def _write(self, text: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):  # a reader gone: nothing to do
            sys.stdout.write(text)
            sys.stdout.flush()


def fallback_line(event: FallbackEvent) -> str:
    """A fallback in one line: `gw/down failed (HTTP 500: …); using gw/m`."""
    why = " ".join(event.message.split())
    if len(why) > 160:
        why = why[:159] + "…"
    return f"{event.from_model} failed ({why or event.kind}); using {event.to_model}"


def run_usage_line(ran: Sequence[Turn], children: Usage | None) -> str:
    """The stderr usage line of a run: its requests' (`turns_usage_line` of the turns `ran`
    stored) plus, when subagents ran, theirs: the total first, then `(subagents: …)`; the cost
    then prices the caller's requests only (each subagent's are in its own session)."""
    from tether.providers.pricing import reported, turns_cost_usd, turns_usage, turns_usage_line

    if children is None or not reported(children):
        return turns_usage_line(ran)
    replies = [t for t in ran if t.role == "assistant"]
    total = turns_usage(replies) + children
    line = f"{total.summary_line()} (subagents: {children.summary_line()})"
    cost = turns_cost_usd(replies)
    return line if cost is None else f"{line} · ${cost:.4f} without the subagents"
