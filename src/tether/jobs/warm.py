"""What a worker keeps between its task runs: per thread that runs them, one event loop and the
provider chains built on it (`tether.agent.assembly.chains.ChainCache`).

A task run used to build its providers afresh (an SDK client, its HTTP client and TLS context:
most of the CPU a short run costs) and to run on a new event loop (`asyncio.run`). A worker
now runs each of its threads' task runs on that thread's own loop, kept open, so the providers
built by one run (and their connection pools, which belong to the loop they first ran on) serve
the next runs of the same model inputs. Everything else of a run is its own: the agent, its
session, history, tools, MCP servers (stopped at the run's end) and hooks are built per run.

A run ends as under `asyncio.run`: tasks it left behind are cancelled and awaited, so nothing
of one run keeps running into the next. The loop itself is closed by `close` (the worker's
shutdown), or with its thread.

Owns: the per-thread loops and caches. Does not own: the run (`tether.jobs.runner`), the cache
(`tether.agent.assembly.chains`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tether.agent.assembly.chains import ChainCache

T = TypeVar("T")


@dataclass
class _Slot:
    """One thread's loop (an `asyncio.Runner`) and chain cache."""

    runner: asyncio.Runner
    chains: ChainCache
    busy: bool = False


@dataclass
class Warm:
    """The per-thread loops and provider chains of one worker process.

    Attributes:
        chain_limit: chains each thread keeps (`ChainCache.limit`).
    """

    chain_limit: int = 8
    _local: threading.local = field(default_factory=threading.local)
    _slots: list[_Slot] = field(default_factory=list[_Slot])
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def _slot(self) -> _Slot:
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is None:
            slot = _Slot(asyncio.Runner(), ChainCache(self.chain_limit))
            with self._lock:
                if self._closed:
                    raise RuntimeError("tether jobs: the worker's loops are closed")
                self._slots.append(slot)
            self._local.slot = slot
        return slot

    def chains(self) -> ChainCache:
        """This thread's provider chains (built on this thread's loop)."""
        return self._slot().chains

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` to its end on this thread's loop, as `asyncio.run` would (but the loop
        stays open for this thread's next run); tasks it left are cancelled and awaited.

        Raises:
            whatever `coro` raises; RuntimeError when called inside a running loop, or after
            `close`.
        """
        if self._closed:
            coro.close()
            raise RuntimeError("tether jobs: the worker's loops are closed")
        slot = self._slot()
        slot.busy = True
        try:
            return slot.runner.run(coro)
        finally:
            try:
                slot.runner.run(_cancel_leftovers())
            finally:
                slot.busy = False

    def close(self) -> None:
        """Close the loops no run is using (a thread still running one keeps it: its loop is
        collected with the thread). Later `run` calls raise."""
        with self._lock:
            self._closed = True
            slots, self._slots = self._slots, []
        for slot in slots:
            if not slot.busy:
                slot.runner.close()


async def _cancel_leftovers() -> None:
    """Cancel every task of the running loop but this one, and wait for them to end."""
    me = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for t in left:
        t.cancel()
    if left:
        await asyncio.gather(*left, return_exceptions=True)
