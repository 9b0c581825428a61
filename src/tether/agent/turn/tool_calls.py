"""Running one reply's tool calls for the loop: safe-mode refusal, loop hygiene, the call
itself (timed, cancellable one by one), the output gate, events, and the results turn.

Owns: `ToolCalls` (parallel calls, results in call order; calls that touch the same thing in
the model's order, `tether.tools.exec.order`; a checkpoint before a call that may change files,
`tether.agent.turn.checkpoints`; the `todo` event after a successful `todo` call; system notes after
all results, `cancel` of one call, `interrupted` results (and their `tool_result` events) for
calls a run-wide cancel cut short, calls skipped because the user steered while they waited, the
`tool_call_started` record right before a call runs, then the `tool_start` event), `TOOL_CANCELLED` and `STEERED_SKIP`. It reads the tools,
their context and the event sink from the agent's parts (`tether.agent.turn.state.RunParts`) and
appends the results turn through the run's `RunState`.
Does not own: a call's execution (`tether.tools.exec.run`), the dedup / stale-read rules
(`tether.tools.exec.hygiene`), the output gate (`tether.tools.exec.persist`), persistence
(`RunState.append`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from tether.agent.approval import ApprovalGate
from tether.agent.events import TodoEvent, ToolResultEvent, ToolStartEvent
from tether.agent.sessions import CANCELLED_RUNNING, INTERRUPTED
from tether.agent.turn.gate import CallGate
from tether.agent.turn.state import RunParts, RunState
from tether.messages import ContentBlock, ToolCallBlock, ToolResultBlock, Turn, tool_result
from tether.prompt.gather import SubfolderInstructions
from tether.tools.base import Tool
from tether.tools.builtin.todo import TODO_TOOL, latest_todo_items
from tether.tools.exec.hygiene import Hygiene
from tether.tools.exec.order import Footprint, footprint, waits
from tether.tools.exec.persist import (
    OutputLimits,
    gate_tool_result,
    gates_inline,
    persist_tool_result,
)
from tether.tools.exec.read_state import ReadState
from tether.tools.exec.run import ToolRunResult, run_tool, system_note_block
from tether.tools.preview import edit_diff
from tether.tools.safe_mode import refuse_in_safe_mode
from tether.tracing import NO_TRACING, Tracing

TOOL_CANCELLED = "cancelled: the user stopped this call while it ran; it may have partly run"
"""The result of a call ended by `Agent.cancel_tool` (the run goes on)."""
FINISHED_UNSAVED = (
    "finished, but the run was cancelled twice before its output was saved; it had its "
    "effects: check them before repeating it"
)
"""The result of a call whose tool returned but whose output gate a second cancel cut short."""
STEERED_SKIP = (
    "skipped: the user sent a new message before this call started, so it did not run; read "
    "the message, then make the call again only if it still applies"
)
"""The result of a call still waiting (not started: queued behind the approval prompt, a
hook or an earlier call) when the user steered (`Agent.steer`): the run goes on and the model
reads the message first. The third kind of unrun call, beside `INTERRUPTED` (a cancel) and
`NEVER_RAN` (found on resume)."""


class ToolCalls:
    """The tool calls of one agent.

    Args:
        hygiene: the dedup / block-after / stale-read state.
        output_limits: the output gate's thresholds.
        approval: the approval gate (default: nothing is asked).
        tracing: opens an `execute_tool` span per call and hands its trace context to the
            tool's subprocesses (`TRACEPARENT`); off by default.
        gate: the hooks + approval gate (`tether.agent.turn.gate`; default: `approval` alone).
        notes: adds the instruction file of a subfolder a call first touches, as a system
            note after the results (`tether.prompt.gather.SubfolderInstructions`), or None.
        reads: the session's read-state map (`tether.tools.exec.read_state`), told of every
            call that ran, or None.
    """

    def __init__(
        self,
        *,
        hygiene: Hygiene,
        output_limits: OutputLimits,
        approval: ApprovalGate | None = None,
        gate: CallGate | None = None,
        tracing: Tracing = NO_TRACING,
        notes: SubfolderInstructions | None = None,
        reads: ReadState | None = None,
    ) -> None:
        self.reads = reads
        self.gate = gate or CallGate(approval or ApprovalGate("auto", None))
        self._subfolders = notes
        self._tracing = tracing
        self._hygiene = hygiene
        self._output_limits = output_limits
        self._running: dict[str, asyncio.Future[ToolRunResult]] = {}
        self._cancel_requested: set[str] = set()
        self._notes: dict[str, tuple[str, ...]] = {}
        self._steered: Callable[[], bool] = lambda: False
        """Whether the user steered (`run`'s `steered`, for the reply being run)."""
        self._started: set[str] = set()
        """The calls of the reply being run that started (their tool was called)."""
        self._finished: dict[str, ToolResultBlock] = {}
        """Results of calls whose tool returned before a run-wide cancel reached them."""
        self._reported: set[str] = set()
        """The calls of the reply being run whose `tool_result` event was emitted."""
        self._began: dict[str, float] = {}
        """When each call of the reply being run was taken up (`time.perf_counter`)."""

    @property
    def approval(self) -> ApprovalGate:
        """The approval gate (inside `gate`)."""
        return self.gate.approval

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
        parts: RunParts,
        state: RunState,
        *,
        safe_mode: bool,
        timeout_s: float,
        steered: Callable[[], bool] = lambda: False,
    ) -> None:
        """Run the calls (in parallel when several), then append one results turn in call
        order. On cancellation, finished results are kept, the rest become `INTERRUPTED`, the
        turn is appended, and `CancelledError` propagates.

        Args:
            calls: the reply's tool calls.
            parts: the agent's parts (tools, tool context, events, ids, redaction).
            state: the run (persistence, started calls).
            safe_mode: refuse calls of tools that are not `safe`.
            timeout_s: the default time limit of one call, in seconds.
            steered: whether a steering message is queued: a call that has not started by
                then is skipped (`STEERED_SKIP`), checked before its gate and again right
                before it runs.
        """

        def persist(results: list[ToolResultBlock]) -> None:
            state.append(Turn(id=parts.new_id(), role="user", content=self._content(results)))

        self._steered = steered  # one reply's calls at a time

        def one(call: ToolCallBlock) -> Coroutine[Any, Any, ToolResultBlock]:
            if self._tracing.enabled:
                return self._traced(call, parts, state, safe_mode=safe_mode, timeout_s=timeout_s)
            return self._run_one(call, parts, state, safe_mode=safe_mode, timeout_s=timeout_s)

        def persist_cancelled(results: list[ToolResultBlock]) -> None:
            # the host hears of every call's result, a call the cancel cut short included
            for call, result in zip(calls, results, strict=True):
                if call.id not in self._reported:
                    self._report(parts, call, result)
            persist(results)

        self._started.clear()
        self._finished.clear()
        self._reported.clear()
        self._began.clear()
        if len(calls) == 1:
            try:
                results: list[ToolResultBlock] = [await one(calls[0])]
            except asyncio.CancelledError:
                persist_cancelled([self._unfinished(calls[0])])
                raise
        else:
            # calls that touch the same thing run in the model's order (`tools.exec.order`)
            tasks: list[asyncio.Task[ToolResultBlock]] = []
            for call, before in zip(calls, self._waits(calls, parts), strict=True):
                deps = [tasks[j] for j in before]
                tasks.append(asyncio.ensure_future(_after(deps, call, one)))
            try:
                await asyncio.gather(*tasks)
            except asyncio.CancelledError:
                for t in tasks:  # gather cancelled them once; a second cancel loses outputs
                    if not t.cancelling():
                        t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                persist_cancelled(
                    [
                        t.result()
                        if t.done() and not t.cancelled() and t.exception() is None
                        else self._unfinished(c)
                        for c, t in zip(calls, tasks, strict=True)
                    ]
                )
                raise
            results = [t.result() for t in tasks]
        persist(results)

    def _unfinished(self, call: ToolCallBlock) -> ToolResultBlock:
        """The stored result of a call a run-wide cancel reached: its own result when its tool
        had returned, `CANCELLED_RUNNING` when it was running (killed), else `INTERRUPTED`."""
        if (done := self._finished.get(call.id)) is not None:
            return done
        text = CANCELLED_RUNNING if call.id in self._started else INTERRUPTED
        return tool_result(call.id, text, is_error=True)

    @staticmethod
    def _waits(calls: tuple[ToolCallBlock, ...], parts: RunParts) -> tuple[tuple[int, ...], ...]:
        prints: list[Footprint] = []
        for c in calls:
            tool = parts.registry.get(c.name)
            prints.append(footprint(c.name, c.arguments, safe=tool is not None and tool.safe))
        return waits(prints)

    def _content(self, results: list[ToolResultBlock]) -> tuple[ContentBlock, ...]:
        # system notes go after ALL results (tool_result blocks first in a user turn)
        notes = dict.fromkeys(n for r in results for n in self._notes.pop(r.tool_call_id, ()))
        return (*results, *(system_note_block(n) for n in notes))

    async def _traced(
        self,
        call: ToolCallBlock,
        parts: RunParts,
        state: RunState,
        *,
        safe_mode: bool,
        timeout_s: float,
    ) -> ToolResultBlock:
        # -- tracing: the call's span; a subagent run inside it is its child --
        with self._tracing.tool_call(call) as span:
            result = await self._run_one(
                call, parts, state, safe_mode=safe_mode, timeout_s=timeout_s
            )
            span.tool_done(result)
            return result

    async def _run_cancellable(
        self, call: ToolCallBlock, parts: RunParts, timeout_s: float
    ) -> ToolRunResult:
        tool = parts.registry.get(call.name)
        ctx = parts.tool_context
        if tool is not None and tool.reads_context:  # else the call never sees its context
            if ctx.states is not None or tool.settings is not None:
                # one copy: `run_tool` would copy it again to name the tool
                ctx = replace(ctx, call_id=call.id, tool_name=tool.name)
            else:
                ctx = replace(ctx, call_id=call.id)
            ctx = self._tracing.tool_context(ctx)  # + TRACEPARENT when tracing
        running = run_tool(parts.registry, call, ctx, timeout_s=timeout_s, redact=parts.redact)
        if runs_through(tool, call):  # it cannot be suspended, so nothing can cancel it midway
            return await running
        task = asyncio.ensure_future(running)
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

    async def _run_one(
        self,
        call: ToolCallBlock,
        parts: RunParts,
        state: RunState,
        *,
        safe_mode: bool,
        timeout_s: float,
    ) -> ToolResultBlock:
        """One call in three steps: `_prepare` (refused, replayed, blocked or denied?),
        `_execute` (run it, when not), `_finalize` (gate the output, keep and report the
        result)."""
        started = self._began[call.id] = time.perf_counter()
        call, run = await self._prepare(call, parts, safe_mode=safe_mode, plan=state.plan_mode)
        me = asyncio.current_task()
        cancels = me.cancelling() if me is not None else 0
        if run is None:  # not refused, replayed, blocked or denied: run it
            run = await self._execute(call, parts, state, timeout_s)
        return await self._finalize(call, run, parts, me, cancels, started)

    async def _prepare(
        self, call: ToolCallBlock, parts: RunParts, *, safe_mode: bool, plan: bool = False
    ) -> tuple[ToolCallBlock, ToolRunResult | None]:
        """The call as the hooks left it, and its result when it is not to run: refused in
        safe mode, skipped after steering, replayed or blocked by the loop-breaker, denied by
        a hook or the approval; None for a call to run."""
        refused = refuse_in_safe_mode(parts.registry, call, safe_mode, plan=plan)
        if refused is None and self._steered():  # the user steered while it waited
            refused = tool_result(call.id, STEERED_SKIP, is_error=True)
        run = ToolRunResult(block=refused) if refused is not None else self._hygiene.check(call)
        if run is None and call.invalid is None:  # hooks, then approval: one gate
            tool = parts.registry.get(call.name)
            ctx = parts.tool_context
            call, denied = await self.gate.before(
                call,
                safe=tool is None or tool.safe,
                diff=lambda c: edit_diff(ctx, c.name, c.arguments),
            )
            run = ToolRunResult(block=denied) if denied is not None else None
            if run is None and self._steered():  # steered during the approval prompt
                run = ToolRunResult(block=tool_result(call.id, STEERED_SKIP, is_error=True))
        return call, run

    async def _execute(
        self, call: ToolCallBlock, parts: RunParts, state: RunState, timeout_s: float
    ) -> ToolRunResult:
        """Run a call: the user turn's snapshot first when the tool may change files, the
        start recorded and announced, then the tool; the loop-breaker and the sub-folders'
        instruction notes see its result."""
        tool = parts.registry.get(call.name)
        if parts.checkpoints is not None and (tool is None or not tool.safe):
            await parts.checkpoints.before_change(state.session, state.history)
        state.session.record_started(call)
        self._started.add(call.id)
        parts.emit(ToolStartEvent(tool_call_id=call.id, name=call.name))
        run = await self._run_cancellable(call, parts, timeout_s)
        tool = parts.registry.get(call.name)
        run = self._hygiene.record(call, run, safe=tool is not None and tool.safe)
        if self._subfolders is not None and not run.block.is_error:
            found = self._subfolders.notes_for(call.name, call.arguments, state.history)
            if found:
                run = replace(run, system_notes=(*run.system_notes, *found))
        return run

    async def _finalize(
        self,
        call: ToolCallBlock,
        run: ToolRunResult,
        parts: RunParts,
        me: asyncio.Task[Any] | None,
        cancels: int,
        started: float,
    ) -> ToolResultBlock:
        """Keep a finished call's result: through the output gate, into the read state and
        the notes, past the after-hooks, reported (`me` is the call's task, `cancels` its
        cancel count before the call ran: a cancel that came meanwhile stops the run here,
        the result kept)."""
        # The call has finished: a cancel from here on must not lose its result. The output
        # gate (it may write the output to a file) runs inline for an ordinary output (no
        # await: nothing can cancel it midway, and no task or shield per call), else in a
        # worker thread, shielded; then the result is kept.
        session_dir = parts.tool_context.session_dir
        if gates_inline(run.block, run.raw):
            result = persist_tool_result(run.block, session_dir, self._output_limits, run.raw)
        else:
            result = await self._gate_shielded(call, run, session_dir)
        self._finished[call.id] = result
        if self.reads is not None and call.id in self._started:
            self.reads.observe(call, result)
        if run.system_notes:
            self._notes[call.id] = run.system_notes
        try:
            if me is not None and me.cancelling() > cancels:
                # the cancel reached a tool that had finished (it returned its result): stop
                raise asyncio.CancelledError
            await self.gate.after(call, result)  # a cancel here keeps the result
        finally:
            if call.name == TODO_TOOL and not result.is_error:
                items = call.arguments.get("items")
                if isinstance(items, list):
                    parts.emit(TodoEvent(items=latest_todo_items(cast(list[Any], items))))
            self._report(parts, call, result, started=started, display=run.display)
        return result

    def _report(
        self,
        parts: RunParts,
        call: ToolCallBlock,
        result: ToolResultBlock,
        *,
        started: float | None = None,
        display: Any = None,
    ) -> None:
        """Emit the call's `tool_result` event (once per call)."""
        self._reported.add(call.id)
        began = started if started is not None else self._began.get(call.id)
        parts.emit(
            ToolResultEvent(
                tool_call_id=call.id,
                name=call.name,
                content=result.text,
                is_error=result.is_error,
                duration_ms=0.0 if began is None else (time.perf_counter() - began) * 1e3,
                display=display,
            )
        )

    async def _gate_shielded(
        self, call: ToolCallBlock, run: ToolRunResult, session_dir: Path | None
    ) -> ToolResultBlock:
        """A large output's gate in a worker thread, shielded: a cancel meanwhile waits for it
        (the result is kept in `_finished`) and propagates; a second cancel gives up the save."""
        gating = asyncio.ensure_future(
            gate_tool_result(run.block, session_dir, self._output_limits, run.raw)
        )
        try:
            return await asyncio.shield(gating)
        except asyncio.CancelledError:
            try:
                self._finished[call.id] = await gating
            except asyncio.CancelledError:  # cancelled again: the output was not saved
                gating.cancel()
                self._finished[call.id] = tool_result(call.id, FINISHED_UNSAVED, is_error=True)
            raise


def runs_through(tool: Tool | None, call: ToolCallBlock) -> bool:
    """Whether `run_tool` runs `call` to its end without suspending: an inline sync tool in
    this process (called on the event loop, untimed), or a call it answers at once (an unknown
    tool, unusable arguments). Such a call is awaited directly, with no task per call: no other
    code runs while it runs, so `ToolCalls.cancel` could never reach it."""
    if tool is None or call.invalid is not None:
        return True
    return tool.inline and not tool.is_async and tool.source is None


async def _after(
    deps: Sequence[asyncio.Future[ToolResultBlock]],
    call: ToolCallBlock,
    one: Callable[[ToolCallBlock], Coroutine[Any, Any, ToolResultBlock]],
) -> ToolResultBlock:
    """Run `call` once the calls it conflicts with are done (whatever their outcome)."""
    if deps:
        await asyncio.wait(deps)
    return await one(call)
