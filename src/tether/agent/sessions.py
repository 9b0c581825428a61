"""An agent's session as one value: the history to continue, where new turns go, the artifact
folder, and which tool calls are known to have started. One path for every host (`tether run`,
the TUI, Jobs, subagents, a library user).

Owns: `AgentSession` (built by `resume`, `new` or directly; opened by the agent it is given to,
last in the agent's construction, so a configuration error — a missing API key — leaves no
session file behind), the `tool_call_started` records (`record_started`, `started_call_ids`),
the durable per-tool state's source (`tool_states`), the output of host commands
(`HostOutput`, `record_host_output`, `stored_host_outputs`), and `interrupted_turn` (the results a crash or cancel left missing, told apart by whether the
call had started).
Does not own: the file format and its errors (`tether.session`), the loop (`tether.agent.turn.loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tether.messages import ToolCallBlock, Turn
from tether.prompt.facts import CONTEXT_EVENT, SessionContext
from tether.session import EventEntry, SessionStore, SessionWriter
from tether.session.store import LoadedSession
from tether.tools.state import ToolStates
from tether.wire import interrupt_results
from tether.wire.resume import drop_retried_user_turns, pending_tool_calls

__all__ = [
    "CANCELLED_RUNNING",
    "EFFORT_EVENT",
    "HOST_OUTPUT_EVENT",
    "INTERRUPTED",
    "MODEL_EVENT",
    "NEVER_RAN",
    "STARTED_EVENT",
    "STARTED_LOST",
    "AgentSession",
    "HostOutput",
    "TurnSink",
    "interrupted_turn",
    "started_call_ids",
    "stored_context",
    "stored_effort",
    "stored_host_outputs",
    "stored_model",
]

INTERRUPTED = "interrupted: the run was cancelled before this call finished; it may not have run"
"""The result of a call a run-wide cancel reached before it started."""
CANCELLED_RUNNING = (
    "cancelled while running: it may have had effects (the run was stopped while this call "
    "ran, and the call was killed): check them before repeating it"
)
"""The result of a call a run-wide cancel (SIGINT / SIGTERM, `Task.cancel`) killed while it
ran."""
STARTED_LOST = (
    "interrupted: this call started but the run stopped before its result was saved; it may "
    "have had effects: check them before repeating it"
)
"""On resume: the result of a call whose `tool_call_started` record was persisted."""
NEVER_RAN = (
    "interrupted: this call never ran (the run stopped before it started); it had no effects"
)
"""On resume: the result of a call without a `tool_call_started` record, in a session that
writes them."""
STARTED_EVENT = "tool_call_started"
"""The session event persisted right before a call runs: `{"tool_call_id": str, "name": str}`."""
EFFORT_EVENT = "effort"
"""The session event persisted when the reasoning effort changes: `{"effort": str | null}`
(`run.effort`); a resume takes the last one (`stored_effort`)."""

MODEL_EVENT = "model"
"""The session event persisted when the user switches the model during the session (the TUI's
`/model`, `Agent.switch_model` with a model string): `{"model": "provider/model"}`; a resume
without `--model` runs on the last one (`stored_model`)."""

HOST_OUTPUT_EVENT = "host_output"
"""The session event holding the output of a command the user ran in a host (the TUI's
`/tool NAME {json}`): `{"after": turn id | null, "command": str, "text": str, "is_error": bool}`.
It is not a turn: the model never sees it; a host shows it again where it was (after the turn
`after`) when the session is resumed (`stored_host_outputs`)."""
MAX_HOST_OUTPUT_CHARS = 100_000
"""The most of a host command's output kept in its event (the rest is cut, and said so)."""


@dataclass(frozen=True, slots=True)
class HostOutput:
    """The stored output of one host command (see `HOST_OUTPUT_EVENT`).

    Attributes:
        after: the id of the last turn of the history when it ran (None: before any turn).
        command: what the user typed (`/tool rotate_key {"key": "db"}`).
        text: what the host showed.
        is_error: the command failed.
    """

    after: str | None
    command: str
    text: str
    is_error: bool = False


def stored_host_outputs(events: Sequence[EventEntry]) -> list[HostOutput]:
    """The host command outputs of a loaded session's `events`, in order (malformed ones
    skipped)."""
    found: list[HostOutput] = []
    for e in events:
        if e.kind != HOST_OUTPUT_EVENT:
            continue
        after, command, text = e.data.get("after"), e.data.get("command"), e.data.get("text")
        if isinstance(command, str) and isinstance(text, str):
            after_id = after if isinstance(after, str) else None
            found.append(HostOutput(after_id, command, text, e.data.get("is_error") is True))
    return found


class TurnSink(Protocol):
    """Where turns are persisted (a `tether.session.SessionWriter` satisfies it)."""

    @property
    def id(self) -> str: ...

    def append(self, turn: Turn) -> None: ...


