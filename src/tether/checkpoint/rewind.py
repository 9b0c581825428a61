"""Rewinding a session: its files back to a user turn's checkpoint, its conversation forked
there (the original session is kept), files changed outside tether since kept unless forced.

Owns: `plan_rewind` (every check, nothing changed: the turn, the snapshot it goes back to),
`rewind` (do it), `turn_rows` (what `tether sessions checkpoints` lists: per user turn, when,
what it changed) and `preview` (what going back to a turn would change now); a refusal is a
`tether.errors.RewindError`.
Does not own: the snapshots (`tether.checkpoint.shadow`), the records and turn numbering
(`tether.checkpoint.timeline`), the session files (`tether.session`).

Order of a rewind, so that a refusal leaves everything as it was: validate the turn and its
snapshot; open the session to write (a live run holding it refuses); snapshot the folder now
(kept in the shadow repository's history: the rewind itself can be undone); fork the
conversation; restore the files; record the tree it left as an `after` record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.checkpoint.restore import RestoreReport, restore
from tether.checkpoint.shadow import Change, ShadowRepo
from tether.checkpoint.timeline import (
    CHECKPOINT_EVENT,
    Record,
    UserTurn,
    checkpoint_data,
    point_for,
    records,
    span_of,
    user_turns,
)
from tether.errors import RewindError
from tether.messages import Turn
from tether.session import LoadedSession, SessionStore, SessionWriter


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindPlan:
    """A checked rewind: what it goes back to.

    Attributes:
        loaded: the session.
        turn: the user turn (`--to N`).
        target: the snapshot the files go back to (None for a conversation-only rewind).
        repo: the shadow repository of the folder the turn ran in (the session's `cwd`, or
            the folder a later `--resume` / ACP `session/load` ran it in); `repo.root` is
            the folder a files rewind changes.
        files: restore the files.
        conversation: fork the conversation.
    """

    loaded: LoadedSession
    turn: UserTurn
    target: Record | None
    repo: ShadowRepo
    files: bool
    conversation: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindResult:
    """What a rewind did.

    Attributes:
        plan: the plan it carried out.
        session_id: the forked session (None for a files-only rewind).
        report: the files written, removed, kept and refused (None: files untouched).
        external: paths changed outside tether since the session's last record.
        before: the snapshot of the folder taken just before the rewind (None: files
            untouched); `git` history of the shadow repository keeps it.
        prompt: the text of the turn rewound to (a host puts it back in the editor).
    """

    plan: RewindPlan
    session_id: str | None
    report: RestoreReport | None
    external: tuple[str, ...]
    before: str | None
    prompt: str


def repo_for(loaded: LoadedSession, store: Path, max_file_bytes: int | None = None) -> ShadowRepo:
    """The shadow repository of the session's working folder (its header's `cwd`)."""
    repo = ShadowRepo(Path(loaded.header.cwd or "."), store=store)
    if max_file_bytes is not None:
        repo.max_file_bytes = max_file_bytes
    return repo


def repo_holding(commit: str, home: ShadowRepo) -> ShadowRepo | None:
    """The shadow repository in `home`'s store that holds snapshot `commit`: `home` itself,
    else another folder's (a session continued in another folder, `--resume` or ACP
    `session/load` there, snapshots that folder into its own repository; each repository
    names its folder in its `tether-project` file). None when none holds it."""
    if home.has(commit):
        return home
    try:
        entries = sorted(home.store.iterdir())
    except OSError:
        return None
    for git_dir in entries:
        if git_dir == home.git_dir:
            continue
        try:
            project = (git_dir / "tether-project").read_text().strip()
        except OSError:
            continue
        other = ShadowRepo(
            Path(project), store=home.store, max_file_bytes=home.max_file_bytes
        )
        if other.git_dir == git_dir and other.has(commit):
            return other
    return None


def _last_in(repo: ShadowRepo, recs: tuple[Record, ...] | list[Record]) -> Record | None:
    """The session's last record whose snapshot `repo` holds (a session that ran in several
    folders has records in several repositories)."""
    return next((r for r in reversed(recs) if repo.has(r.commit)), None)


def plan_rewind(
    loaded: LoadedSession,
    to: int,
    *,
    store: Path,
    files: bool = True,
    conversation: bool = True,
    synthetic: Callable[[Turn], bool] = lambda _t: False,
) -> RewindPlan:
    """Check a rewind of `loaded` to user turn `to` (1-based); nothing is changed.

    Raises:
        RewindError: `to` outside the session's user turns; `files` and the session has no
            checkpoint, or none covers that turn, or its snapshot is gone; neither `files`
            nor `conversation`.
    """
    if not (files or conversation):
        raise RewindError("nothing to rewind: give files, conversation or both")
    turns = user_turns(loaded.turns, synthetic)
    if not turns:
        raise RewindError(f"session {loaded.header.id} has no user turn to rewind to")
    if not 1 <= to <= len(turns):
        raise RewindError(
            f"--to {to} is outside session {loaded.header.id}'s user turns (1..{len(turns)})"
        )
    turn = turns[to - 1]
    repo = repo_for(loaded, store)
    target = None
    if files:
        recs = records(loaded.events)
        if not recs:
            raise RewindError(
                f"session {loaded.header.id} has no checkpoint: nothing ran that changed files "
                "(use --conversation to fork the conversation only)"
            )
        target = point_for(turn, recs)
        if target is None:
            raise RewindError(f"no checkpoint covers user turn {to} of {loaded.header.id}")
        holder = repo_holding(target.commit, repo)
        if holder is None:
            raise RewindError(
                f"the checkpoint of user turn {to} is missing from {repo.git_dir} "
                "(the shadow repository was removed)"
            )
        if not holder.root.is_dir():
            raise RewindError(
                f"user turn {to} ran in {holder.root}, which is no longer a folder "
                f"(its checkpoint is in {holder.git_dir})"
            )
        repo = holder  # the folder that turn ran in
    return RewindPlan(
        loaded=loaded, turn=turn, target=target, repo=repo, files=files, conversation=conversation
    )


def rewind(plan: RewindPlan, sessions: SessionStore, *, force: bool = False) -> RewindResult:
    """Carry out `plan` (module docstring for the order).

    Args:
        plan: from `plan_rewind`.
        sessions: the store holding the session (the fork is created there).
        force: also restore files changed outside tether since the session's last record.

    Raises:
        SessionError: the session is being written by a live run (nothing changed), the fork
            cannot be created.
        CheckpointError: git failed while restoring.
    """
    loaded, repo = plan.loaded, plan.repo
    sid = loaded.header.id
    # the session's writer lock: a live run on it refuses the rewind (files would change
    # under it); a files-only rewind records the tree it left in this session
    held = sessions.open_for_append(sid)
    writer: SessionWriter | None = None if plan.conversation else held
    try:
        before: str | None = None
        external: tuple[str, ...] = ()
        keep: tuple[str, ...] = ()
        last: Record | None = None
        if plan.target is not None:
            now = repo.snapshot("before a rewind")
            before = now.commit
            last = _last_in(repo, records(loaded.events))
            assert last is not None  # the target is one
            external = tuple(c.path for c in repo.changes(last.commit, now.commit))
            if not force:
                touched = {c.path for c in repo.changes(now.commit, plan.target.commit)}
                keep = tuple(p for p in external if p in touched)
        if plan.conversation:
            parent = fork_point(loaded, plan.turn.index)
            writer = sessions.create(None, cwd=loaded.header.cwd, parent=parent)
        report = None
        if plan.target is not None and before is not None:
            report = restore(
                repo, before, plan.target.commit, keep=keep, protect=plan.target.skipped
            )
            extra_left: dict[str, str] = {}
            assert last is not None
            for folder, commit in plan.target.extra:
                extra_report, extra_left[folder] = _restore_extra(
                    repo, folder, commit, last, force=force
                )
                report = _merged(report, extra_report, folder)
            report = _name_ignored(report, repo, loaded.turns[plan.turn.index :])
            left = repo.snapshot("after a rewind")
            assert writer is not None
            writer.append_event(
                CHECKPOINT_EVENT,
                {
                    **checkpoint_data(left.commit, "after", extra=extra_left),
                    "rewound_from": before,
                },
            )
        elif repo.exists() and writer is not None:  # conversation only: the tree as it is
            left = repo.snapshot("a conversation rewind")
            writer.append_event(CHECKPOINT_EVENT, checkpoint_data(left.commit, "after"))
        new_id = writer.id if plan.conversation and writer is not None else None
    finally:
        if writer is not None and writer is not held:
            writer.close()
        held.close()
    return RewindResult(
        plan=plan,
        session_id=new_id,
        report=report,
        external=external,
        before=before,
        prompt=plan.turn.text,
    )


def fork_point(loaded: LoadedSession, index: int) -> tuple[str, str] | None:
    """Where a conversation rewind to the turn at `index` forks `loaded`: its last entry before
    that turn, an event included (a `/model` or effort switch made before the message, a host
    command's output), so the fork keeps what the session was just before it; None when
    nothing precedes it."""
    between = [e.id for e in loaded.events if e.after_turns == index]
    if between:
        return (loaded.header.id, between[-1])
    return (loaded.header.id, loaded.turns[index - 1].id) if index > 0 else None


FILE_TOOLS = frozenset({"write", "edit"})
"""The agent's own file tools: the paths they changed after the turn rewound to are looked at
for files a checkpoint cannot hold (`_name_ignored`)."""


def _name_ignored(
    report: RestoreReport, repo: ShadowRepo, turns: Sequence[Turn]
) -> RestoreReport:
    """`report` with every gitignored file the agent's own `write`/`edit` changed in `turns`
    (those after the turn rewound to) listed as refused: snapshots skip ignored files, so such
    a file is not put back, and the user is told which (trial5: a hand-tuned `local.cfg`
    stayed as the agent left it, silently)."""
    root = repo.root.resolve()
    paths: dict[str, None] = {}
    for t in turns:
        for c in t.tool_calls:
            raw = c.arguments.get("path") if c.name in FILE_TOOLS else None
            if not isinstance(raw, str) or not raw:
                continue
            full = Path(raw) if Path(raw).is_absolute() else root / raw
            try:
                rel = full.resolve().relative_to(root).as_posix()
            except (ValueError, OSError):
                continue
            paths[rel] = None
    ignored = repo.ignored(tuple(paths)) if paths else ()
    if not ignored:
        return report
    why = "gitignored, so outside the checkpoints: left as the agent's write/edit made it"
    return RestoreReport(
        written=report.written,
        removed=report.removed,
        kept=report.kept,
        refused=(*report.refused, *((p, why) for p in ignored)),
    )


def _restore_extra(
    repo: ShadowRepo, folder: str, commit: str, last: Record, *, force: bool
) -> tuple[RestoreReport, str]:
    """An extra folder (`--add-dir`) back to its snapshot `commit` (files changed outside
    tether since the session's last record kept unless `force`, as for the root); returns
    the report and the snapshot of the tree it left."""
    extra = ShadowRepo(Path(folder), store=repo.store, max_file_bytes=repo.max_file_bytes)
    if not extra.has(commit):
        raise RewindError(f"the checkpoint of {folder} is missing from {extra.git_dir}")
    now = extra.snapshot("before a rewind")
    keep: tuple[str, ...] = ()
    previous = dict(last.extra).get(folder)
    if not force and previous is not None and extra.has(previous):
        external = {c.path for c in extra.changes(previous, now.commit)}
        keep = tuple(c.path for c in extra.changes(now.commit, commit) if c.path in external)
    report = restore(extra, now.commit, commit, keep=keep)
    return report, extra.snapshot("after a rewind").commit


def _merged(report: RestoreReport | None, extra: RestoreReport, folder: str) -> RestoreReport:
    """`report` with an extra folder's report added (its paths made absolute)."""
    base = report or RestoreReport()

    def full(paths: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{folder}/{p}" for p in paths)

    return RestoreReport(
        written=(*base.written, *full(extra.written)),
        removed=(*base.removed, *full(extra.removed)),
        kept=(*base.kept, *full(extra.kept)),
        refused=(*base.refused, *((f"{folder}/{p}", why) for p, why in extra.refused)),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRow:
    """One user turn as `tether sessions checkpoints` lists it.

    Attributes:
        turn: the user turn.
        ts_ms: when it was sent (Unix milliseconds).
        checkpoint: the snapshot a rewind to it goes back to (None: not covered).
        changed: the paths it changed (from its checkpoint to the next turn's, or to the
            session's last record); None when unknown.
    """

    turn: UserTurn
    ts_ms: int
    checkpoint: str | None
    changed: tuple[str, ...] | None


def turn_rows(
    loaded: LoadedSession, repo: ShadowRepo, synthetic: Callable[[Turn], bool] = lambda _t: False
) -> tuple[TurnRow, ...]:
    """Every user turn of the session with its checkpoint and the files it changed.

    Raises:
        CheckpointError: git failed.
    """
    turns = user_turns(loaded.turns, synthetic)
    recs = records(loaded.events)
    rows: list[TurnRow] = []
    for i, t in enumerate(turns):
        start, end = span_of(t, turns[i + 1] if i + 1 < len(turns) else None, recs)
        changed: tuple[str, ...] | None = None
        holder = None if start is None else repo_holding(start.commit, repo)
        if start is not None and end is not None and holder is not None:
            if not holder.has(end.commit):  # the next turn ran in another folder
                end = _last_in(holder, recs[: recs.index(end)])
            if end is not None:
                changed = tuple(c.path for c in holder.changes(start.commit, end.commit))
        rows.append(
            TurnRow(
                turn=t,
                ts_ms=loaded.turn_ts_ms[t.index] if t.index < len(loaded.turn_ts_ms) else 0,
                checkpoint=None if start is None else start.commit,
                changed=changed,
            )
        )
    return tuple(rows)


def preview(plan: RewindPlan) -> tuple[tuple[Change, ...], tuple[str, ...]]:
    """What carrying out `plan` would change now: the changes from the folder as it is to the
    target (taking a snapshot of the folder, nothing else), and the paths changed outside
    tether since the session's last record (kept unless forced). Empty for a
    conversation-only plan."""
    if plan.target is None:
        return (), ()
    now = plan.repo.snapshot("a rewind preview")
    last = _last_in(plan.repo, records(plan.loaded.events))
    assert last is not None  # the target is one
    external = tuple(c.path for c in plan.repo.changes(last.commit, now.commit))
    return plan.repo.changes(now.commit, plan.target.commit), external


