"""A test that kills its xdist worker fails; the run goes on to its summary line.

The suite runs on `-n 2 --dist loadgroup`. xdist 3.8's `loadgroup` scheduler (its
`LoadScopeScheduling`) handles a worker that dies mid-test badly: it puts the dead worker's whole
workload back on the queue, the test that killed it included, so the replacement worker runs
that test again (and dies again), and depending on timing the run hangs waiting for a collection
that never completes or stops with `INTERNALERROR … KeyError: <WorkerController gw2>` and exit 3
(pytest-xdist issues #714, #1189, #1327). A native crash in the embedded model (SIGSEGV in
llama.cpp) took the whole suite down that way on a machine whose CPU differed from CI's.

`CrashTolerantGroups` keeps `loadgroup`'s behaviour (groups stay on one worker, tests handed
out one unit at a time in collection order) and changes only what happens when a worker dies:
the test it was running is marked done (xdist reports it failed: "worker 'gw1' crashed while
running …"), the rest of its workload goes back on the queue for the other worker or the
replacement, and the dead worker's collection stays registered, so a replacement that joins
after the last original worker finished is still scheduled (and shut down). The failure's text
names the signal the worker died of (`pytest_handlecrashitem`).

Registered by the root conftest (`pytest_plugins`); `tests/test_kit_crashsafe.py` runs a suite
whose tests kill their own worker with SIGSEGV and checks the summary and exit code.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

_EXIT_WAIT_S = 2.0


class CrashTolerantGroups(LoadGroupScheduling):
    """`--dist loadgroup`, with a dead worker's test failed once, not run again."""

    def remove_node(self, node: WorkerController) -> str | None:
        """The node's unfinished work back on the queue, less the test it died in (returned,
        for xdist to report as failed); None when it finished its work (a normal shutdown)."""
        workload = self.assigned_work.pop(node)
        crashed: str | None = None
        for unit in workload.values():
            crashed = next((nodeid for nodeid, done in unit.items() if not done), None)
            if crashed is not None:
                unit[crashed] = True
                break
        if crashed is None:
            return None
        for scope, unit in workload.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed


    def _reschedule(self, node: WorkerController) -> None:
        """xdist's, for a node whose collection is in. A replacement worker is listed before
        its collection arrives, and with the dead one's collection still registered the
        scheduler counts the collection complete: handing it work then popped a unit off the
        queue and failed on its missing collection (`KeyError: <WorkerController gw2>`, an
        INTERNALERROR that lost the unit; seen in CI). It gets its work when its collection
        comes (`schedule`)."""
        if node not in self.registered_collections:
            return
        super()._reschedule(node)


@pytest.hookimpl(trylast=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadGroupScheduling | None:
    """Our scheduler for `--dist loadgroup`; xdist's own for the other modes."""
    if config.getoption("dist") == "loadgroup":
        return CrashTolerantGroups(config, log)
    return None


def worker_exit(node: WorkerController, wait_s: float = _EXIT_WAIT_S) -> int | None:
    """The dead worker process's exit status as `Popen.returncode` gives it (−11 for SIGSEGV),
    or None when it cannot be read (a gateway that is not a local popen, or still running)."""
    popen = getattr(getattr(node.gateway, "_io", None), "popen", None)
    if popen is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        code = popen.poll()
        if code is not None or time.monotonic() >= deadline:
            return code
        time.sleep(0.02)


def death(code: int | None) -> str:
    """How a worker ended, in words: `SIGSEGV`, `exit 3`, `unknown`."""
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"


def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: Any) -> None:
    """The crashed test's failure names what the worker died of."""
    node = getattr(report, "node", None)
    if isinstance(node, WorkerController):
        report.longrepr = f"{report.longrepr} (the worker died of {death(worker_exit(node))})"
