"""Task files and schedules, pure: text in, `Task` or `Rejected` out; (schedule, now) in, the
due slot out. No I/O, no clock: the caller passes the file's text and the time.

A task file is Markdown with YAML frontmatter (python-frontmatter) and the prompt as the body:

    ---
    id: nightly-report            # default: the file name without `.md`
    schedule:                     # absent: run once, then archived
      cron: "0 3 * * *"           # or  every: 30m   or  at: 2026-12-01T03:00:00Z
    model: openai/gpt-4o          # default: the settings' model
    tools: [read, grep]           # default: every tool the settings give
    max_turns: 20                 # default: run.max_turns
    timeout: 10m                  # the whole run; default: none
    safe: true                    # read-only tools only
    ---
    Summarize yesterday's commits in REPORT.md.

Rejection reasons (`Rejected.reason`, one line each): `frontmatter` (the YAML does not parse or
is not a mapping), `invalid` (a field has a wrong type or value, or an unknown field),
`schedule` (not exactly one of cron/every/at, a bad cron expression, duration or time),
`empty_prompt`, `duplicate_id` (another file of the folder has the same id; every file with it
is rejected, so which one ran never depends on listing order).

Slots: each run of a task has a slot, the key of its workflow id and session: `once-<sha>` (the
file's content hash, so an edited run-once task runs again), `at-<UTC time>` once that time has
passed, `every-<UTC start of the current interval>` (intervals counted from the Unix epoch),
`cron-<UTC time of the latest fire time ≤ now>`. Only the current slot is due: missed slots are
not back-filled (a host that was down runs the task once when it is back).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

import frontmatter
import yaml
from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tether.durations import parse_duration
from tether.errors import DurationError

TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
RejectReason = Literal["frontmatter", "invalid", "schedule", "empty_prompt", "duplicate_id"]
ScheduleKind = Literal["once", "cron", "every", "at"]


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a task runs.

    Attributes:
        kind: `once` (no schedule), `cron`, `every`, `at`.
        cron: the 5-field cron expression (kind `cron`).
        every_s: the interval in seconds, ≥ 1 (kind `every`).
        at: the aware UTC time (kind `at`).
    """

    kind: ScheduleKind
    cron: str | None = None
    every_s: float | None = None
    at: datetime | None = None

    def describe(self) -> str:
        """One short line: `once`, `cron 0 3 * * *`, `every 1800s`, `at 2026-…`."""
        if self.kind == "cron":
            return f"cron {self.cron}"
        if self.kind == "every":
            return f"every {self.every_s:g}s"
        if self.kind == "at":
            assert self.at is not None
            return f"at {self.at.isoformat()}"
        return "once"


@dataclass(frozen=True, slots=True)
class Task:
    """One valid task file.

    Attributes:
        id: the task id (`[A-Za-z0-9][A-Za-z0-9_.-]*`, ≤ 64 characters).
        file: the file's name in the jobs folder.
        prompt: the body, stripped.
        schedule: when it runs.
        model: `provider/model`, or None for the settings' model.
        tools: the tool names offered, or None for all.
        max_turns: cap on model requests, or None for `run.max_turns`.
        timeout_s: the whole run's time limit in seconds, or None.
        safe: read-only tools only.
        digest: the SHA-256 hex of the file's text (the run-once slot).
    """

    id: str
    file: str
    prompt: str
    schedule: Schedule
    model: str | None = None
    tools: tuple[str, ...] | None = None
    max_turns: int | None = None
    timeout_s: float | None = None
    safe: bool = False
    digest: str = ""

    def to_json(self) -> dict[str, Any]:
        """The task as JSON values (the workflow's input)."""
        return {
            "id": self.id,
            "file": self.file,
            "prompt": self.prompt,
            "schedule": self.schedule.describe(),
            "once": self.schedule.kind == "once",
            "model": self.model,
            "tools": list(self.tools) if self.tools is not None else None,
            "max_turns": self.max_turns,
            "timeout_s": self.timeout_s,
            "safe": self.safe,
            "digest": self.digest,
        }


@dataclass(frozen=True, slots=True)
class Rejected:
    """A task file that will not run, and why (one line)."""

    file: str
    reason: RejectReason
    detail: str
    id: str | None = None

    def describe(self) -> str:
        """`<file>: <reason>: <detail>`."""
        return f"{self.file}: {self.reason}: {self.detail}"


