"""Checkpoints inside a run: a snapshot of the working folder before each user turn's first call
that may change files, and one when a run ends (the tree tether left).

The snapshot for a user turn is started early, in a thread, as the turn's first request goes
out (`prepare`, called by `tether.agent.turn.checkpoint_policy`): the git processes it needs
(tens of milliseconds on a busy machine) then run while the model answers, not after it, and
the first call that may change files only waits for what is left of it. It is recorded only
when such a call comes (a turn of questions and reads records nothing); like Claude Code's,
it holds the folder as it was when the turn was sent.

Owns: `Checkpoints` (one per main agent with a stored session: `before_change`, called by the
tool calls before a call of a tool that is not `safe` runs — `write`, `edit`, `bash`, folder
and MCP tools, `task`; `after_run`, called by the loop when a run ends, cancelled or failed
runs included; `tether.agent.turn.checkpoint_policy` calls it), `synthetic_user_turn` (the harness's own user messages, not numbered as user
turns) and `checkpoint_store` (where a session's project keeps its shadow repository).
Because `bash` can write only inside the working folder and the extra folders (the OS
sandbox), a snapshot of the folder and one of each writable extra folder (`--add-dir`, each in
its own shadow repository, named in the record's `extra`) cover what shell commands change
too.
Does not own: the shadow repository (`tether.checkpoint.shadow`), the records' rules
(`tether.checkpoint.timeline`), rewinding (`tether.checkpoint.rewind`).

A snapshot that fails (git missing, the data folder not writable) is a `warning` event
(`checkpoint_unavailable`) once, and checkpoints are off for the rest of the agent's life: the
run goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from tether.agent.events import AgentEvent, CheckpointEvent, WarningEvent
from tether.agent.sessions import AgentSession
from tether.agent.turn.continuation import CONTINUE_PROMPT
from tether.checkpoint.shadow import ShadowRepo, Snapshot
from tether.checkpoint.timeline import (
    CHECKPOINT_EVENT,
    At,
    checkpoint_data,
    is_user_message,
)
from tether.errors import CheckpointError
from tether.messages import Turn
from tether.tools.exec.run import is_system_note

_Taken = tuple[Snapshot, dict[str, str]] | CheckpointError | None
"""A snapshot and the extra folders' commits, the reason there is none, or None (no store)."""

STOP_HOOK_PREFIX = "A stop hook did not accept this as the final answer"
"""How the message after a refused stop begins (`tether.agent.turn.stop_hooks.STOP_DENIED`)."""


def _retrieved(task: asyncio.Future[_Taken]) -> None:
    """Read a finished early snapshot's outcome, so an unexpected error in one nobody waited
    for (its turn made no change) is not logged as never retrieved; a waiter still gets it."""
    if not task.cancelled():
        task.exception()


def synthetic_user_turn(turn: Turn) -> bool:
    """Whether a user turn is the harness's own (a "Please continue." after a reply cut by
    the output cap, a stop hook's message, a system note such as a background shell's end),
    not a message the user sent."""
    text = turn.text
    return text == CONTINUE_PROMPT or text.startswith(STOP_HOOK_PREFIX) or is_system_note(text)


def checkpoint_store(sessions_root: Path) -> Path:
    """The shadow repositories' folder beside a session store's root (`<data>/sessions` →
    `<data>/checkpoints`)."""
    return sessions_root.parent / "checkpoints"


class LatestUserTurn:
    """The id of the latest user message of a history that only grows, kept as it grows:
    each turn is looked at once (a walk from the end on every tool call crossed the whole
    history once a run's prompt was far behind). A history that shrank or was replaced is read
    afresh."""

    def __init__(self) -> None:
        self._history: Sequence[Turn] | None = None
        self._seen = 0
        self._id: str | None = None

    def __call__(self, history: Sequence[Turn]) -> str | None:
        """The id of the latest user message in `history`."""
        if history is not self._history or len(history) < self._seen:
            self._history, self._seen, self._id = history, 0, None
        end = len(history)
        for i in range(self._seen, end):
            turn = history[i]
            if is_user_message(turn) and not synthetic_user_turn(turn):
                self._id = turn.id
        self._seen = end
        return self._id


