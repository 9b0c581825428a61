"""Events an agent run emits, for hosts (CLI, TUI, library users).

Owns: the event types and their JSON form (`event_to_dict`). The headless CLI writes one event
per stdout line. Shapes: every event has a `type` string; usage fields are in tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field, TypeAdapter

from tether.errors import ErrorKind
from tether.messages import RunStopReason, SearchHit, StopReason, Turn, Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStartEvent:
    type: Literal["session_start"] = "session_start"
    session_id: str | None
    provider: str
    model: str
    cwd: str
    resumed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvEvent:
    """A change of the agent's environment, not of its conversation (the seed's Env lifecycle
    events, apart from the turn events). `what`, `state`:

    - `sandbox`, `ready`: the OS sandbox tool commands run in (`name`: `bwrap`, `landlock`, or
      `none`), once, right after the main agent's first `session_start`;
    - `mcp_server`, `up` / `down`: an MCP server (`name`: its settings name) started with its
      tools offered (`detail`: `N tools`), failed to start (`detail`: why; a `warning` event
      says more), or stopped when the agent closed (`detail`: `stopped`). Servers start
      before the run, so these come before its `session_start`;
    - `model`, `loading`: a request found no ready child for the embedded model and starts
      one (`data`: `file`, `size_bytes`, `n_ctx`, `restart`);
    - `model`, `loaded` / `reloaded`: the embedded model's child process became ready
      (`name`: the model file's name), before the reply of the request that started it (or of
      the first request after the TUI loaded it at start); `reloaded` when a child of it
      crashed before in this process. `detail`: `loaded in 1.4 s (extra buffer types on)`;
      `data`: `file`, `size_bytes`, `n_ctx`, `load_s`, `child_load_s`, `config` (its label),
      `extra_bufts`, `n_threads`, `use_mmap`, `probed` (the first time on this machine),
      `tried` (the configurations tried, in order), `fallback` (not llama.cpp's defaults),
      `restart`, `crash` (the crash it follows, or the one a fallback healed; else null),
      `verdicts` (the file the verdict is kept in).

    The session's own start and resume are `session_start` (`resumed`).
    """

    type: Literal["env"] = "env"
    what: str
    name: str
    state: str
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStartEvent:
    """A request is about to be sent; `turn` counts requests in this run from 1."""

    type: Literal["turn_start"] = "turn_start"
    turn: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDeltaEvent:
    type: Literal["text_delta"] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDeltaEvent:
    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent:
    """A tool call from the persisted assistant turn; `invalid` says why it will not run."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any]
    invalid: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartEvent:
    """A call starts running now: its hooks and approval passed and the calls it waited for
    are done (the session's `tool_call_started` record is already written). Between its
    `tool_call` and this event a call waits; a call refused, denied, replayed or skipped never
    starts, and its `tool_result` comes without one."""

    type: Literal["tool_start"] = "tool_start"
    tool_call_id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolEvent:
    """A tool the provider ran on its servers (a web search) in the persisted assistant turn:
    nothing runs locally and no `tool_result` follows.

    Attributes:
        id: the provider's call id (`srvtoolu_…`, `ws_…`).
        name: the tool (`web_search`).
        query: what was searched.
        results: the pages found (`url`, `title`), in the provider's order.
        error: the provider's error code (`max_uses_exceeded`, …), or None.
    """

    type: Literal["server_tool"] = "server_tool"
    id: str
    name: str
    query: str
    results: tuple[SearchHit, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultEvent:
    """A call finished; `content` is the text the model sees."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    content: str
    is_error: bool
    duration_ms: float
    display: Any = None
    """The tool's display value for the host (never sent to the model, never stored)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEndEvent:
    """The assistant turn is assembled and persisted; `usage` is that request's."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    turn_id: str
    stop_reason: StopReason | None
    usage: Usage | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WireRepairEvent:
    """The wire view repaired something in the stored session (the store is unchanged)."""

    type: Literal["wire_repair"] = "wire_repair"
    kind: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryEvent:
    """An attempt failed with a retryable fault; the same provider/model is asked again after
    `delay_s` seconds. Whatever the failed attempt streamed is discarded (never persisted, no
    tool runs from it).

    Attributes:
        attempt: the failed attempt's number on this provider/model, from 1.
        kind: the fault's kind (taxonomy).
        delay_s: the wait before the next attempt, in seconds.
        from_retry_after: True when the server's Retry-After set the wait.
        provider: provider name; model: model name.
        message: the fault's explanation.
    """

    type: Literal["retry"] = "retry"
    attempt: int
    kind: ErrorKind
    delay_s: float
    from_retry_after: bool
    provider: str
    model: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscardEvent:
    """A request attempt failed after streaming: drop its deltas. The `text_delta` and
    `thinking_delta` events since the last `turn_start`, `retry`, `fallback` or `discard` event
    belong to that attempt; they are not part of any turn (never persisted). Emitted before the
    `retry`, `fallback`, `compaction_start` or `error` event that follows the failure.

    Attributes:
        kind: the failure's kind (taxonomy).
        text_chars: characters of text the dropped deltas carried.
        thinking_chars: characters of thinking the dropped deltas carried.
    """

    type: Literal["discard"] = "discard"
    kind: str
    text_chars: int
    thinking_chars: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FallbackEvent:
    """A provider/model failed for good (`kind`); the next one of the fallback chain takes
    over with the same request. Names are `provider/model`."""

    type: Literal["fallback"] = "fallback"
    from_model: str
    to_model: str
    kind: ErrorKind
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorEvent:
    """The run stopped on a provider error (`kind` from the taxonomy)."""

    type: Literal["error"] = "error"
    kind: ErrorKind
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WarningEvent:
    """Something the host should tell the user; the run goes on (e.g. `kind="no_sandbox"`:
    safe mode is forced because no OS sandbox works here; `kind="truncated_prompt"`: a provider
    cut the prompt silently, relayed from the provider's `WarningEvent`)."""

    type: Literal["warning"] = "warning"
    kind: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DoneEvent:
    """The run ended.

    Attributes:
        message: the last assistant turn (the assembled answer), or None. After a
            cancellation, the partial assistant turn that was persisted (stop_reason
            `interrupted`), when one was.
        usage: cumulative usage of this run.
        stop_reason: `end_turn`, `max_turns`, `max_tokens`, `cancelled`, ...
        turns: requests made in this run.
        children_usage: the part of `usage` spent by subagents (`task` calls) during this
            run, their own children included, or None when no subagent ran.
    """

    type: Literal["done"] = "done"
    session_id: str | None
    message: Turn | None
    text: str
    usage: Usage
    stop_reason: RunStopReason
    turns: int
    children_usage: Usage | None = None
    structured: Any = None  # the answer parsed and validated (`run.output_schema`)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionStartEvent:
    """A compaction begins. `reason`: `threshold`, `overflow` (the provider said the request was
    too long) or `manual`; `tokens_before` is the estimated wire view size (tokens)."""

    type: Literal["compaction_start"] = "compaction_start"
    reason: str
    tokens_before: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionEndEvent:
    """A compaction ended.

    Attributes:
        tokens_before / tokens_after: estimated wire view size before and after (tokens).
        turns_replaced: how many stored turns the marker elides.
        marker_id: the marker turn's id, or None when no marker was written (`error` set).
        generation: the marker's generation (0 when none).
        truncated: True when the summary failed and the turns were removed without one.
        restored_files: paths re-read into context after the compaction.
        error: why no marker was written, or None.
        usage: the summary calls' token usage (counted in the run's usage), or None.
    """

    type: Literal["compaction_end"] = "compaction_end"
    tokens_before: int
    tokens_after: int
    turns_replaced: int
    marker_id: str | None
    generation: int = 0
    truncated: bool = False
    restored_files: tuple[str, ...] = ()
    error: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointEvent:
    """A snapshot of the working folder was recorded (`tether.agent.turn.checkpoints`): `before` a
    user turn's first change (`turn_id` names the turn), or `after` a run."""

    type: Literal["checkpoint"] = "checkpoint"
    at: Literal["before", "after"]
    commit: str
    turn_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TodoEvent:
    """The todo list's latest state (a successful `todo` call): `items` as the tool took them,
    `[{"text": str, "status": "pending"|"in_progress"|"done"}]`."""

    type: Literal["todo"] = "todo"
    items: tuple[dict[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanEvent:
    """A run in plan mode ended with a plan (its final answer); the host may approve it and
    pick the approval mode to carry it out in, or keep planning."""

    type: Literal["plan"] = "plan"
    text: str


_OwnEvents: TypeAlias = (  # the one list of event types (`AgentEvent` adds `subagent`)
    SessionStartEvent
    | EnvEvent
    | TurnStartEvent
    | TextDeltaEvent
    | ThinkingDeltaEvent
    | ToolCallEvent
    | ToolStartEvent
    | ServerToolEvent
    | ToolResultEvent
    | TurnEndEvent
    | WireRepairEvent
    | RetryEvent
    | DiscardEvent
    | FallbackEvent
    | ErrorEvent
    | WarningEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | CheckpointEvent
    | TodoEvent
    | PlanEvent
    | DoneEvent
)

OwnEvent = Annotated[_OwnEvents, Field(discriminator="type")]
"""An event of the agent that emits it (any agent: the main one or a subagent)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentEvent:
    """An event of a subagent, forwarded to the host (`tether.agent.subagents`).

    On the JSONL output: `{"type":"subagent","agent_path":["main","task:<call id>"],
    "event":{"type":"text_delta",...}}`. A grandchild's events are forwarded once, with the
    whole path (`["main","task:c1","task:c7"]`), never wrapped twice.

    Attributes:
        agent_path: the agent that emitted `event`: `"main"`, then one `task:<tool call id>`
            per level.
        event: the subagent's own event.
    """

    type: Literal["subagent"] = "subagent"
    agent_path: tuple[str, ...]
    event: OwnEvent


AgentEvent = Annotated[_OwnEvents | SubagentEvent, Field(discriminator="type")]

EVENT_CODEC: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)


def event_to_dict(event: AgentEvent) -> dict[str, Any]:
    """The JSON-ready form of an event."""
    return EVENT_CODEC.dump_python(event, mode="json")


def event_to_json(event: AgentEvent) -> str:
    """One JSON line (no newline) for an event."""
    return EVENT_CODEC.dump_json(event).decode()
