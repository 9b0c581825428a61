"""A worker takes its next queued run as soon as its run ends (`tether.jobs.pull`), not at its
queue's next poll: with `worker_concurrency` 1 and `poll_interval` 3s, twelve short queued
runs follow one another with a mean gap (one run's end to the next one's start, from their
sessions) far below the ~2.9 s that polling alone leaves (one run per poll)."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

import pytest
from dbos import DBOSClient

from kit.jobs import LoopModel, job_sessions, popen, project, task_file, tether
from tether.jobs import runner
from tether.jobs.engine import APP_NAME, default_project

pytestmark = pytest.mark.slow

N = 12


def test_a_worker_takes_the_next_run_when_its_run_ends(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(
            tmp_path,
            model,
            jobs_settings={"poll_interval": "3s", "worker_concurrency": 1, "concurrency": 1},
        )
        for i in range(N):
            task_file(root, f"t{i:02d}", f"t{i:02d} go")
        out = tether(tmp_path, root, "dispatch", "--once", "--enqueue-only")
        assert out.returncode == 0, out.stderr
        url = f"sqlite:///{tmp_path / 'home' / 'jobs' / default_project(root)}.sqlite"
        client = DBOSClient(system_database_url=url, application_name=APP_NAME)
        worker = popen(tmp_path, root, "worker", "--id", "w", start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while True:
                rows = client.list_workflows(load_input=False, load_output=False)
                if len(rows) == N and all(r.status == "SUCCESS" for r in rows):
                    break
                assert time.monotonic() < deadline, [r.status for r in rows]
                time.sleep(0.2)
        finally:
            client.destroy()
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=60)
        store = job_sessions(tmp_path, root)
        spans: list[tuple[int, int]] = []  # each run's start and end, by tether's clock
        for r in rows:
            _, task, slot = r.workflow_id.split(":")
            loaded = store.load(runner.session_id(default_project(root), task, slot))
            (end,) = [e for e in loaded.events if e.kind == runner.RUN_END_EVENT]
            spans.append((loaded.header.created_ms, end.ts_ms))
        spans.sort()
        gaps = [b[0] - a[1] for a, b in itertools.pairwise(spans)]
        assert all(g >= 0 for g in gaps), spans  # one at a time
        # polling alone: a run of ~0.1 s, then the wait for the next poll, 3 s after the one
        # that took it (about 2.9 s); taken as the run ends: tens of ms (the bound leaves room
        # for a loaded machine, and a poll of 3 s keeps polling alone far above it even if a
        # loaded machine's runs take a second or more)
        assert sum(gaps) / len(gaps) < 500, gaps
