"""`jobs.runner.run_task` in-process: the cancel poll survives a failing status read (a
locked SQLite database under load) and still cancels the run at the next poll."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tether.jobs.runner import run_task
from tether.sandbox.detect import detect_sandbox
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call


@pytest.mark.skipif(detect_sandbox() is None, reason="bash needs an OS sandbox")
def test_a_failing_cancel_poll_is_retried_and_the_cancel_still_lands(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    polls = 0

    def cancelled() -> bool:
        nonlocal polls
        polls += 1
        if polls <= 2:
            raise RuntimeError("database is locked")
        return polls >= 4

    provider = ScriptedProvider([call("bash", command="sleep 60"), "done"])
    task = {"id": "t", "prompt": "work", "file": "t.md", "digest": "x"}
    started = time.monotonic()
    outcome = run_task(
        root,
        task,
        "once",
        project="p",
        model=provider,
        cancelled=cancelled,
        poll_s=0.05,
        store=SessionStore(tmp_path / "sessions"),
    )
    assert outcome["stop_reason"] == "cancelled"
    assert polls >= 4
    assert time.monotonic() - started < 50  # not after the 60 s sleep


def test_a_finished_task_is_on_disk_before_it_is_reported(
    tmp_path: Path, fsynced: list[tuple[str, int]]
) -> None:
    """`run_task` fsyncs the session (its `run_end` line last) before it returns the outcome
    that the durable engine then records as done: a power loss cannot leave a task marked
    done whose session lacks its turns."""
    root = tmp_path / "proj"
    root.mkdir()
    store = SessionStore(tmp_path / "sessions")
    task = {"id": "t", "prompt": "work", "file": "t.md", "digest": "x"}
    outcome = run_task(
        root, task, "once", project="p", model=ScriptedProvider(["done"]), store=store
    )
    assert outcome["stop_reason"] == "end_turn"
    session = store.path(str(outcome["session_id"]))
    assert session.read_bytes().rstrip().splitlines()[-1].startswith(b'{"type":"event"')
    assert (str(session), session.stat().st_size) in fsynced  # whole, run_end included
