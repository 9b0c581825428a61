"""Durable execution of task runs on DBOS (`dbos`): one workflow per task run, DBOS queues for
the concurrency limits, DBOS's recovery of pending workflows after a crash.

Owns: the DBOS configuration (the system database: embedded SQLite under `TETHER_HOME` by
default, PostgreSQL from `TETHER_JOBS_DATABASE_URL` / `jobs.database_url`), the workflow and its
two steps, the queues, `dispatch` (enqueue each due task run once) and `dispatch_scan` (one
recorded cycle), `serve` (a worker), where runs keep their sessions, and the read-only views (`workflows`, through a `DBOSClient`: they never execute anything).
Does not own: parsing (`tether.jobs.parse`), the folder (`tether.jobs.folder`), the agent run
(`tether.jobs.runner`), the command line (`tether.cli.jobs_cmds`).

Exactly once: a run's workflow id is `<project>:<task id>:<slot>` (`tether.jobs.parse`), so a
second dispatch of the same slot attaches to the existing workflow instead of enqueuing
another. The workflow is one step, `run` (the agent run: `tether.jobs.runner.run_task`,
idempotent through its session, and the run record), then the archive of a run-once task (an
atomic rename, idempotent: in the workflow's body, not a step). A process killed mid-step leaves its workflow PENDING under its executor
id; DBOS recovers it when a process with that executor id launches again, or a live worker
recovers it once the dead process has been silent for `jobs.worker_timeout`
(`tether.jobs.liveness`), and the step runs again, which continues the session (kept in the
jobs database, `session_store`, so any worker reads it) instead of restarting it. A run whose
Jobs were disabled after it was enqueued does not start (`stop_reason: disabled`).

DBOS is a per-process singleton: one `launch` per process (`shutdown` destroys it, after which
`launch` may be called again, as tests do).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient, DBOSConfig, SetWorkflowID, WorkflowHandle, WorkflowStatus

from tether.errors import ConfigError
from tether.jobs import db, folder, pull
from tether.jobs.liveness import Liveness
from tether.jobs.parse import Task, due_slot
from tether.session import SessionStore
from tether.settings import AgentConfig

if TYPE_CHECKING:  # the agent's stack is imported by the processes that run tasks only
    from tether.agent.assembly.build import ModelLike
    from tether.jobs.warm import Warm

APP_NAME = "tether-jobs"
APP_VERSION = "tether-jobs-1"
"""Fixed, so every worker (of any tether build) dequeues and recovers the same workflows."""
WORKFLOW_NAME = "tether_job_run"
DATABASE_ENV = "TETHER_JOBS_DATABASE_URL"
DATABASE_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://", "sqlite:")
"""The jobs database URLs DBOS can use here: PostgreSQL, or the embedded SQLite file."""
EXECUTOR_ENV = "TETHER_JOBS_EXECUTOR_ID"
FINAL = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobsConfig:
    """Where and how this project's jobs run (from `jobs` settings, env and flags).

    Attributes:
        root: the project folder.
        project: the name keying queues and workflow ids.
        database_url: DBOS's system database URL.
        executor_id: this process's DBOS executor id (unique among live processes; stable
            across restarts so the process recovers its own pending workflows).
        concurrency / worker_concurrency / model_concurrency / poll_interval_s /
            worker_timeout_s / sessions: as `tether.settings.model.JobsSettings`.
    """

    root: Path
    project: str
    database_url: str
    executor_id: str
    concurrency: int = 4
    worker_concurrency: int = 2
    model_concurrency: dict[str, int] = field(default_factory=dict[str, int])
    poll_interval_s: float = 1.0
    worker_timeout_s: float = 30.0
    sessions: str = "database"

    @property
    def queue(self) -> str:
        """The project's queue."""
        return f"tether-jobs.{self.project}"

    def queue_for(self, model: str | None) -> str:
        """The queue of a task with `model`: the model's own when it has a limit."""
        if model and model in self.model_concurrency:
            return f"{self.queue}.model.{re.sub(r'[^A-Za-z0-9_.-]', '_', model)}"
        return self.queue

    def workflow_id(self, task_id: str, slot: str) -> str:
        """`<project>:<task id>:<slot>`."""
        return f"{self.project}:{task_id}:{slot}"