def started_call_ids(events: Sequence[EventEntry]) -> frozenset[str] | None:
    """The ids of calls with a `tool_call_started` record among a loaded session's `events`,
    or None when the session holds no such record at all (written before they existed: which
    calls ran is unknown)."""
    ids = [e.data.get("tool_call_id") for e in events if e.kind == STARTED_EVENT]
    if not ids:
        return None
    return frozenset(i for i in ids if isinstance(i, str))


@dataclass(slots=True, kw_only=True)
class AgentSession:
    """The session an agent continues and writes to, passed once: `Agent(session=...)`.

    Build it with `AgentSession.resume(store, id)` (a stored session to continue),
    `AgentSession.new(store, cwd=...)` (a new session file), or directly
    (`AgentSession(history=turns)` for an in-memory run, `sink=` for your own `TurnSink`).
    A stored session's file is opened (created, for a new one) by `open()`: the agent calls
    it when its first run starts, a host that wants a taken id reported earlier calls it
    itself; so a configuration error (a missing API key) leaves no session file behind.

    Attributes:
        history: the turns to continue (the agent appends to its own copy).
        sink: where new turns go (a `tether.session.SessionWriter` once opened), or None.
        session_dir: the folder for persisted tool outputs (default: the sink's
            `session_dir`, when it has one).
        started: ids of calls with a persisted `tool_call_started` record; None when unknown
            (a session written before such records existed, or a sink that takes no events).
        session_id: the id (known before the file exists, for a new session).
        loaded: the whole load of a resumed session (`header`, `report`, `events`), or None.
        writer: the session file's writer once opened (the host closes it: `close()`).
        context: what the system prompt is rendered from (`tether.prompt.facts`): a resumed
            session's last `context` event, or the facts taken at session start
            (`Agent.from_settings`); None: no default prompt.
        record_context: write `context` as a `context` event when the file is opened (set
            when the facts were taken for this session, not read from it).
    """

    history: tuple[Turn, ...] = ()
    sink: TurnSink | None = None
    session_dir: Path | None = None
    started: set[str] | frozenset[str] | None = None
    session_id: str | None = None
    loaded: LoadedSession | None = None
    writer: SessionWriter | None = None
    context: SessionContext | None = None
    record_context: bool = False
    _open: Callable[[], SessionWriter] | None = field(default=None, repr=False)
    _pending: list[tuple[str, dict[str, object]]] = field(
        default_factory=list[tuple[str, dict[str, object]]], repr=False
    )

    def __post_init__(self) -> None:
        if self.session_dir is None:
            found = getattr(self.sink, "session_dir", None)
            self.session_dir = found if isinstance(found, Path) else None

    @classmethod
    def resume(cls, store: SessionStore, session_id: str) -> AgentSession:
        """`session_id` from `store`, loaded to be continued (user messages repeated by a retry
        after a failed request dropped); `open()` opens it for append.

        Raises:
            tether.errors.SessionError: the session does not exist or cannot be read (a
                malformed line is not an error: it is skipped and named in `loaded.report`).
        """
        loaded = store.load(session_id)
        return cls(
            history=drop_retried_user_turns(loaded.turns),
            started=started_call_ids(loaded.events),
            session_id=session_id,
            session_dir=store.session_dir(session_id),
            loaded=loaded,
            context=stored_context(loaded.events),
            _open=lambda: store.open_for_append(session_id),
        )

    @classmethod
    def new(
        cls,
        store: SessionStore,
        *,
        cwd: Path,
        session_id: str | None = None,
        caller: tuple[str, str, tuple[str, ...]] | None = None,
        context: SessionContext | None = None,
    ) -> AgentSession:
        """A new session in `store` recorded as started in `cwd` (`session_id`, else a fresh
        id), created by `open()`. `caller` names a subagent's caller (see
        `SessionStore.create`); `context`, the facts its system prompt is rendered from
        (recorded when the file is created).

        Raises:
            tether.errors.SessionError: an invalid `session_id` (a taken one is reported when
                the agent opens it).
        """
        sid = store.new_session_id() if session_id is None else session_id
        session_dir = store.session_dir(sid)
        return cls(
            session_id=sid,
            session_dir=session_dir,
            started=set(),  # a new session records every start
            context=context,
            record_context=context is not None,
            _open=lambda: store.create(sid, cwd=str(cwd), caller=caller),
        )

    def open(self) -> None:
        """Create or open the session file (once; idempotent; `Agent.run` calls it).

        Raises:
            tether.errors.SessionError: the file cannot be created or opened (a taken id).
        """
        if self._open is None:
            return
        opener, self._open = self._open, None
        self.writer = opener()
        self.sink = self.writer
        self.session_id = self.writer.id
        if self.record_context and self.context is not None:
            self.record_context = False
            self.writer.append_event(CONTEXT_EVENT, self.context.to_json())
        if self.session_dir is None:
            self.session_dir = self.writer.session_dir
        pending, self._pending = self._pending, []
        for kind, data in pending:
            self.writer.append_event(kind, data)

    def close(self) -> None:
        """Close the session file, if one was opened (idempotent)."""
        if self.writer is not None:
            self.writer.close()

    @property
    def id(self) -> str | None:
        """The session id (the sink's), or None without a session."""
        if self.sink is not None:
            return self.sink.id
        return self.session_id

    def append(self, turn: Turn) -> None:
        """Persist `turn` (flushed) when there is a sink."""
        if self.sink is not None:
            self.sink.append(turn)

    def record_started(self, call: ToolCallBlock) -> None:
        """Persist a small `tool_call_started` event before `call` runs (when the sink takes
        events), so a resume after a crash can tell "started, may have had effects" from
        "never ran"."""
        if not isinstance(self.started, set):  # one copy, then O(1) per call
            self.started = set(self.started or ())
        self.started.add(call.id)
        self.record_event(STARTED_EVENT, {"tool_call_id": call.id, "name": call.name})

    def tool_states(self) -> ToolStates:
        """The durable per-tool state (`tether.tools.state`): a resumed session's
        `tool_state` events folded, each new change recorded as one more event."""
        events = self.loaded.events if self.loaded is not None else ()
        return ToolStates.from_events(((e.kind, e.data) for e in events), self.record_event)

    def record_host_output(self, output: HostOutput) -> None:
        """Persist the output of a command the user ran in the host (`HOST_OUTPUT_EVENT`;
        past `MAX_HOST_OUTPUT_CHARS` its text is cut)."""
        text = output.text
        if len(text) > MAX_HOST_OUTPUT_CHARS:
            cut = len(text) - MAX_HOST_OUTPUT_CHARS
            text = f"{text[:MAX_HOST_OUTPUT_CHARS]}\n… ({cut} more characters not kept)"
        self.record_event(
            HOST_OUTPUT_EVENT,
            {
                "after": output.after,
                "command": output.command,
                "text": text,
                "is_error": output.is_error,
            },
        )

    def record_event(self, kind: str, data: dict[str, object]) -> None:
        """Persist a session event (`{"type": "event", "kind": kind, "data": data}`) when the
        sink takes events (a checkpoint, a `tool_call_started` record); before a stored
        session's file is opened, it is kept and written when `open()` opens it."""
        if self.sink is None and self._open is not None:
            self._pending.append((kind, data))
            return
        append_event = getattr(self.sink, "append_event", None)
        if callable(append_event):
            append_event(kind, data)


