"""`tether sessions checkpoints ID` and `tether sessions rewind ID --to N` (`tether.checkpoint`).

    checkpoints ID                         one JSON line per user turn: its number, when, the
                                           prompt's start, its checkpoint, the files it changed
    rewind ID --to N [--files|--conversation] [--force]
                                           files back to before user turn N (changed files
                                           restored, deleted ones recreated, created ones
                                           removed), the conversation forked there into a new
                                           session (the original is kept); both by default

Output: JSON lines on stdout, one-line notes on stderr. Exit codes: 0 ok · 1 an unknown session,
`--to N` outside the session's user turns, no checkpoint covering it, the session being
written by a live run, git missing: one line, nothing changed.
Does not own: the rules (`tether.checkpoint`), the `sessions` group (`tether.cli.sessions_cmds`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tether.cli.output import EXIT_USAGE, err
from tether.errors import TetherError
from tether.plural import counted


def sessions_checkpoints(session_id: str) -> None:
    """List a session's user turns with their checkpoints and the files each changed."""
    from tether.agent.turn.checkpoints import checkpoint_store, synthetic_user_turn
    from tether.checkpoint.rewind import repo_for, turn_rows
    from tether.session import SessionStore

    sessions = SessionStore()
    try:
        loaded = sessions.load(sessions.find(session_id, Path.cwd()) or session_id)  # an id or a name
        rows = turn_rows(loaded, repo_for(loaded, checkpoint_store(sessions.root)), synthetic_user_turn)
    except TetherError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    for row in rows:
        print(
            json.dumps(
                {
                    "turn": row.turn.number,
                    "ts_ms": row.ts_ms,
                    "prompt": " ".join(row.turn.text.split())[:80],
                    "checkpoint": row.checkpoint,
                    "files_changed": None if row.changed is None else list(row.changed),
                }
            )
        )
    covered = sum(1 for r in rows if r.checkpoint is not None)
    err(f"{counted(len(rows), 'user turn')}, {covered} with a checkpoint (rewind: tether sessions rewind "
        f"{session_id} --to N)")


def sessions_rewind(
    session_id: str,
    to: Annotated[int, typer.Option("--to", help="The user turn to go back to (1: the first).")],
    files: Annotated[
        bool, typer.Option("--files", help="Only the files (the conversation goes on).")
    ] = False,
    conversation: Annotated[
        bool, typer.Option("--conversation", help="Only the conversation (forked at the turn).")
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Also restore files changed outside tether since."),
    ] = False,
) -> None:
    """Put the files back to before user turn N and fork the conversation there (the
    original session stays); files changed outside tether since are kept unless --force."""
    from tether.agent.turn.checkpoints import checkpoint_store, synthetic_user_turn
    from tether.checkpoint.rewind import plan_rewind, rewind
    from tether.session import SessionStore

    both = files == conversation  # neither flag, or both: files and conversation
    sessions = SessionStore()
    try:
        loaded = sessions.load(sessions.find(session_id, Path.cwd()) or session_id)  # an id or a name
        plan = plan_rewind(
            loaded,
            to,
            store=checkpoint_store(sessions.root),
            files=both or files,
            conversation=both or conversation,
            synthetic=synthetic_user_turn,
        )
        done = rewind(plan, sessions, force=force)
    except TetherError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    report = done.report
    print(
        json.dumps(
            {
                "session": done.session_id,
                "rewound": session_id,
                "turn": to,
                "folder": str(plan.repo.root),
                "written": list(report.written) if report else [],
                "removed": list(report.removed) if report else [],
                "kept": list(report.kept) if report else [],
                "refused": [list(r) for r in report.refused] if report else [],
                "before": done.before,
            }
        )
    )
    if report is not None:
        folder = plan.repo.root
        where = "" if str(folder) == loaded.header.cwd else f" in {folder} (where it ran)"
        err(
            f"files back to before user turn {to}{where}: {len(report.written)} restored, "
            f"{len(report.removed)} removed"
        )
        if report.kept:
            err(
                "kept (changed outside tether since the session's last checkpoint; --force "
                f"restores them too): {', '.join(report.kept)}"
            )
        for path, why in report.refused:
            err(f"not restored: {path}: {why}")
    if done.session_id is not None:
        err(
            f"conversation forked at user turn {to} into {done.session_id} (the original "
            f"{session_id} is kept): tether run --resume {done.session_id}"
        )