def default_project(root: Path) -> str:
    """The project's key when `jobs.project` is not set: the folder's name (characters other
    than letters, digits, `_`, `.`, `-` replaced by `_`) and 8 hex digits of the SHA-256 of its
    full path, so two projects whose folders are named alike never share a queue or a
    database (`app-1f2e3d4c`)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", root.name).lstrip("._-") or "project"
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{name[:40]}-{digest[:8]}"


def default_database_url(project: str) -> str:
    """The embedded SQLite system database: `<tether data>/jobs/<project>.sqlite`."""
    from tether.session.layout import default_root

    base = default_root().parent / "jobs"
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{base / project}.sqlite"


def jobs_config(
    root: Path, settings: AgentConfig, *, executor_id: str | None = None, role: str = "worker"
) -> JobsConfig:
    """The jobs configuration of `root` from its settings, `TETHER_JOBS_DATABASE_URL` and
    `TETHER_JOBS_EXECUTOR_ID`; the default executor id is `<host name>-<role>`.

    Raises:
        ConfigError: a database URL of another kind (`DATABASE_SCHEMES`).
    """
    js = settings.jobs
    project = js.project or default_project(root)
    url = os.environ.get(DATABASE_ENV) or js.database_url or default_database_url(project)
    if not url.startswith(DATABASE_SCHEMES):  # DBOS took `mysql://` for PostgreSQL on 5432
        scheme = url.partition(":")[0] or url
        raise ConfigError(
            f"jobs database: {scheme}: URLs are not supported; use postgresql://… (or leave it "
            "unset for the embedded SQLite file)"
        )
    exe = executor_id or os.environ.get(EXECUTOR_ENV) or f"{socket.gethostname()}-{role}"
    return JobsConfig(
        root=root,
        project=project,
        database_url=url,
        executor_id=exe,
        concurrency=js.concurrency,
        worker_concurrency=min(js.worker_concurrency, js.concurrency),
        model_concurrency=dict(js.model_concurrency),
        poll_interval_s=js.poll_interval_s,
        worker_timeout_s=js.worker_timeout_s,
        sessions=js.sessions,
    )


def sessions_url(database_url: str) -> str:
    """The database of the runs' sessions: the jobs database itself on PostgreSQL; beside an
    embedded SQLite one, its own file `<name>.sessions.sqlite` (in WAL mode, so appends never
    wait on DBOS's lock of the queue's file, nor on an fsync)."""
    if database_url.startswith("sqlite:") and database_url.endswith(".sqlite"):
        return database_url.removesuffix(".sqlite") + ".sessions.sqlite"
    return database_url


def session_store(cfg: JobsConfig) -> SessionStore:
    """Where this project's runs keep their sessions: the jobs database (`jobs.sessions:
    database`, the default: every worker reads them; `sessions_url`) or `TETHER_HOME`'s
    files."""
    if cfg.sessions == "files":
        return SessionStore()
    from tether.session.dbstore import DbSessionStore

    return DbSessionStore(sessions_url(cfg.database_url))


# ---- the workflow (module level: DBOS registers it at import) -----------------------------


@dataclass
class _Process:
    """What this process's workflows run with (set by `launch`)."""

    config: JobsConfig | None = None
    model: ModelLike | None = None
    liveness: Liveness | None = None
    warm: Warm | None = None
    puller: pull.Puller | None = None
    on_outcome: Callable[[dict[str, Any]], None] | None = None


_PROCESS = _Process()

_LOCAL_RUNS: dict[str, threading.Event] = {}
"""Agent runs in progress in this process, by workflow id: each event is set when its step
returns. A cancelled workflow is final in DBOS at once, while its agent is interrupted only at
the run's next poll: `wait` waits for this process's own run to end before its caller may
destroy DBOS (which would stop the run's polls, so the cancel would never land)."""
_LOCAL_LOCK = threading.Lock()
LOCAL_END_S = 60.0
"""How long `wait` waits for this process's run of a final workflow to end, in seconds."""


def _config() -> JobsConfig:
    if _PROCESS.config is None:
        raise RuntimeError("tether jobs: DBOS workflow run before launch()")
    return _PROCESS.config


@DBOS.step(name="tether_job_agent_run")
def _run_step(task: dict[str, Any], slot: str) -> dict[str, Any]:
    cfg = _config()
    wid = DBOS.workflow_id
    assert wid is not None

    def cancelled() -> bool:
        status = DBOS.get_workflow_status(wid)
        return status is not None and status.status == "CANCELLED"

    if not folder.is_enabled(cfg.root):  # disabled after this run was enqueued: it never starts
        skipped: dict[str, Any] = {
            "task": task["id"],
            "slot": slot,
            "stop_reason": "disabled",
            "answer": "",
            "error": f"jobs are disabled in {cfg.root}",
            "workflow_id": wid,
            "executor_id": cfg.executor_id,
            "finished_ms": int(time.time() * 1000),
        }
        folder.write_record(cfg.root, str(task["id"]), slot, skipped)
        return _told(skipped)
    from tether.jobs.runner import run_task  # the agent's stack (~1 s of imports): runs only

    ended = threading.Event()
    with _LOCAL_LOCK:
        _LOCAL_RUNS[wid] = ended
    try:
        outcome = run_task(
            cfg.root,
            task,
            slot,
            project=cfg.project,
            model=_PROCESS.model,
            cancelled=cancelled,
            poll_s=max(0.2, cfg.poll_interval_s),
            store=session_store(cfg),
            warm=_PROCESS.warm,
        )
    finally:
        ended.set()
        with _LOCAL_LOCK:
            _LOCAL_RUNS.pop(wid, None)
    outcome = outcome | {"workflow_id": wid, "executor_id": cfg.executor_id}
    folder.write_record(cfg.root, str(task["id"]), slot, outcome)
    return _told(outcome)


def _told(outcome: dict[str, Any]) -> dict[str, Any]:
    """`outcome`, after this process's `on_outcome` (if any) was told it."""
    if _PROCESS.on_outcome is not None:
        _PROCESS.on_outcome(outcome)
    return outcome


@DBOS.workflow(name=WORKFLOW_NAME)
def job_workflow(project: str, task: dict[str, Any], slot: str) -> dict[str, Any]:
    """One task run: the agent run (and its record), one step; then the archive of a run-once
    task that ended well. Returns the run's outcome (`tether.jobs.runner.run_task`).

    The archive is no step of its own: it is an idempotent rename (`folder.archive`), so it
    runs in the workflow's body, again whenever DBOS runs the body again (a recovery replays
    the recorded step and archives what is still there). A step would cost two more commits
    of the system database per run (its check and its record) for nothing."""
    puller = _PROCESS.puller
    wid = DBOS.workflow_id
    if puller is not None and wid is not None:
        puller.started(wid)
    try:
        outcome = _run_step(task, slot)
    finally:
        if puller is not None:
            puller.wake()  # this run's slot frees as the workflow ends: take the next run
    if task.get("once") and outcome.get("stop_reason") not in (
        "cancelled",
        "error",
        "timeout",
        "disabled",
    ):
        folder.archive(_config().root, str(task["file"]), str(task["digest"]))
    return outcome


# ---- lifecycle -----------------------------------------------------------------------------


def launch(
    cfg: JobsConfig,
    *,
    listen: bool = True,
    model: ModelLike | None = None,
    recovers: bool = True,
    on_outcome: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Start DBOS in this process with `cfg` (the system database is created and migrated on
    first use); register the project's queues. `listen=True`: this process runs task runs: it
    registers its executor id as a live worker first (`tether.jobs.liveness`), then beats and
    recovers dead workers' runs until `shutdown`. `listen=False`: this process only enqueues
    (dequeues nothing, recovers nothing). `recovers=False` (a short-lived listening process:
    `dispatch --once`, `run`): it beats but leaves dead workers to the long-lived ones. `model`
    overrides every task's model (a provider object in tests). `on_outcome` is told each run
    this process finishes (its outcome, as recorded), on the run's thread.

    Raises:
        tether.jobs.liveness.WorkerAlive: a live worker has `cfg.executor_id` (nothing started).
        dbos.DBOSException / sqlalchemy errors: the database cannot be reached or set up.
    """
    live: Liveness | None = None
    if listen:
        live = Liveness(
            url=cfg.database_url,
            executor_id=cfg.executor_id,
            project=cfg.project,
            timeout_s=cfg.worker_timeout_s,
            recover=_recover,
            busy=lambda: bool(_LOCAL_RUNS),
            claims=recovers,
        )
        live.register()  # before DBOS: a refused id must not recover the live one's runs
    db.prefer_wal(cfg.database_url)
    _PROCESS.config = cfg
    _PROCESS.model = model
    _PROCESS.on_outcome = on_outcome
    _PROCESS.liveness = live
    if listen:
        from tether.jobs.warm import Warm

        _PROCESS.warm = Warm()
    else:
        _PROCESS.warm = None
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": cfg.database_url,
        "application_version": APP_VERSION,
        "executor_id": cfg.executor_id,
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": 0.1,
    }
    own = db.system_engine(cfg.database_url)
    if own is not None:
        config["system_database_engine"] = own
    DBOS(config=config)
    # DBOS polls none of the projects' queues (its own are always served): a listening
    # process polls its own project's queues itself (`tether.jobs.pull`: every interval, and
    # at once when one of its runs ends), never those of other projects sharing the database;
    # with a DBOS lacking what that loop calls, DBOS polls this project's queues as before
    queues = [cfg.queue, *(cfg.queue_for(m) for m in cfg.model_concurrency)]
    pulls = listen and pull.supported()
    DBOS.listen_queues(queues if listen and not pulls else [])
    DBOS.launch()
    poll = min(cfg.poll_interval_s, 1.0)
    DBOS.register_queue(
        cfg.queue,
        global_concurrency=cfg.concurrency,
        worker_concurrency=cfg.worker_concurrency,
        polling_interval_sec=poll,
        on_conflict="always_update",
    )
    for model_name, limit in cfg.model_concurrency.items():
        DBOS.register_queue(
            cfg.queue_for(model_name),
            global_concurrency=limit,
            worker_concurrency=min(limit, cfg.worker_concurrency),
            polling_interval_sec=poll,
            on_conflict="always_update",
        )
    if pulls:
        puller = pull.Puller(queues, poll)
        _PROCESS.puller = puller
        puller.start()
    if live is not None:
        live.start()


def _recover(executor_id: str) -> int:
    """DBOS's recovery for a dead executor id (the call behind DBOS's admin recovery
    endpoint): its PENDING workflows go back to their queues. Returns how many."""
    return len(DBOS._recover_pending_workflows([executor_id]))  # pyright: ignore[reportPrivateUsage]


def shutdown() -> None:
    """Destroy this process's DBOS (running workflows stay PENDING: recovered later, by this
    executor id's next process or, after `worker_timeout`, by any live worker)."""
    live, _PROCESS.liveness = _PROCESS.liveness, None
    puller, _PROCESS.puller = _PROCESS.puller, None
    if puller is not None:
        puller.stop()
    DBOS.destroy()
    if live is not None:
        live.stop()
    warm, _PROCESS.warm = _PROCESS.warm, None
    if warm is not None:
        warm.close()
    _PROCESS.config = None


@dataclass(frozen=True, slots=True)
class Dispatched:
    """One due task run: its workflow id and whether this dispatch enqueued it (False: it
    existed already, in any state)."""

    task_id: str
    slot: str
    workflow_id: str
    new: bool


def dispatch(
    cfg: JobsConfig, tasks: Iterable[Task], now: datetime | None = None
) -> list[Dispatched]:
    """Enqueue each task's due run (`tether.jobs.parse.due_slot`) that has no workflow yet.
    Needs `launch` first. Idempotent: a run already enqueued, running or finished is left."""
    now = now or datetime.now(UTC)
    due = [(task, slot) for task in tasks if (slot := due_slot(task, now)) is not None]
    ids = [cfg.workflow_id(task.id, slot) for task, slot in due]
    known = {  # one query for the scan, not one per task
        w.workflow_id
        for w in (
            DBOS.list_workflows(workflow_ids=ids, load_input=False, load_output=False)
            if ids
            else []
        )
    }
    out: list[Dispatched] = []
    for (task, slot), wid in zip(due, ids, strict=True):
        if wid in known:
            out.append(Dispatched(task.id, slot, wid, False))
            continue
        with SetWorkflowID(wid):  # an id in use attaches to that workflow: never twice
            DBOS.enqueue_workflow(
                cfg.queue_for(task.model), job_workflow, cfg.project, task.to_json(), slot
            )
        out.append(Dispatched(task.id, slot, wid, True))
    return out


def dispatch_scan(
    cfg: JobsConfig, now: datetime | None = None
) -> tuple[folder.Scan, list[Dispatched]]:
    """One dispatch cycle: scan the jobs folder, enqueue what is due (`dispatch`), and record
    the cycle in the jobs database (`tether jobs status --cycles`). Needs `launch` first."""
    found = folder.scan(cfg.root)
    runs = dispatch(cfg, found.tasks, now)
    db.record_cycle(
        cfg.database_url,
        project=cfg.project,
        executor_id=cfg.executor_id,
        tasks=len(found.tasks),
        rejected=len(found.rejected),
        due=len(runs),
        enqueued=sum(r.new for r in runs),
    )
    return found, runs


def wait(workflow_ids: Iterable[str], *, poll_s: float = 0.2) -> dict[str, str]:
    """Block until every workflow is in a final state and this process's own run of it (if
    any) has ended (at most `LOCAL_END_S` more); returns {id: status}."""
    pending = list(workflow_ids)
    done: dict[str, str] = {}
    while pending:
        still: list[str] = []
        for wid in pending:
            status = DBOS.get_workflow_status(wid)
            if status is not None and status.status in FINAL:
                done[wid] = status.status
            else:
                still.append(wid)
        pending = still
        if pending:
            time.sleep(poll_s)
    for wid in done:
        with _LOCAL_LOCK:
            ended = _LOCAL_RUNS.get(wid)
        if ended is not None:  # cancelled, its agent not interrupted yet: let the cancel land
            ended.wait(LOCAL_END_S)
    return done


def serve(
    stop: threading.Event, on_tick: Callable[[], None] | None = None, tick_s: float = 1.0
) -> None:
    """Keep this (launched, listening) process working the queue until `stop` is set;
    `on_tick` runs every `tick_s` seconds (`dispatch --watch` rescans the folder there)."""
    while not stop.is_set():
        if on_tick is not None:
            on_tick()
        stop.wait(tick_s)


# ---- read-only views (never execute anything) ----------------------------------------------


def _client(cfg: JobsConfig) -> DBOSClient | None:
    """A client of the jobs database (None: a SQLite file never created). DBOS logs its own
    error lines when the database cannot be reached; they are silenced here: the exception
    raised is what the caller says, in one line.

    Raises:
        dbos / sqlalchemy errors: the database cannot be reached.
    """
    url = cfg.database_url
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return None  # nothing was ever dispatched
    with quiet_dbos():
        return DBOSClient(system_database_url=url, application_name=APP_NAME)


@contextlib.contextmanager
def quiet_dbos() -> Generator[None]:
    """DBOS's own logger silenced for the block (its "Error connecting to the DBOS system
    database" lines come before tether's one line about the same failure)."""
    logger = logging.getLogger("dbos")
    was = logger.disabled
    logger.disabled = True  # not its level: DBOS sets that itself when it configures logging
    try:
        yield
    finally:
        logger.disabled = was


def workflows(cfg: JobsConfig, task_id: str | None = None) -> list[WorkflowStatus]:
    """This project's workflows (of one task), oldest first, with their outputs."""
    client = _client(cfg)
    if client is None:
        return []
    prefix = f"{cfg.project}:{task_id}:" if task_id else f"{cfg.project}:"
    try:
        return client.list_workflows(workflow_id_prefix=prefix, load_input=False)
    finally:
        client.destroy()


def cancel(cfg: JobsConfig, task_id: str) -> list[str]:
    """Cancel this task's workflows that are not final (queued ones never start; a running one
    is interrupted by its step within a poll interval). Returns the cancelled ids."""
    client = _client(cfg)
    if client is None:
        return []
    try:
        prefix = f"{cfg.project}:{task_id}:"
        ids = [
            w.workflow_id
            for w in client.list_workflows(
                workflow_id_prefix=prefix, load_input=False, load_output=False
            )
            if w.status not in FINAL
        ]
        for wid in ids:
            client.cancel_workflow(wid)
        return ids
    finally:
        client.destroy()


def handle(workflow_id: str) -> WorkflowHandle[Any]:
    """A handle on a workflow of this (launched) process's database."""
    return DBOS.retrieve_workflow(workflow_id)
