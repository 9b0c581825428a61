"""The read-only views of `tether jobs` over the jobs database: `workers`, `status --cycles`,
`logs --turns`. JSON lines on stdout, a one-line summary on stderr; a database not created yet
shows nothing (exit 0), one that cannot be read is one line and exit 1. Nothing here executes a
run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from tether.cli.output import EXIT_USAGE, err
from tether.plural import counted

if TYPE_CHECKING:
    from tether.jobs.engine import JobsConfig
    from tether.session import SessionStore


def _print(row: dict[str, Any]) -> None:
    print(json.dumps(row, default=str), flush=True)


T = TypeVar("T")


def redact_url(url: str) -> str:
    """`url` with its password replaced by `***`."""
    import re

    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def _absent(cfg: JobsConfig) -> bool:
    """True, with one line on stderr, when the project's SQLite jobs database does not exist
    yet: the view shows nothing and exits 0, as `jobs status` does ("no runs yet")."""
    url = cfg.database_url
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        err(f"no jobs database yet ({redact_url(url)}): nothing was dispatched")
        return True
    return False


def _read(cfg: JobsConfig, read: Callable[[], T]) -> T:
    """`read()`, or one line and exit 1 when the jobs database cannot be read."""
    try:
        return read()
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        err(f"jobs database {redact_url(cfg.database_url)}: {first}")
        raise typer.Exit(EXIT_USAGE) from None


def print_workers(cfg: JobsConfig) -> None:
    """One row per registered worker, with the workflow ids it holds PENDING."""
    from tether.jobs import engine, liveness

    def read() -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
        _, rows = liveness.workers(cfg.database_url, cfg.worker_timeout_s)
        running: dict[str, list[str]] = {}
        for w in engine.workflows(cfg):
            if w.status == "PENDING" and w.executor_id:
                running.setdefault(w.executor_id, []).append(w.workflow_id)
        return rows, running

    if _absent(cfg):
        return
    rows, running = _read(cfg, read)
    for row in rows:
        _print(row | {"running": running.get(str(row["executor_id"]), [])})
    alive = sum(bool(r["alive"]) for r in rows)
    err(f"{counted(len(rows), 'worker')}, {alive} alive (jobs.worker_timeout {cfg.worker_timeout_s:g}s)")


def print_cycles(cfg: JobsConfig) -> None:
    """One row per dispatch scan of the project (the last 100)."""
    from tether.jobs import db

    if _absent(cfg):
        return
    rows = _read(cfg, lambda: db.cycles(cfg.database_url, cfg.project))
    for row in rows:
        _print(row)
    err(f"{counted(len(rows), 'dispatch cycle')}")


def print_run_sessions(cfg: JobsConfig, task_id: str, records: list[dict[str, Any]]) -> None:
    """The turns of each run of `task_id`: those with a record, then those still going (their
    workflow is not final), each row `{"session_id", "turn"}`; from the project's session
    store (the jobs database by default, readable from any machine)."""
    from tether.errors import SessionError
    from tether.jobs import engine
    from tether.jobs.runner import session_id
    from tether.messages import turn_to_dict

    if _absent(cfg):
        return
    sids = [str(r["session_id"]) for r in records if r.get("session_id")]
    for w in _read(cfg, lambda: engine.workflows(cfg, task_id)):
        slot = w.workflow_id.rsplit(":", 1)[-1]
        sid = session_id(cfg.project, task_id, slot)
        if sid not in sids:
            sids.append(sid)
    store = _read(cfg, lambda: engine.session_store(cfg))
    for sid in sids:
        try:
            loaded = store.load(sid)
        except SessionError:
            continue  # queued, not started yet
        if not loaded.report.ok:
            err(f"{sid}: {loaded.report.describe()}")
        for turn in loaded.turns:
            _print({"session_id": sid, "turn": turn_to_dict(turn)})


def jobs_store_here() -> SessionStore | None:
    """The session store of the Jobs project in the current folder (`tether sessions show` of
    a `job.…` session not among `TETHER_HOME`'s files), or None when it has no jobs folder,
    its settings do not load, or its database does not open."""
    from tether.jobs import engine, folder
    from tether.settings.trust import trusted_settings

    root = Path.cwd()
    if not folder.jobs_dir(root).is_dir():
        return None
    try:
        loaded, _ = trusted_settings(root)
        cfg = engine.jobs_config(root, loaded.settings, role="status")
        url = cfg.database_url
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
            return None
        return engine.session_store(cfg)
    except Exception:
        return None
