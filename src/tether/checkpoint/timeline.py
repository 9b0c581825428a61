"""Which snapshot each user turn of a session rewinds to (pure: data in, data out).

Owns: the session entry that names a snapshot (`CHECKPOINT_EVENT` and its data: `checkpoint_data`,
read back by `records`), the numbering of a session's user turns (`user_turns`: N = the N-th
message the user sent), and the rules from a turn to a snapshot (`point_for`: the tree just
before that turn's first change) and from a turn to what it changed (`span_of`).
Does not own: taking snapshots (`tether.checkpoint.shadow`), when they are taken
(`tether.agent.turn.checkpoints`), applying a rewind (`tether.checkpoint.rewind`).

The records a session holds, in file order: a `before` record when a user turn first runs a
call that may change files (named by that turn's id), and an `after` record when a run ends
(the tree tether left). A user turn without a `before` record changed nothing, so the tree
before it is the first record at or after its position (the `after` record of the run before
it, or a later turn's `before` record: nothing ran between). A rewind writes an `after` record
too (the tree it left).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from tether.messages import CompactSummaryBlock, TextBlock, ToolResultBlock, Turn

CHECKPOINT_EVENT = "checkpoint"
"""The session event naming a snapshot: `{"commit", "at": "before"|"after", "turn", "skipped",
"extra"}` (`extra`: the extra folders' snapshots, folder → commit in its own shadow
repository; `--add-dir`)."""

At = Literal["before", "after"]


def checkpoint_data(
    commit: str,
    at: At,
    *,
    turn_id: str | None = None,
    skipped: Sequence[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The data of a `checkpoint` session event."""
    data: dict[str, Any] = {"commit": commit, "at": at}
    if turn_id is not None:
        data["turn"] = turn_id
    if skipped:
        data["skipped"] = list(skipped)
    if extra:
        data["extra"] = dict(extra)
    return data


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One `checkpoint` event of a session.

    Attributes:
        commit: the snapshot's commit in the project's shadow repository.
        at: `before` (a user turn's first change) or `after` (a run ended; a rewind).
        turn_id: for `before`, the id of the user turn it precedes.
        position: how many turns of the session precede the event.
        skipped: paths the snapshot left out (too large, nested repositories).
        ts_ms: when it was written (Unix milliseconds).
        extra: the extra folders' snapshots (`--add-dir`): `(folder, commit)` pairs, each
            commit in the folder's own shadow repository.
    """

    commit: str
    at: At
    turn_id: str | None = None
    position: int
    skipped: tuple[str, ...] = ()
    ts_ms: int = 0
    extra: tuple[tuple[str, str], ...] = ()


class SessionEvent(Protocol):
    """What `records` reads of a session event (`tether.session.EventEntry` has it)."""

    @property
    def kind(self) -> str | None: ...

    @property
    def data(self) -> Mapping[str, Any]: ...

    @property
    def after_turns(self) -> int: ...

    @property
    def ts_ms(self) -> int: ...


def records(events: Sequence[SessionEvent]) -> tuple[Record, ...]:
    """The `checkpoint` records among a loaded session's events, in file order (malformed ones
    are skipped)."""
    out: list[Record] = []
    for e in events:
        if e.kind != CHECKPOINT_EVENT:
            continue
        data: Mapping[str, Any] = e.data
        commit, at = data.get("commit"), data.get("at")
        if not isinstance(commit, str) or at not in ("before", "after"):
            continue
        turn = data.get("turn")
        skipped: Any = data.get("skipped", [])
        extra: Any = data.get("extra", {})
        out.append(
            Record(
                commit=commit,
                at="before" if at == "before" else "after",
                turn_id=turn if isinstance(turn, str) else None,
                position=int(e.after_turns),
                skipped=_strings(skipped),
                ts_ms=int(e.ts_ms),
                extra=_pairs(extra),
            )
        )
    return tuple(out)


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        return ()
    items = cast(dict[Any, Any], value).items()
    return tuple((k, v) for k, v in items if isinstance(k, str) and isinstance(v, str))


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(s for s in cast(list[Any], value) if isinstance(s, str))


@dataclass(frozen=True, slots=True, kw_only=True)
class UserTurn:
    """A message the user sent.

    Attributes:
        number: 1 for the first one (what `--to N` names).
        index: its place in the session's turns.
        turn_id: the turn's id.
        text: its text.
    """

    number: int
    index: int
    turn_id: str
    text: str


def is_user_message(turn: Turn) -> bool:
    """A user turn with text and no tool results or compaction summary (the shape of what a
    person typed; the caller also drops the harness's own messages)."""
    if turn.role != "user":
        return False
    kinds = {type(b) for b in turn.content}
    return TextBlock in kinds and ToolResultBlock not in kinds and CompactSummaryBlock not in kinds


def user_turns(
    turns: Sequence[Turn], synthetic: Callable[[Turn], bool] = lambda _t: False
) -> tuple[UserTurn, ...]:
    """The session's user messages, numbered from 1; `synthetic` names the harness's own user
    turns (a "Please continue." after a cut reply, a stop hook's message), left out."""
    out: list[UserTurn] = []
    for i, t in enumerate(turns):
        if is_user_message(t) and not synthetic(t):
            out.append(UserTurn(number=len(out) + 1, index=i, turn_id=t.id, text=t.text))
    return tuple(out)


def point_for(turn: UserTurn, recs: Sequence[Record]) -> Record | None:
    """The snapshot of the tree just before `turn`'s first change (module docstring), or None
    when no record covers it.

    In order: the turn's own `before` record; else the first record written after the turn
    (nothing changed between: the turn ran no call that may change files, and a later turn's
    `before` record is taken before that turn's first change); else the `after` record written
    just before the turn was added (the run before it; files edited by hand between the two
    runs are not in it)."""
    for r in recs:
        if r.at == "before" and r.turn_id == turn.turn_id:
            return r
    for r in recs:
        if r.position > turn.index:
            return r
    for r in reversed(recs):
        if r.position == turn.index and r.at == "after":
            return r
    return None


def span_of(
    turn: UserTurn, following: UserTurn | None, recs: Sequence[Record]
) -> tuple[Record | None, Record | None]:
    """The snapshots before and after what `turn` changed: its own point, and the next user
    turn's point (or the session's last record). Either may be None when unrecorded."""
    start = point_for(turn, recs)
    end = point_for(following, recs) if following is not None else None
    if end is None and recs:
        end = recs[-1]
    return start, end
