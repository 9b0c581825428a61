"""Running one reply's tool calls for the loop: safe-mode refusal, loop hygiene, the call
itself (timed, cancellable one by one), the output gate, events, and the results turn.

Owns: `ToolCalls` (parallel calls, results in call order, system notes after all results,
`cancel` of one call, `interrupted` results for calls a run-wide cancel cut short, the host's
`call_started` hook right before a call runs), `INTERRUPTED`, `TOOL_CANCELLED`, and the resume
texts that tell a call that started (`STARTED_LOST`) from one that never ran (`NEVER_RAN`).
Does not own: a call's execution (`tether.tools.run`), the dedup / stale-read rules
(`tether.tools.hygiene`), the output gate (`tether.tools.persist`), persistence (the caller's
`persist` callback).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from tether.agent.events import AgentEvent, ToolResultEvent
from tether.messages import ContentBlock, ToolCallBlock, ToolResultBlock, tool_result
from tether.tools.base import ToolContext
from tether.tools.hygiene import Hygiene
from tether.tools.persist import OutputLimits, gate_tool_result
from tether.tools.policy import refuse_in_safe_mode
from tether.tools.registry import ToolRegistry
from tether.tools.run import ToolRunResult, run_tool, system_note_block

INTERRUPTED = "interrupted: the run was cancelled before this call finished; it may not have run"
"""The result of a call a run-wide cancel cut short (or that never started)."""
STARTED_LOST = (
    "interrupted: this call started but the run stopped before its result was saved; it may "
    "have had effects: check them before repeating it"
)
"""On resume: the result of a call whose `tool_call_started` record was persisted."""
NEVER_RAN = (
    "interrupted: this call never ran (the run stopped before it started); it had no effects"
)
"""On resume: the result of a call without a `tool_call_started` record, in a session that
writes them."""
STARTED_EVENT = "tool_call_started"
"""The session event persisted right before a call runs: `{"tool_call_id": str, "name": str}`."""
TOOL_CANCELLED = "cancelled: the user stopped this call while it ran; it may have partly run"
"""The result of a call ended by `Agent.cancel_tool` (the run goes on)."""


class ToolHost(Protocol):
    """What `ToolCalls` reads of the agent, live (`tether.agent.loop.Agent` satisfies it)."""

    registry: ToolRegistry
    context: ToolContext
    safe_mode: bool
    tool_timeout_s: float

    def emit(self, event: AgentEvent) -> None: ...

    def call_started(self, call: ToolCallBlock) -> None:
        """Persist that `call` is about to run (before it does)."""
        ...


class ToolCalls:
    """The tool calls of one agent.

    Args:
        host: the agent (registry, context, safe mode and timeout are read at each call).
        redact: removes secret values from tool output.
        hygiene: the dedup / block-after / stale-read state.
        output_limits: the output gate's thresholds.
    """

    def __init__(
        self,
        host: ToolHost,
        *,
        redact: Callable[[str], str],
        hygiene: Hygiene,
        output_limits: OutputLimits,
    ) -> None:
        self._host = host
        self._redact = redact
        self._hygiene = hygiene
        self._output_limits = output_limits
        self._running: dict[str, asyncio.Future[ToolRunResult]] = {}
        self._cancel_requested: set[str] = set()
        self._notes: dict[str, tuple[str, ...]] = {}

    def cancel(self, call_id: str) -> bool:
        """End one running call (result `TOOL_CANCELLED`, is_error); False when none runs."""
        task = self._running.get(call_id)
        if task is None or task.done():
            return False
        self._cancel_requested.add(call_id)
        task.cancel()
        return True

    async def run(
        self,
        calls: tuple[ToolCallBlock, ...],
        persist: Callable[[tuple[ContentBlock, ...]], None],
    ) -> None:
        """Run the calls (in parallel when several), then `persist` one results turn's content
        in call order. On cancellation, finished results are kept, the rest become
        `INTERRUPTED`, the content is persisted, and `CancelledError` propagates."""
        if len(calls) == 1:
            try:
                results: list[ToolResultBlock] = [await self._run_one(calls[0])]
            except asyncio.CancelledError:
                persist(self._content([tool_result(calls[0].id, INTERRUPTED, is_error=True)]))
                raise
        else:
            tasks = [asyncio.ensure_future(self._run_one(c)) for c in calls]
            try:
                await asyncio.gather(*tasks)
            except asyncio.CancelledError:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                persist(
                    self._content(
                        [
                            t.result()
                            if t.done() and not t.cancelled() and t.exception() is None
                            else tool_result(c.id, INTERRUPTED, is_error=True)
                            for c, t in zip(calls, tasks, strict=True)
                        ]
                    )
                )
                raise
            results = [t.result() for t in tasks]
        persist(self._content(results))

    def _content(self, results: list[ToolResultBlock]) -> tuple[ContentBlock, ...]:
        # system notes go after ALL results (tool_result blocks first in a user turn)
        notes = dict.fromkeys(n for r in results for n in self._notes.pop(r.tool_call_id, ()))
        return (*results, *(system_note_block(n) for n in notes))

    async def _run_cancellable(self, call: ToolCallBlock) -> ToolRunResult:
        host = self._host
        task = asyncio.ensure_future(
            run_tool(
                host.registry,
                call,
                host.context,
                timeout_s=host.tool_timeout_s,
                redact=self._redact,
            )
        )
        self._running[call.id] = task
        try:
            return await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if call.id not in self._cancel_requested or (me is not None and me.cancelling()):
                raise
            return ToolRunResult(block=tool_result(call.id, TOOL_CANCELLED, is_error=True))
        finally:
            self._running.pop(call.id, None)
            self._cancel_requested.discard(call.id)

    async def _run_one(self, call: ToolCallBlock) -> ToolResultBlock:
        host = self._host
        started = time.perf_counter()
        refused = refuse_in_safe_mode(host.registry, call, host.safe_mode)
        run = ToolRunResult(block=refused) if refused is not None else self._hygiene.check(call)
        if run is None:  # not refused, replayed or blocked: run it
            host.call_started(call)
            run = await self._run_cancellable(call)
            tool = host.registry.get(call.name)
            run = self._hygiene.record(call, run, safe=tool is not None and tool.safe)
        result = await gate_tool_result(run.block, host.context.session_dir, self._output_limits)
        if run.system_notes:
            self._notes[call.id] = run.system_notes
        host.emit(
            ToolResultEvent(
                tool_call_id=call.id,
                name=call.name,
                content=result.text,
                is_error=result.is_error,
                duration_ms=(time.perf_counter() - started) * 1e3,
                display=run.display,
            )
        )
        return result
