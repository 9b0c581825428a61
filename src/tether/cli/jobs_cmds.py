"""`tether jobs ...`: the operator's commands for the jobs folder (`tether.jobs`).

    init | list | add FILE | run [ID] | dispatch [--once | --watch] [--enqueue-only] |
    status [--cycles] | logs ID [--turns] | cancel ID | enable | disable | worker [--id ID] |
    workers

Output: JSON lines on stdout (one per task, run or workflow), one-line notes on stderr.
`list`, `status`, `logs` and `cancel` never start an agent (`status`/`cancel` read the DBOS
system database through a client that executes nothing). Exit codes: 0 ok · 1 usage, a bad
task file, a disabled or missing jobs folder, a database that cannot be reached, an executor id
a live worker has, a worker declared dead by the others (it exits at once) · 130 interrupted (a
run cut by the signal is recovered by the next process with the same executor id, or by any
live worker after `jobs.worker_timeout`).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from tether.cli.jobs_views import redact_url
from tether.cli.output import EXIT_USAGE, err
from tether.plural import counted

if TYPE_CHECKING:
    from tether.jobs.engine import JobsConfig

jobs_app = typer.Typer(
    help="Folder tasks run unattended and durably (.tether/jobs/).", no_args_is_help=True
)

Cwd = Annotated[Path, typer.Option(help="The project folder.")]
ExecutorId = Annotated[
    str | None,
    typer.Option("--id", help="This process's executor id (default: <host>-<command>)."),
]


def _root(cwd: Path) -> Path:
    root = cwd.resolve()
    if not root.is_dir():
        err(f"--cwd {cwd} is not a folder")
        raise typer.Exit(EXIT_USAGE)
    return root


def _config(
    root: Path, *, executor_id: str | None = None, role: str = "worker", runs: bool = False
) -> JobsConfig:
    """The project's jobs configuration; one line and exit 1 on bad settings or no DBOS.
    `runs` (dispatch, run, worker): a project whose files (task files included) are not
    approved (`tether trust`) is refused, exit 1, nothing enqueued or run; the other commands
    only warn."""
    from tether.errors import ConfigError
    from tether.settings.trust import trusted_settings

    try:
        from tether.jobs.engine import jobs_config
    except ImportError as exc:  # a broken install: dbos missing
        err(f"tether jobs needs the `dbos` package ({exc}); pip install tether")
        raise typer.Exit(EXIT_USAGE) from None
    try:
        loaded, refused = trusted_settings(root)
    except ConfigError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    if refused and runs:
        err(
            f"refused: {refused.split('; ')[0]}; Jobs run task files only in an approved "
            f"project: review them, then `tether trust` in {root}"
        )
        raise typer.Exit(EXIT_USAGE)
    if refused:
        err(f"warning: {refused}")
    try:
        return jobs_config(root, loaded.settings, executor_id=executor_id, role=role)
    except ConfigError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


def _require_enabled(root: Path) -> None:
    from tether.jobs import folder

    if not folder.jobs_dir(root).is_dir():
        err(f"{folder.jobs_dir(root)} does not exist; run `tether jobs init` first")
        raise typer.Exit(EXIT_USAGE)
    if not folder.is_enabled(root):
        err(f"jobs are disabled in {root} (`tether jobs enable` turns them on)")
        raise typer.Exit(EXIT_USAGE)


def _outcome(out: object) -> dict[str, Any]:
    """The outcome fields a status row shows (a workflow's output is a dict when it ran)."""
    if not isinstance(out, dict):
        return {}
    fields = cast("dict[str, Any]", out)
    return {k: fields.get(k) for k in ("stop_reason", "answer", "session_id") if k in fields}


def _print(row: dict[str, Any]) -> None:
    print(json.dumps(row, default=str), flush=True)


@contextlib.contextmanager
def _keeping_approval(root: Path) -> Generator[None]:
    """Around a change of `.tether/jobs/` made at the user's command: an approved project
    stays approved (`tether.settings.trust.keeping_approval`); a note when it could not."""
    from tether.settings.trust import keeping_approval

    with keeping_approval(root) as notes:
        yield
    for line in notes:
        err(line)


@jobs_app.command("init")
def init(cwd: Cwd = Path(".")) -> None:
    """Create .tether/jobs/ with its `ai-jobs` marker (enables Jobs here)."""
    from tether.jobs import folder

    root = _root(cwd)
    with _keeping_approval(root):
        d = folder.init(root)
    err(f"jobs enabled: add task files (*.md) to {d}")


@jobs_app.command("enable")
def enable(cwd: Cwd = Path(".")) -> None:
    """Enable Jobs (removes the `ai-jobs-disabled` marker)."""
    from tether.jobs import folder

    root = _root(cwd)
    try:
        with _keeping_approval(root):
            folder.set_enabled(root, True)
    except FileNotFoundError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    err("jobs enabled")


@jobs_app.command("disable")
def disable(cwd: Cwd = Path(".")) -> None:
    """Disable Jobs (adds the `ai-jobs-disabled` marker: dispatch and workers refuse)."""
    from tether.jobs import folder

    root = _root(cwd)
    try:
        with _keeping_approval(root):
            folder.set_enabled(root, False)
    except FileNotFoundError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    err("jobs disabled")


@jobs_app.command("list")
def list_tasks(cwd: Cwd = Path(".")) -> None:
    """The folder's tasks and the rejected files with their reasons (starts nothing)."""
    from tether.jobs import folder

    root = _root(cwd)
    found = folder.scan(root)
    for t in found.tasks:
        _print(
            {
                "id": t.id,
                "file": t.file,
                "schedule": t.schedule.describe(),
                "model": t.model,
                "prompt": t.prompt[:80],
            }
        )
    for r in found.rejected:
        _print({"file": r.file, "rejected": r.reason, "detail": r.detail, "id": r.id})
        err(f"rejected {r.describe()}")
    state = "enabled" if folder.is_enabled(root) else "disabled"
    err(f"{counted(len(found.tasks), 'task')}, {len(found.rejected)} rejected; jobs {state}")


@jobs_app.command("add")
def add(
    file: Annotated[Path, typer.Argument(help="A task file (Markdown with frontmatter).")],
    cwd: Cwd = Path("."),
) -> None:
    """Check a task file and copy it into the jobs folder as <id>.md."""
    from tether.atomic import write_atomic
    from tether.jobs import folder
    from tether.jobs.parse import Rejected, parse_task

    root = _root(cwd)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        err(f"cannot read {file}: {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    parsed = parse_task(file.name, text)
    if isinstance(parsed, Rejected):
        err(f"rejected {parsed.describe()}")
        raise typer.Exit(EXIT_USAGE)
    taken = {t.id: t.file for t in folder.scan(root).tasks}
    if parsed.id in taken:
        err(f"rejected {file.name}: duplicate_id: id {parsed.id!r} is already {taken[parsed.id]}")
        raise typer.Exit(EXIT_USAGE)
    dest = folder.jobs_dir(root) / f"{parsed.id}.md"
    if dest.exists():
        err(f"{dest} exists already")
        raise typer.Exit(EXIT_USAGE)
    with _keeping_approval(root):
        if not folder.jobs_dir(root).is_dir():
            folder.init(root)
        write_atomic(dest, text.encode())
    err(f"added {parsed.id} ({parsed.schedule.describe()}) as {dest}")


def _run_and_wait(cfg: JobsConfig, ids: list[str]) -> None:
    from tether.jobs import engine

    done = engine.wait(ids)
    for wid in ids:
        status = engine.handle(wid).get_status()
        _print({"workflow_id": wid, "status": done[wid], **_outcome(status.output)})


@jobs_app.command("dispatch")
def dispatch(
    cwd: Cwd = Path("."),
    once: Annotated[bool, typer.Option("--once", help="One pass (default).")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Rescan and run until stopped.")] = False,
    enqueue_only: Annotated[
        bool, typer.Option("--enqueue-only", help="Only enqueue: workers run the tasks.")
    ] = False,
    executor_id: ExecutorId = None,
) -> None:
    """Enqueue every due task run not enqueued yet, then run them here (unless
    --enqueue-only) until they finish (--once, what a host cron or timer calls) or forever
    (--watch). A second pass over the same slot enqueues nothing."""
    from tether.jobs import engine, folder
    from tether.settings.trust import check_trust

    if once and watch:
        err("--once and --watch cannot be combined")
        raise typer.Exit(EXIT_USAGE)
    root = _root(cwd)
    _require_enabled(root)
    cfg = _config(root, executor_id=executor_id, role="dispatch", runs=True)
    _launch(cfg, listen=not enqueue_only, recovers=watch, long_lived=watch)
    try:
        if not watch:
            found, runs = engine.dispatch_scan(cfg, datetime.now(UTC))
            for r in found.rejected:
                err(f"rejected {r.describe()}")
            new = sum(r.new for r in runs)
            err(f"{counted(new, 'new run')} enqueued, {len(runs) - new} already known")
            if not enqueue_only:
                _run_and_wait(cfg, [r.workflow_id for r in runs])
            return
        stop = threading.Event()
        refused_before = ""

        def tick() -> None:
            nonlocal refused_before
            if not folder.is_enabled(root):
                return
            trust = check_trust(root)  # a task file added or edited since is run once approved
            if not trust.trusted:
                if trust.message() != refused_before:
                    err(f"not dispatching: {trust.message()}; review, then `tether trust`")
                refused_before = trust.message()
                return
            refused_before = ""
            for r in engine.dispatch_scan(cfg, datetime.now(UTC))[1]:
                if r.new:
                    err(f"enqueued {r.workflow_id}")

        engine.serve(stop, tick, cfg.poll_interval_s)
    finally:
        engine.shutdown()


def _finished(outcome: dict[str, Any]) -> None:
    """One stderr line per run a long-lived process (`worker`, `dispatch --watch`) finishes."""
    line = f"finished {outcome.get('workflow_id')}: {outcome.get('stop_reason')}"
    line += f", {counted(int(outcome.get('turns', 0)), 'turn')}"
    if outcome.get("error"):
        line += f" ({str(outcome['error']).splitlines()[0]})"
    err(line)


def _launch(
    cfg: JobsConfig, *, listen: bool, recovers: bool = False, long_lived: bool = False
) -> None:
    from tether.jobs import engine
    from tether.jobs.liveness import WorkerAlive

    try:
        engine.launch(
            cfg,
            listen=listen,
            recovers=recovers,
            on_outcome=_finished if long_lived else None,
        )
    except WorkerAlive as exc:
        err(f"refused: {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    except Exception as exc:  # the database cannot be reached or set up
        raise _unreachable(cfg, exc) from None


def _unreachable(cfg: JobsConfig, exc: Exception) -> typer.Exit:
    """Say that the jobs database could not be used (one line: its URL without the password,
    the error's first line) and return the exit-1 exception to raise."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    err(f"jobs database {redact_url(cfg.database_url)}: {first}")
    return typer.Exit(EXIT_USAGE)


@jobs_app.command("run")
def run(
    task_id: Annotated[str | None, typer.Argument(help="The task (default: every task).")] = None,
    cwd: Cwd = Path("."),
    executor_id: ExecutorId = None,
) -> None:
    """Run a task now (a new run, whatever its schedule), here, and wait for it."""
    from tether.jobs import engine, folder
    from tether.jobs.parse import Schedule

    root = _root(cwd)
    _require_enabled(root)
    found = folder.scan(root)
    tasks = [t for t in found.tasks if task_id is None or t.id == task_id]
    if task_id is not None and not tasks:
        err(f"no valid task {task_id!r} in {folder.jobs_dir(root)}")
        raise typer.Exit(EXIT_USAGE)
    cfg = _config(root, executor_id=executor_id, role="run", runs=True)
    _launch(cfg, listen=True)
    try:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        import dataclasses

        manual = [
            dataclasses.replace(t, schedule=Schedule("at", at=datetime.now(UTC)), digest=t.digest)
            for t in tasks
        ]
        ids: list[str] = []
        for t in manual:
            runs = engine.dispatch(cfg, [t], datetime.now(UTC))
            ids += [r.workflow_id for r in runs]
        err(f"{counted(len(ids), 'run')} started ({stamp})")
        _run_and_wait(cfg, ids)
    finally:
        engine.shutdown()


@jobs_app.command("status")
def status(
    cwd: Cwd = Path("."),
    cycles: Annotated[
        bool, typer.Option("--cycles", help="The dispatch scans instead: one row per scan.")
    ] = False,
) -> None:
    """Every run of this project in the database: workflow id, status, executor, outcome;
    with --cycles, the last 100 dispatch scans (tasks read, rejected, due, enqueued)."""
    from tether.jobs import engine

    root = _root(cwd)
    cfg = _config(root, role="status")
    if cycles:
        from tether.cli.jobs_views import print_cycles

        print_cycles(cfg)
        return
    try:
        rows = engine.workflows(cfg)
    except Exception as exc:
        raise _unreachable(cfg, exc) from None
    counts: dict[str, int] = {}
    for w in rows:
        counts[w.status] = counts.get(w.status, 0) + 1
        row: dict[str, Any] = {
            "workflow_id": w.workflow_id,
            "status": w.status,
            "executor_id": w.executor_id,
            "queue": w.queue_name,
        }
        _print(row | _outcome(w.output))
    err(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no runs yet")


@jobs_app.command("logs")
def logs(
    task_id: Annotated[str, typer.Argument(help="The task.")],
    cwd: Cwd = Path("."),
    turns: Annotated[
        bool, typer.Option("--turns", help="Also each run's session turns, as JSON lines.")
    ] = False,
) -> None:
    """A task's run records (answer, stop reason, usage, session id), oldest first; with
    --turns, after each record (and for each run still going) its session's turns, read from
    the jobs database on any machine (also `tether sessions show <session_id>`)."""
    from tether.jobs import folder

    root = _root(cwd)
    records = folder.read_records(root, task_id)
    if not _named(root, task_id, records):
        err(f"no task {task_id} in {folder.jobs_dir(root)} and no run records of it")
        raise typer.Exit(EXIT_USAGE)
    for rec in records:
        _print(rec)
    if turns:
        from tether.cli.jobs_views import print_run_sessions

        print_run_sessions(_config(root, role="logs"), task_id, records)
    err(f"{counted(len(records), 'run')} of {task_id}")


@jobs_app.command("cancel")
def cancel(
    task_id: Annotated[str, typer.Argument(help="The task.")],
    cwd: Cwd = Path("."),
) -> None:
    """Cancel a task's queued and running runs (a running agent is interrupted; its partial
    turn is persisted). A task id with no file, no record and no run is refused (exit 1)."""
    from tether.jobs import engine, folder

    root = _root(cwd)
    cfg = _config(root, role="cancel")
    try:
        ids = engine.cancel(cfg, task_id)
        unknown = (
            not ids
            and not _named(root, task_id, folder.read_records(root, task_id))
            and not engine.workflows(cfg, task_id)
        )
    except Exception as exc:  # the database cannot be reached
        raise _unreachable(cfg, exc) from None
    if unknown:
        err(f"no task {task_id} in {folder.jobs_dir(root)} and no runs of it")
        raise typer.Exit(EXIT_USAGE)
    for wid in ids:
        _print({"workflow_id": wid, "status": "CANCELLED"})
    err(f"cancelled {counted(len(ids), 'run')} of {task_id}")


def _named(root: Path, task_id: str, records: list[dict[str, Any]]) -> bool:
    """A task of that id in the jobs folder, or run records of it (`records`)."""
    from tether.jobs import folder

    return bool(records) or any(t.id == task_id for t in folder.scan(root).tasks)


@jobs_app.command("workers")
def workers(cwd: Cwd = Path(".")) -> None:
    """Every worker registered in the jobs database: executor id, host, pid, state, seconds
    since its last heartbeat (by the database's clock), whether it is alive, and the runs it
    holds (its PENDING workflows)."""
    from tether.cli.jobs_views import print_workers

    root = _root(cwd)
    print_workers(_config(root, role="status"))


@jobs_app.command("worker")
def worker(cwd: Cwd = Path("."), executor_id: ExecutorId = None) -> None:
    """A long-lived worker: takes this project's runs from the queue (shared through
    PostgreSQL across machines), recovers its own unfinished ones on start, beats into the
    jobs database and recovers the runs of workers silent past `jobs.worker_timeout`. An id
    a live worker has is refused (exit 1). Each run it finishes is one line on stderr."""
    from tether.jobs import engine

    root = _root(cwd)
    _require_enabled(root)
    cfg = _config(root, executor_id=executor_id, role="worker", runs=True)
    _launch(cfg, listen=True, recovers=True, long_lived=True)
    err(f"worker {cfg.executor_id} on {redact_url(cfg.database_url)} (queue {cfg.queue})")
    try:
        engine.serve(threading.Event(), None, cfg.poll_interval_s)
    finally:
        engine.shutdown()
