"""A worker's dequeue of its project's queues, woken when one of its runs ends.

DBOS polls each queue every `polling_interval_sec` and never sooner: a worker whose run just
ended (with `worker_concurrency` 1, its only slot) waits up to a whole `jobs.poll_interval`
before it takes the next queued run. DBOS 3.4 has no public way to poll a queue at once, so a
listening worker does not have DBOS poll its project's queues (`DBOS.listen_queues([])`; DBOS's
own queues are still served) and runs this loop instead: it polls every `poll_s`, and again as
soon as a run of this process ends (`wake`). The claim itself is DBOS's (the same transaction,
the same global, per-worker and rate limits): this loop calls DBOS's internal dequeue and start
functions (`SystemDatabase.start_queued_workflows`, `execute_dequeued_workflow`), as DBOS's own
queue thread does, one poll at a time, so no two polls of this process race on its
`worker_concurrency`.

Owns: the loop thread. Does not own: the queues' settings (`tether.jobs.engine`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)

RETRY_S = 0.002
"""After a wake with no free slot yet (DBOS frees a run's slot just after the workflow's body
returns), the loop looks again after this long, for at most one poll interval."""
CLAIM_S = 10.0
"""How long a claimed run counts as this worker's before its thread started it."""


def supported() -> bool:
    """True when this DBOS has the internals the loop calls (checked before DBOS is told not
    to poll the queues itself: a DBOS without them keeps its own polling)."""
    try:
        from dbos import _core, _dbos, _sys_db, _utils  # pyright: ignore[reportPrivateUsage]
    except ImportError:
        return False
    return (
        hasattr(_core, "execute_dequeued_workflow")
        and hasattr(_core.ActiveWorkflowById, "count_for_queue")
        and hasattr(_dbos, "_get_dbos_instance")
        and hasattr(_utils, "GlobalParams")
        and hasattr(_utils, "generate_uuid")
        and all(
            hasattr(_sys_db.SystemDatabase, f)
            for f in (
                "get_queue",
                "start_queued_workflows",
                "get_workflow_statuses",
                "get_workflow_status",
            )
        )
    )


class Puller:
    """Polls `queues` for this process every `poll_s` seconds and whenever `wake` is called.

    Attributes:
        queues: the queue names (registered with `DBOS.register_queue`).
        poll_s: seconds between two polls when nothing wakes the loop.
    """

    def __init__(self, queues: Sequence[str], poll_s: float) -> None:
        self.queues = list(queues)
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._claimed: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the loop (DBOS launched first)."""
        self._thread = threading.Thread(target=self._loop, name="tether-jobs-pull", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Poll now (a run of this process ended)."""
        self._wake.set()

    def started(self, workflow_id: str) -> None:
        """A workflow this loop claimed has started (DBOS counts it as running now)."""
        with self._lock:
            self._claimed.pop(workflow_id, None)

    def _pending(self, queue: str) -> int:
        """Runs this loop claimed from `queue` that have not started yet (DBOS counts a run
        once its thread started it; a claim not started after `CLAIM_S` is dropped)."""
        now = time.monotonic()
        with self._lock:
            for wid, (_, at) in list(self._claimed.items()):
                if now - at > CLAIM_S:
                    del self._claimed[wid]
            return sum(1 for q, _ in self._claimed.values() if q == queue)

    def stop(self) -> None:
        """Stop the loop and wait for it (before DBOS is destroyed)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        from dbos._dbos import _get_dbos_instance  # pyright: ignore[reportPrivateUsage]

        dbos = _get_dbos_instance()
        queues: dict[str, Any] = {}  # the queues' settings, read again at every full poll
        waiting: list[str] = []  # queues full at a wake: looked at again every RETRY_S
        retry_left = 0.0
        while not self._stop.is_set():
            woken = self._wake.is_set()
            self._wake.clear()
            names = waiting if retry_left > 0 and not woken else self.queues
            full: list[str] = []
            for name in names:
                try:
                    if name not in queues or not waiting or woken:
                        queues[name] = dbos._sys_db.get_queue(name)  # pyright: ignore[reportPrivateUsage]
                    if queues[name] is not None and self._claim(dbos, name, queues[name]):
                        full.append(name)
                except Exception as exc:  # a locked database, a conflict: the next poll retries
                    if not self._stop.is_set():
                        log.warning("tether jobs: polling %s failed: %s", name, exc)
            waiting = full
            if woken and full:  # the run that ended still holds its slot, for a moment
                retry_left = self.poll_s
            if full and retry_left > 0:
                retry_left -= RETRY_S
                self._wake.wait(RETRY_S)
                continue
            retry_left = 0.0
            waiting = []
            self._wake.wait(self.poll_s)

    def _claim(self, dbos: Any, name: str, queue: Any) -> bool:
        """Claim and start what `queue` lets this worker run now; True when its
        `worker_concurrency` is used up (nothing claimed)."""
        from dbos._core import execute_dequeued_workflow
        from dbos._utils import GlobalParams, generate_uuid

        running = int(dbos._active_workflows_set.count_for_queue(name)) + self._pending(name)
        limit = queue._worker_concurrency
        if limit is not None and running >= limit:
            return True
        owner = generate_uuid()
        sysdb = dbos._sys_db
        ids: list[str] = list(
            sysdb.start_queued_workflows(
                queue,
                GlobalParams.executor_id,
                GlobalParams.app_version,
                None,
                running,
                owner_xid=owner,
            )[0]
        )
        if not ids:
            return False
        with self._lock:
            for wid in ids:
                self._claimed[wid] = (name, time.monotonic())
        # every claimed run is started, whatever happens to another (one that cannot be
        # started stays PENDING under this executor, recovered as DBOS recovers any: as its
        # own queue thread does)
        try:
            found: dict[str, Any] = {
                s["workflow_uuid"]: s for s in sysdb.get_workflow_statuses(ids)
            }
        except Exception as exc:
            log.warning("tether jobs: reading the claimed runs failed: %s", exc)
            found = {}
        for wid in ids:
            try:
                status = found.get(wid) or sysdb.get_workflow_status(wid)
                if status is not None:
                    execute_dequeued_workflow(dbos, status, owner)
            except Exception as exc:
                log.error("tether jobs: starting run %s failed: %s", wid, exc)
        return False
