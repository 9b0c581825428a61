"""`tether replay SESSION`: re-run a stored session offline against providers' wire contracts.

Owns: resolving SESSION (a stored session id, a session file, or another agent's transcript
file), the scratch copy of the session's folder for re-executed tools, the output (one JSON
line per finding on stdout, one summary line per target on stderr) and the exit code.
Does not own: the replay (`tether.replay`), reading sessions and transcripts
(`tether.session`).

Exit codes: 0 nothing found (no violation, repair or difference) · 4 a target would reject a
request (a contract violation: the 400 a switch would meet) · 1 repairs or differences only,
or a usage mistake (an unknown session, a folder that no longer exists).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tether.cli.output import EXIT_OK, EXIT_USAGE
from tether.errors import SessionError
from tether.messages import Target, Turn

if TYPE_CHECKING:  # imported on use: `tether --help` stays light
    from tether.replay import ReplayReport

EXIT_VIOLATION = 4
"""A request a target would reject (the provider-error exit code)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Stored:
    """A session to replay: its turns, the folder it ran in (None for a transcript), a label."""

    turns: tuple[Turn, ...]
    cwd: str | None
    label: str


def _load(session: str) -> Stored:
    from tether.session import SessionStore
    from tether.session.layout import SESSION_SUFFIX
    from tether.session.transcripts import import_transcript

    path = Path(session)
    if path.is_file():
        if path.name.endswith(SESSION_SUFFIX):
            try:
                loaded = SessionStore(path.parent.resolve(), migrate=False).load(
                    path.name[: -len(SESSION_SUFFIX)]
                )
            except SessionError:
                pass  # not a tether session file: another agent's JSONL transcript
            else:
                return Stored(turns=loaded.turns, cwd=loaded.header.cwd, label=str(path))
        found = import_transcript(path)
        return Stored(turns=found.turns, cwd=None, label=f"{path} ({found.format})")
    if os.sep in session or session.endswith((SESSION_SUFFIX, ".json", ".traj")):
        raise SessionError(f"no file {session}")  # a path, not a session id
    loaded = SessionStore().load(session)
    return Stored(turns=loaded.turns, cwd=loaded.header.cwd, label=session)


def replay_command(
    session: str,
    *,
    targets: Sequence[str],
    tools: Literal["run", "stored"] | None,
    from_turn: int,
    system: str | None,
    err: Callable[[str], None],
) -> int:
    """Run `tether replay`; returns the exit code (see the module docstring)."""
    from tether.messages import TARGETS
    from tether.replay import replay_stored

    chosen: list[Target] = []
    by_name: dict[str, Target] = {t: t for t in TARGETS}
    for name in targets or TARGETS:
        match = by_name.get(name)
        if match is None:
            err(f"unknown --target {name!r}: one of {', '.join(TARGETS)}")
            return EXIT_USAGE
        chosen.append(match)
    try:
        stored = _load(session)
    except SessionError as exc:
        err(str(exc))
        return EXIT_USAGE
    mode = tools or ("run" if stored.cwd is not None else "stored")
    if mode == "run":
        if stored.cwd is None:
            err(
                f"{stored.label} is a transcript: no folder to re-run its tools in; use --tools stored"
            )
            return EXIT_USAGE
        if not Path(stored.cwd).is_dir():
            err(f"the session's folder {stored.cwd} no longer exists; use --tools stored")
            return EXIT_USAGE
    reports: list[ReplayReport] = []
    for target in chosen:
        if mode == "stored":
            report = replay_stored(stored.turns, target, system=system, from_turn=from_turn)
        else:
            assert stored.cwd is not None
            report = _rerun(stored, stored.cwd, target, from_turn, system)
        reports.append(report)
        for finding in report.findings:
            print(json.dumps(finding.to_json()), flush=True)
        err(f"{stored.label} → {report.summary()}")
    if any(r.count("violation") for r in reports):
        return EXIT_VIOLATION
    return EXIT_USAGE if any(r.findings for r in reports) else EXIT_OK


def _rerun(
    stored: Stored, cwd: str, target: Target, from_turn: int, system: str | None
) -> ReplayReport:
    """One re-run in a fresh scratch copy of `cwd` (removed afterwards)."""
    from tether.replay import replay_run

    base = Path(tempfile.mkdtemp(prefix="tether-replay-"))
    try:
        scratch = base / Path(cwd).name
        shutil.copytree(cwd, scratch, symlinks=True)
        return asyncio.run(
            replay_run(
                stored.turns,
                target,
                scratch=scratch.resolve(),
                cwd=cwd,
                from_turn=from_turn,
                system=system,
            )
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
