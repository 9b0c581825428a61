"""One run's plain data, and the contract the loop's collaborators read the agent's parts by.

Owns: `RunState` (the history being appended to, the turns of this run, its usage, the last
sent view), `SentView`, `RunResult` (what a run produced) and `RunParts` (the protocol
`tether.agent.assembly.parts.AgentParts` satisfies: what compaction and the tool runner may use — the
tools, their context, events, ids, the wire view, redaction, the summary request path).
Does not own: deciding anything; the loop (`tether.agent.turn.loop`) fills the state, the parts
(`tether.agent.assembly.parts`) do the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tether.agent.events import AgentEvent
from tether.agent.sessions import AgentSession
from tether.agent.turn.checkpoints import Checkpoints
from tether.compaction.summarize import SummaryCall
from tether.messages import RunStopReason, Turn, Usage
from tether.providers.base import Provider
from tether.tools.context import ToolContext
from tether.tools.registry import ToolRegistry
from tether.tracing import Tracing

__all__ = ["RunParts", "RunResult", "RunState", "SentView"]


class RunParts(Protocol):
    """What the loop's collaborators (the turn policies, `ToolCalls`) use from the agent's parts
    (`tether.agent.assembly.parts.AgentParts` is the implementation). None of it may raise except as
    documented on the implementation."""

    @property
    def registry(self) -> ToolRegistry:
        """The tools offered (compaction adds `recall` once a marker exists)."""
        ...

    @property
    def tool_context(self) -> ToolContext:
        """What a running tool may know (root, env, sandbox, session folder, ...)."""
        ...

    @property
    def tracing(self) -> Tracing:
        """Where spans open (off by default)."""
        ...

    @property
    def provider(self) -> Provider:
        """The chain's first provider (the default summarizer)."""
        ...

    @property
    def agent_path(self) -> tuple[str, ...]:
        """This agent's path: `("main",)`, or a subagent's."""
        ...

    def emit(self, event: AgentEvent) -> None:
        """Send `event` to the host."""
        ...

    def shape(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """The view as sent (the compaction's wire-only `tail` strategy applied, if any)."""
        ...

    def system_for(self, provider: Provider) -> str | None:
        """The system prompt `provider` is sent."""
        ...

    def new_id(self) -> str:
        """A fresh turn id."""
        ...

    def view(self, history: Sequence[Turn]) -> tuple[Turn, ...]:
        """The wire view of `history` for the chain's first provider (incremental)."""
        ...

    def redact(self, text: str) -> str:
        """`text` with known secret values masked (tool output)."""
        ...

    def summary_call(self, summarizer: Provider | None) -> SummaryCall:
        """The request path for a side request: the chain (or `summarizer` alone)."""
        ...

    async def before_compaction(self, reason: str) -> None:
        """The `before_compaction` hooks."""
        ...

    @property
    def checkpoints(self) -> Checkpoints | None:
        """Snapshots of the working folder before a user turn's first change (or None)."""
        ...


@dataclass(frozen=True, slots=True)
class SentView:
    """The view the last request was built from: its length in turns and the compaction
    generation it was built at (what the context monitor measures usage against)."""

    turns: int
    generation: int


@dataclass(slots=True, kw_only=True)
class RunState:
    """The plain data of one `Agent.run` call.

    Attributes:
        history: the agent's history (the same list: appended in place).
        session: where appended turns are persisted (and which calls started).
        used_call_ids: tool-call ids already in the history (new ones are re-minted on clash).
        new_turns: every turn appended during this run, in order.
        usage: cumulative usage of this run (requests and summary calls), in tokens.
        sent: the view of the last request sent (None before the first).
        safe_mode: this request offers and runs only safe tools (safe or plan mode; the loop
            sets it before each request).
        plan_mode: plan mode is on (the loop sets it at the start and before each request).
        last: the last reply (None before the first).
        stop_reason: why the run ended (while it runs: `max_turns`).
        children_usage: the usage of subagents' runs during this run (set at its end), or
            None when none ran.
        structured: the final answer parsed and validated against `run.output_schema` (set at
            the end by that policy), or None.
    """

    history: list[Turn]
    session: AgentSession
    used_call_ids: set[str]
    new_turns: list[Turn] = field(default_factory=lambda: [])
    usage: Usage = field(default_factory=Usage)
    sent: SentView | None = None
    safe_mode: bool = False
    plan_mode: bool = False
    last: Turn | None = None
    stop_reason: RunStopReason = "max_turns"
    children_usage: Usage | None = None
    structured: Any = None
    _answer: list[str] = field(default_factory=lambda: [])

    def append(self, turn: Turn) -> None:
        """Append `turn` to the history and this run's turns, and persist it (flushed)."""
        self.used_call_ids.update([c.id for c in turn.tool_calls])
        self.history.append(turn)
        self.new_turns.append(turn)
        self.session.append(turn)

    def reply(self, turn: Turn) -> None:
        """Record a stored reply: the last turn, its usage, and the answer (a reply's text
        joins the answer when the reply before it was cut by the output cap, `max_tokens`, and
        continued; otherwise it starts a new one)."""
        calls = turn.tool_calls
        if calls or self.last is None or self.last.stop_reason != "max_tokens":
            self._answer.clear()
        self.last = turn
        self.add_usage(turn.usage)
        if not calls:
            self._answer.append(turn.text)

    @property
    def answer(self) -> str:
        """The current answer's text (continuation pieces concatenated), else the last reply's
        text."""
        joined = "".join(self._answer)
        return joined or (self.last.text if self.last is not None else "")

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
    structured: Any = None  # the answer parsed and validated (`run.output_schema`)

    @property
    def text(self) -> str:
        """The final answer's text (every "Please continue." piece, concatenated)."""
        if self.answer is not None:
            return self.answer
        return self.message.text if self.message else ""