def stored_context(events: Sequence[EventEntry]) -> SessionContext | None:
    """The last `context` event of a loaded session's `events` that this version reads, or
    None (a session written before it had one)."""
    for e in reversed(events):
        if e.kind == CONTEXT_EVENT:
            try:
                return SessionContext.from_json(e.data)
            except ValueError:
                continue
    return None


def stored_effort(events: Sequence[EventEntry]) -> tuple[bool, str | None]:
    """`(True, level)` for the last `effort` event of a loaded session's `events` (level None:
    the provider's own setting), `(False, None)` when it has none."""
    for e in reversed(events):
        if e.kind == EFFORT_EVENT:
            value = e.data.get("effort")
            return True, value if isinstance(value, str) else None
    return False, None


def stored_model(events: Sequence[EventEntry]) -> str | None:
    """The model of a loaded session's last `model` event (a switch during the session), or
    None when it has none."""
    for e in reversed(events):
        if e.kind == MODEL_EVENT:
            value = e.data.get("model")
            return value if isinstance(value, str) and value else None
    return None


def interrupted_turn(
    history: Sequence[Turn], started: set[str] | frozenset[str] | None, new_id: Callable[[], str]
) -> Turn | None:
    """The user turn of `interrupted` is_error results for tool calls that have none (after a
    crash or cancel, before new user text; case T01), or None when nothing is missing.

    The store is append-only, so a partial results turn is never rewritten: the missing
    results go into a new user turn right after it (the wire view merges the two). With
    `started` known, a call that started is told "may have had effects" (`STARTED_LOST`), one
    that did not "never ran" (`NEVER_RAN`).
    """
    before = tuple(history)
    reasons: dict[str, str] | None = None
    if started is not None:
        reasons = {
            c.id: STARTED_LOST if c.id in started else NEVER_RAN
            for c in pending_tool_calls(before)
        }
    repaired = interrupt_results(before, turn_id=new_id(), reason=INTERRUPTED, reasons=reasons)
    if repaired is before:
        return None
    if len(repaired) > len(before):
        return repaired[-1]
    had = {r.tool_call_id for r in before[-1].tool_results}
    missing = tuple(r for r in repaired[-1].tool_results if r.tool_call_id not in had)
    return Turn(id=new_id(), role="user", content=missing)