class Checkpoints:
    """Snapshots for one agent (module docstring).

    Args:
        root: the working folder.
        max_file_bytes: files larger than this are left out (`checkpoints.max_file_size`).
        emit: where `checkpoint` and `warning` events go.
        store: the shadow repositories' folder (None: beside the session's store).
        extra: the writable extra folders (`tools.add_dirs`), snapshotted with the root; the
            attribute may be replaced (`/add-dir`).
    """

    def __init__(
        self,
        root: Path,
        *,
        max_file_bytes: int,
        emit: Callable[[AgentEvent], None],
        store: Path | None = None,
        extra: tuple[Path, ...] = (),
    ) -> None:
        self.root = root
        self.extra = extra
        self.max_file_bytes = max_file_bytes
        self.emit = emit
        self.store = store
        self.off = False
        self._repo: ShadowRepo | None = None
        self._taken_for: str | None = None
        self._recorded = False
        self._lock = asyncio.Lock()
        self._warned: set[str] = set()
        self._latest = LatestUserTurn()
        self._early: tuple[str, asyncio.Future[_Taken]] | None = None
        """The user turn whose snapshot `prepare` started, and the task taking it."""

    def _repo_for(self, session: AgentSession) -> ShadowRepo | None:
        if self._repo is None:
            store = self.store
            if store is None:
                if session.session_dir is None:
                    return None
                store = checkpoint_store(session.session_dir.parent)
            self._repo = ShadowRepo(self.root, store=store, max_file_bytes=self.max_file_bytes)
        return self._repo

    @staticmethod
    def _stored(session: AgentSession) -> bool:
        return callable(getattr(session.sink, "append_event", None))

    def _has_records(self, session: AgentSession) -> bool:
        if self._recorded:
            return True
        loaded = session.loaded
        return loaded is not None and any(e.kind == CHECKPOINT_EVENT for e in loaded.events)

    def prepare(self, session: AgentSession, history: list[Turn]) -> None:
        """Start the current user turn's snapshot in a thread, unless it has one or one is
        under way (called as each request goes out; `before_change` takes the result)."""
        if self.off or not self._stored(session):
            return
        turn_id = self._latest(history)
        if turn_id is None or turn_id == self._taken_for:
            return
        if self._early is not None and self._early[0] == turn_id:
            return
        if self._repo_for(session) is None:
            return
        # run_in_executor hands the work to a thread at once (a task would wait for the loop
        # to come round, and the request may be sent before it does)
        task = asyncio.get_running_loop().run_in_executor(
            None, self._take, session, f"before {turn_id}"
        )
        task.add_done_callback(_retrieved)
        self._early = (turn_id, task)

    async def before_change(self, session: AgentSession, history: list[Turn]) -> None:
        """Snapshot the folder unless the current user turn has its snapshot already: the
        one `prepare` started, else one taken now (a thread does the work: the event loop
        keeps serving the host)."""
        if self.off or not self._stored(session):
            return
        turn_id = self._latest(history)
        if turn_id is None or turn_id == self._taken_for:
            return
        async with self._lock:
            if turn_id == self._taken_for or self.off:
                return
            early, self._early = self._early, None
            if early is not None and early[0] == turn_id:
                taken = await asyncio.shield(early[1])
            else:
                taken = await asyncio.to_thread(self._take, session, f"before {turn_id}")
            snap = self._reported(taken)
            self._taken_for = turn_id
            if snap is not None:
                self._record(session, *snap, "before", turn_id)

    def after_run(self, session: AgentSession) -> None:
        """At the end of a run that took or inherited a snapshot: record the tree it left
        (synchronous: it may run while the run is being cancelled)."""
        if self.off or not self._stored(session) or not self._has_records(session):
            return
        snap = self._snapshot(session, "after a run")
        if snap is not None:
            self._record(session, *snap, "after", None)

    def _snapshot(
        self, session: AgentSession, message: str
    ) -> tuple[Snapshot, dict[str, str]] | None:
        """The root's snapshot and the extra folders' commits (folder → commit); None when
        checkpoints are unavailable (reported once, and off from then on)."""
        return self._reported(self._take(session, message))

    def _take(self, session: AgentSession, message: str) -> _Taken:
        """`_snapshot`'s work, the failure returned rather than reported (it may run in a
        thread whose result nobody waits for)."""
        repo = self._repo_for(session)
        if repo is None:
            return None
        try:
            snap = repo.snapshot(message)
            extra = {
                str(d): ShadowRepo(d, store=repo.store, max_file_bytes=self.max_file_bytes)
                .snapshot(message)
                .commit
                for d in self.extra
            }
            return snap, extra
        except CheckpointError as exc:
            return exc

    def _reported(self, taken: _Taken) -> tuple[Snapshot, dict[str, str]] | None:
        if not isinstance(taken, CheckpointError):
            return taken
        if not self.off:
            self.off = True
            self.emit(
                WarningEvent(
                    kind="checkpoint_unavailable",
                    message=f"checkpoints are off for this session: {taken}",
                )
            )
        return None

    def _record(
        self,
        session: AgentSession,
        snap: Snapshot,
        extra: dict[str, str],
        at: At,
        turn_id: str | None,
    ) -> None:
        data = checkpoint_data(
            snap.commit, at, turn_id=turn_id, skipped=snap.skipped, extra=extra
        )
        session.record_event(CHECKPOINT_EVENT, data)
        self._recorded = True
        new = [p for p in snap.skipped if p not in self._warned]
        if new:
            self._warned.update(new)
            shown = ", ".join(new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
            self.emit(
                WarningEvent(
                    kind="checkpoint_skipped",
                    message=f"not in checkpoints (larger than {self.max_file_bytes} bytes, or a "
                    f"nested repository): {shown}",
                )
            )
        self.emit(CheckpointEvent(at=at, commit=snap.commit, turn_id=turn_id))

