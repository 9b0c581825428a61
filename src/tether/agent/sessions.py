"""Giving an agent its session: the history of a stored session to resume, and the session
file the agent writes to. One path for every host (`tether run`, the TUI, Jobs).

Owns: `Resumed` and `load_for_resume` (a stored session's turns made ready to continue: user
messages re-sent after a failed request dropped, the ids of calls that started known so
`Agent.close_interrupted` can tell "started, may have had effects" from "never ran"), and
`open_session` (append to the resumed session or create a new one, attach it with its
artifact folder, tell the agent which calls started).
Does not own: the file format and its errors (`tether.session`), the agent (`tether.agent.loop`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tether.agent.loop import Agent
from tether.agent.tool_calls import started_call_ids
from tether.messages import Turn
from tether.session import SessionStore, SessionWriter
from tether.session.store import LoadedSession
from tether.wire.resume import drop_retried_user_turns

__all__ = ["Resumed", "load_for_resume", "open_session"]


@dataclass(frozen=True, slots=True)
class Resumed:
    """A stored session, loaded to be continued.

    Attributes:
        session_id: its id.
        history: its turns, without user messages repeated by a retry after a failed request
            (what `Agent(history=...)` takes).
        started: ids of calls with a `tool_call_started` record; None when the session holds
            no such record (written before they existed: which calls ran is unknown).
        loaded: the whole load (`header`, `report` of skipped lines, `events`).
    """

    session_id: str
    history: tuple[Turn, ...]
    started: frozenset[str] | None
    loaded: LoadedSession


def load_for_resume(store: SessionStore, session_id: str) -> Resumed:
    """Load `session_id` from `store` to continue it.

    Raises:
        tether.errors.SessionError: the session does not exist or cannot be read (a malformed
            line is not an error: it is skipped and named in `loaded.report`).
    """
    loaded = store.load(session_id)
    return Resumed(
        session_id=session_id,
        history=drop_retried_user_turns(loaded.turns),
        started=started_call_ids(loaded.events),
        loaded=loaded,
    )


def open_session(
    agent: Agent,
    store: SessionStore,
    *,
    resumed: Resumed | None,
    cwd: Path,
    session_id: str | None = None,
) -> SessionWriter:
    """Attach a session file to `agent`: the resumed session opened for append, else a new
    session `session_id` (None: a fresh id) recorded as started in `cwd`. The writer is the
    caller's to close.

    Raises:
        tether.errors.SessionError: the session cannot be opened or created (e.g. the id is
            taken).
    """
    if resumed is not None:
        writer = store.open_for_append(resumed.session_id)
        started = resumed.started
    else:
        writer = store.create(session_id, cwd=str(cwd))
        started = frozenset[str]()  # a new session records every start
    agent.attach_session(writer, store.session_dir(writer.id))
    agent.started_calls = started
    return writer
