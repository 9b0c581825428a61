"""The jobs folder on disk: `<project>/.tether/jobs/`.

    .tether/jobs/ai-jobs             marker: Jobs are enabled (`tether jobs init` / `enable`)
    .tether/jobs/ai-jobs-disabled    marker: Jobs are disabled (wins over `ai-jobs`)
    .tether/jobs/<name>.md           one task per file (`tether.jobs.parse`)
    .tether/jobs/archive/<name>.md   run-once tasks that completed (atomic rename)
    .tether/jobs/runs/<id>/<slot>.json   one record per completed run (written atomically)

The archive and the run records are written by tether, so the trust check
(`tether.settings.trust`) leaves them out; the task files themselves need approval like every
other file under `.tether/`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tether.atomic import write_atomic
from tether.jobs.parse import Rejected, Task, parse_folder
from tether.settings.files import PROJECT_DIR

JOBS_DIR = "jobs"
ENABLED = "ai-jobs"
DISABLED = "ai-jobs-disabled"
ARCHIVE = "archive"
RUNS = "runs"


def jobs_dir(root: Path) -> Path:
    """`<root>/.tether/jobs`."""
    return root / PROJECT_DIR / JOBS_DIR


def is_enabled(root: Path) -> bool:
    """True when the folder has the `ai-jobs` marker and not `ai-jobs-disabled`."""
    d = jobs_dir(root)
    return (d / ENABLED).is_file() and not (d / DISABLED).exists()


def init(root: Path) -> Path:
    """Create the folder and the `ai-jobs` marker (idempotent). Returns the folder."""
    d = jobs_dir(root)
    d.mkdir(parents=True, exist_ok=True)
    (d / ENABLED).touch()
    return d


def set_enabled(root: Path, on: bool) -> None:
    """Enable (remove `ai-jobs-disabled`, add `ai-jobs`) or disable (add `ai-jobs-disabled`).

    Raises:
        FileNotFoundError: the project has no jobs folder (`tether jobs init` first).
    """
    d = jobs_dir(root)
    if not d.is_dir():
        raise FileNotFoundError(f"{d} does not exist; run `tether jobs init` first")
    if on:
        (d / DISABLED).unlink(missing_ok=True)
        (d / ENABLED).touch()
    else:
        (d / DISABLED).touch()


@dataclass(frozen=True, slots=True)
class Scan:
    """The folder's tasks as parsed now."""

    tasks: list[Task]
    rejected: list[Rejected]


def scan(root: Path) -> Scan:
    """Read and parse every `*.md` directly in the jobs folder (not the archive). An
    unreadable or non-UTF-8 file is rejected as `frontmatter`."""
    d = jobs_dir(root)
    files: list[tuple[str, str]] = []
    unreadable: list[Rejected] = []
    if d.is_dir():
        for p in sorted(d.glob("*.md")):
            if not p.is_file():
                continue
            try:
                files.append((p.name, p.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                unreadable.append(Rejected(p.name, "frontmatter", f"cannot read: {exc}"))
    tasks, rejected = parse_folder(files)
    return Scan(tasks, sorted([*rejected, *unreadable], key=lambda r: r.file))


def archive(root: Path, file: str, digest: str) -> bool:
    """Move a completed run-once task `file` to `archive/` with one `rename` (atomic on one
    file system), only when its content still has `digest` (an edited file stays: it is a new
    run). Idempotent: False when there is nothing to move (already archived, or edited)."""
    import hashlib

    d = jobs_dir(root)
    src = d / file
    try:
        text = src.read_bytes()
    except FileNotFoundError:
        return False
    if hashlib.sha256(text).hexdigest() != digest:
        return False
    dest_dir = d / ARCHIVE
    dest_dir.mkdir(exist_ok=True)
    dest = dest_dir / file
    if dest.exists():  # an earlier task of the same name: keep both
        dest = dest_dir / f"{src.stem}.{digest[:12]}.md"
    os.rename(src, dest)
    return True


def record_path(root: Path, task_id: str, slot: str) -> Path:
    """`runs/<task id>/<slot>.json`."""
    return jobs_dir(root) / RUNS / task_id / f"{slot}.json"


def write_record(root: Path, task_id: str, slot: str, record: dict[str, Any]) -> Path:
    """Write one run's record atomically (temp file + rename); returns its path."""
    path = record_path(root, task_id, slot)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
    return path


def read_records(root: Path, task_id: str | None = None) -> list[dict[str, Any]]:
    """Every run record (of one task, or all), oldest slot first; unreadable ones skipped."""
    base = jobs_dir(root) / RUNS
    folders = [base / task_id] if task_id else sorted(p for p in base.glob("*") if p.is_dir())
    out: list[dict[str, Any]] = []
    for folder in folders:
        for p in sorted(folder.glob("*.json")):
            try:
                data: Any = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                out.append(cast("dict[str, Any]", data))
    return out