class _Front(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = Field(default=None, pattern=TASK_ID)
    schedule: Any = None  # checked by `_schedule`, whose message names the three forms
    model: str | None = Field(default=None, min_length=1)
    tools: list[str] | None = None
    max_turns: int | None = Field(default=None, ge=1)
    timeout: float | None = None
    safe: bool = False

    @field_validator("timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float | None:
        return None if value is None else parse_duration(value)


SCHEDULE_FORMS = 'cron: "0 3 * * *", every: 30m or at: 2026-12-01T03:00:00Z'
"""The three schedules, as a task file writes them (under `schedule:`)."""


def _schedule(raw: object) -> Schedule:
    """Raises ValueError with the reason."""
    if raw is None:
        return Schedule("once")
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"{raw!r} is not a schedule: write one of {SCHEDULE_FORMS} on its own line "
            "under schedule:"
        )
    keys = set(cast(Mapping[str, Any], raw))
    if len(keys) != 1 or not keys <= {"cron", "every", "at"}:
        raise ValueError(f"give exactly one of {SCHEDULE_FORMS}")
    raw = cast(Mapping[str, Any], raw)
    if "cron" in raw:
        expr = raw["cron"]
        if not isinstance(expr, str) or len(expr.split()) != 5 or not croniter.is_valid(expr):
            raise ValueError(f"{expr!r} is not a 5-field cron expression")
        return Schedule("cron", cron=expr.strip())
    if "every" in raw:
        try:
            seconds = parse_duration(raw["every"])
        except DurationError as exc:
            raise ValueError(str(exc)) from None
        if seconds < 1:
            raise ValueError("every must be at least 1s")
        return Schedule("every", every_s=seconds)
    at = raw["at"]
    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at.strip())
        except ValueError:
            raise ValueError(f"{at!r} is not an ISO time") from None
    if not isinstance(at, datetime):
        raise ValueError(f"{at!r} is not an ISO time")
    if at.tzinfo is None:
        raise ValueError("at needs a time zone (e.g. 2026-12-01T03:00:00Z)")
    return Schedule("at", at=at.astimezone(UTC))


def parse_task(file: str, text: str) -> Task | Rejected:
    """Parse one task file named `file` (its name in the jobs folder) with content `text`.

    Returns a `Task`, or a `Rejected` with one of the reasons in the module docstring (never
    raises)."""
    stem = file[:-3] if file.endswith(".md") else file
    handler = frontmatter.detect_format(text, frontmatter.handlers)
    try:
        if handler is None:
            raw: Any = {}
            content = text
        else:
            head, content = handler.split(text)
            raw = handler.load(head)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Rejected(file, "frontmatter", first)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return Rejected(
            file, "frontmatter", f"the frontmatter is a {type(raw).__name__}, not a mapping"
        )
    meta = cast("dict[str, Any]", raw)
    try:
        front = _Front.model_validate(meta)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "frontmatter"
        return Rejected(file, "invalid", f"{where}: {err['msg']}", id=_raw_id(meta))
    task_id = front.id or stem
    if not re.fullmatch(TASK_ID, task_id):
        return Rejected(file, "invalid", f"id {task_id!r}: give an `id` field", id=None)
    try:
        schedule = _schedule(front.schedule)
    except ValueError as exc:
        return Rejected(file, "schedule", str(exc), id=task_id)
    prompt = content.strip()
    if not prompt:
        return Rejected(file, "empty_prompt", "the body (the prompt) is empty", id=task_id)
    return Task(
        id=task_id,
        file=file,
        prompt=prompt,
        schedule=schedule,
        model=front.model,
        tools=tuple(front.tools) if front.tools is not None else None,
        max_turns=front.max_turns,
        timeout_s=front.timeout,
        safe=front.safe,
        digest=hashlib.sha256(text.encode()).hexdigest(),
    )


def _raw_id(meta: Mapping[str, Any]) -> str | None:
    value = meta.get("id")
    return value if isinstance(value, str) else None


def parse_folder(files: Sequence[tuple[str, str]]) -> tuple[list[Task], list[Rejected]]:
    """Parse every (file name, text) pair; files sharing an id are all rejected as
    `duplicate_id`. Returns (tasks sorted by id, rejections sorted by file)."""
    parsed = [parse_task(name, text) for name, text in files]
    counts = Counter(p.id for p in parsed if isinstance(p, Task))
    tasks: list[Task] = []
    rejected: list[Rejected] = []
    for p in parsed:
        if isinstance(p, Rejected):
            rejected.append(p)
        elif counts[p.id] > 1:
            others = sorted(q.file for q in parsed if isinstance(q, Task) and q.id == p.id)
            rejected.append(
                Rejected(p.file, "duplicate_id", f"id {p.id!r} is also in {others}", id=p.id)
            )
        else:
            tasks.append(p)
    return sorted(tasks, key=lambda t: t.id), sorted(rejected, key=lambda r: r.file)


def _stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def due_slot(task: Task, now: datetime) -> str | None:
    """The slot of `task` due at `now` (an aware time), or None when nothing is due yet (an
    `at` time in the future). See the module docstring for the slot names."""
    s = task.schedule
    if s.kind == "once":
        return f"once-{task.digest[:12]}"
    if s.kind == "at":
        assert s.at is not None
        return f"at-{_stamp(s.at)}" if now >= s.at else None
    if s.kind == "every":
        assert s.every_s is not None
        start = int(now.timestamp() // s.every_s * s.every_s)
        return f"every-{_stamp(datetime.fromtimestamp(start, UTC))}"
    assert s.cron is not None
    prev = croniter(s.cron, now.astimezone(UTC)).get_prev(datetime)
    return f"cron-{_stamp(prev)}"
