"""One run's state, passed explicitly to the parts of the loop (tool calls, context management)
instead of the agent itself.

Owns: `RunResult` (what a run produced) and `RunState` (the history being appended to, the turns of this run, its usage, the event
sink, persistence, id minting, the current wire view, the tools and their context, and the one
request path for side requests such as compaction summaries).
Does not own: deciding anything; the loop (`tether.agent.loop`) fills it, the parts read it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from tether.agent.events import AgentEvent
from tether.compaction.summarize import SummaryCall
from tether.messages import RunStopReason, ToolCallBlock, Turn, Usage
from tether.providers.base import Provider
from tether.tools.context import ToolContext
from tether.tools.registry import ToolRegistry
from tether.tracing import NO_TRACING, Tracing

__all__ = ["RunResult", "RunState", "SummaryCall", "TurnSink"]



class TurnSink(Protocol):
    """Where turns are persisted (a `tether.session.SessionWriter` satisfies it)."""

    @property
    def id(self) -> str: ...

    def append(self, turn: Turn) -> None: ...


@dataclass(slots=True, kw_only=True)
class RunState:
    """The state of one `Agent.run` call.

    Attributes:
        history: the agent's history (the same list: appended in place).
        session: where appended turns are persisted, or None.
        used_call_ids: tool-call ids already in the history (new ones are re-minted on clash).
        emit: sends an event to the host.
        new_id: mints turn ids.
        view: the current wire view for the chain's first provider (not yet shaped).
        registry: the tools.
        tool_context: what a running tool may know (root, env, sandbox, ...).
        redact: removes secret values from tool output.
        provider: the chain's first provider (the default summarizer).
        summary_call: makes the request path for a provider (None: the agent's chain).
        call_started: records that a tool call is about to run (a `tool_call_started` session
            event, so a resume can tell a call that started from one that never ran).
        tracing: where the run's parts open spans (compaction; off by default).
        before_compaction: awaited with the reason before a compaction starts (the
            `before_compaction` hooks).
        new_turns: every turn appended during this run, in order.
        usage: cumulative usage of this run (requests and summary calls), in tokens.
        sent_view_len: turns in the view of the last request sent.
        sent_generation: the compaction generation that view was built at.
    """

    history: list[Turn]
    session: TurnSink | None
    used_call_ids: set[str]
    emit: Callable[[AgentEvent], None]
    new_id: Callable[[], str]
    view: Callable[[], tuple[Turn, ...]]
    registry: ToolRegistry
    tool_context: ToolContext
    redact: Callable[[str], str]
    provider: Provider
    summary_call: Callable[[Provider | None], SummaryCall]
    call_started: Callable[[ToolCallBlock], None] = lambda _call: None
    tracing: Tracing = NO_TRACING
    before_compaction: Callable[[str], Awaitable[None]] | None = None
    new_turns: list[Turn] = field(default_factory=lambda: [])
    usage: Usage = field(default_factory=Usage)
    sent_view_len: int = 0
    sent_generation: int = 0

    def append(self, turn: Turn) -> None:
        """Append `turn` to the history and this run's turns, and persist it (flushed)."""
        self.used_call_ids.update(c.id for c in turn.tool_calls)
        self.history.append(turn)
        self.new_turns.append(turn)
        if self.session is not None:
            self.session.append(turn)

    def add_usage(self, usage: Usage | None) -> None:
        """Count a request's usage in this run's total."""
        if usage is not None:
            self.usage = self.usage + usage


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What a run produced.

    Attributes:
        message: the last assistant turn, or None if no request completed.
        usage: cumulative usage of this run (tokens).
        stop_reason: `end_turn`, `max_turns`, `max_tokens`, ...
        turns: requests made in this run.
        tracing: where the run's parts open spans (compaction; off by default).
        new_turns: every turn appended during this run, in order. Left out of `repr`:
            `asyncio.run` reprs its main task's result twice while restoring the SIGINT
            handler, which took 0.5 s after a 10,000-turn run.
        answer: the final answer's text, continuation pieces concatenated (None: the last
            turn's text).
        children_usage: the part of `usage` spent by subagents (`task` calls) during this
            run, or None when none ran.
    """

    message: Turn | None
    usage: Usage
    stop_reason: RunStopReason
    turns: int
    new_turns: tuple[Turn, ...] = field(repr=False)
    answer: str | None = None
    children_usage: Usage | None = None

    @property
    def text(self) -> str:
        """The final answer's text (every "Please continue." piece, concatenated)."""
        if self.answer is not None:
            return self.answer
        return self.message.text if self.message else ""
