"""The `jobs` settings section: unattended folder tasks (`tether.jobs`).

Owns: `JobsSettings`. `tether.settings.model` holds it as `AgentConfig.jobs` (and re-exports it).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tether.settings.base import Duration
from tether.settings.base import Section as _Section

__all__ = ["JobsSettings"]


class JobsSettings(_Section):
    """`jobs`: unattended folder tasks (`tether.jobs`) run durably on DBOS.

    Attributes:
        database_url: DBOS's system database: `postgresql://…` for many workers on many
            machines sharing one queue; None: an embedded SQLite file under `TETHER_HOME`
            (`<data>/jobs/<project>.sqlite`). `TETHER_JOBS_DATABASE_URL` overrides it.
        project: the name that keys this project's queue and workflow ids in a shared
            database (letters, digits, `_`, `-`, `.`); None: the project folder's name plus
            8 hex digits of its full path's SHA-256 (`app-1f2e3d4c`: folders named alike never
            share a queue). Set it when workers on machines where the project lives at other
            paths share one database.
        concurrency: task runs of this project at once, across all workers (≥ 1).
        worker_concurrency: task runs at once in one worker process (≥ 1).
        model_concurrency: per model (`provider/model` as a task's `model` names it), runs
            at once across all workers; tasks of such a model go to its own queue.
        poll_interval_s: how often `dispatch --watch` rescans the folder and an idle
            worker polls the queue (at most every 1 s; a worker whose run ends polls at
            once), seconds (JSON key `poll_interval`).
        worker_timeout_s: a worker (any process that runs tasks) whose last heartbeat in the
            jobs database is older than this, by the database's clock, is dead: one live
            worker recovers its unfinished runs. Workers beat every `min(5 s, timeout / 3)`.
            Seconds (JSON key `worker_timeout`).
        sessions: where a run's session is stored: `database` (the jobs database, so every
            worker reads it: a run recovered on another machine resumes it) or `files`
            (`TETHER_HOME`'s JSONL files, as `tether run` writes them).
    """

    database_url: str | None = Field(default=None, pattern=r"^(postgres(ql)?|sqlite)(\+\w+)?://")
    project: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    concurrency: int = Field(default=4, ge=1)
    worker_concurrency: int = Field(default=2, ge=1)
    model_concurrency: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict[str, int]
    )
    poll_interval_s: Duration = Field(default=1.0, alias="poll_interval", gt=0)
    worker_timeout_s: Duration = Field(default=30.0, alias="worker_timeout", gt=0)
    sessions: Literal["database", "files"] = "database"
