"""Context management inside the tool loop: ask the monitor before every request, compact when
told, learn from context_overflow errors, restore recently read files, shape the view (pruned
old tool results, tail), compact after an idle pause that outlived the prompt cache.

Owns: `AutoCompaction`, a turn policy (`tether.agent.turn.policy`: `before_request`,
`after_reply`) that the request path also calls (`on_overflow`, `shape`) with the run's
`RunState`, restoring recently read
files and listing running background shells after a summary; `RunawayGuard`, what stays of it when
automatic compaction is off (the same monitor and runaway guard, 0.9 of the window in total or
0.4 in one turn, refusing at once since nothing can compact); and the compaction ladder:
LLM summary (through the run's request path: retries, Retry-After, fallback; its usage counted
in the run's) → truncation marker (turns removed without a summary, still recallable) → a
`context_overflow` `RunError`. A no-progress signal from the monitor (compactions that leave the
view above the trigger) stops the run with a clear `context_overflow` error; a runaway signal
first stubs the largest tool results anywhere in the view, the running tool loop's included
(`tether.compaction.prune.plan_rescue`, wire view only, recallable), and stops the run with stop
reason `context_runaway` only when nothing is left to stub.
Does not own: the pressure arithmetic (`tether.compaction.monitor`), the summary call
(`tether.compaction.summarize`), the loop itself (`tether.agent.turn.loop`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tether.agent.events import CompactionEndEvent, CompactionStartEvent, ErrorEvent
from tether.agent.turn.policy import TurnPolicy
from tether.agent.turn.state import RunParts, RunState, SentView
from tether.compaction.idle import IdlePolicy, IdleWatch, cache_lifetime_s
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import effective_window
from tether.compaction.prune import PrunePolicy, Pruner, apply_rescue, plan_rescue
from tether.compaction.reads import ReadDedup, StaleReads
from tether.compaction.recall import RECALL_TOOL, recall_tool
from tether.compaction.restore import READ_TOOL, recent_read_paths, restore_pair
from tether.compaction.rounds import Scope, keep_user_budget, select
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.summarize import (
    CompactionResult,
    SummaryRequest,
    compact_conversation,
    compact_with,
    summary_cap,
    truncation_marker,
)
from tether.compaction.tail import (
    Compactor,
    TailPolicy,
    WireCompactor,
    compact_context,
    shorten_old_results,
)
from tether.errors import CompactInvalidInputError, CompactionFailedError, RunError
from tether.messages import RunStopReason, ToolCallBlock, ToolResultBlock, Turn, Usage
from tether.providers.base import Provider
from tether.tokens import estimate_tokens, text_tokens
from tether.tools.builtin.shells import SHELL_OUTPUT_TOOL
from tether.tools.exec.read_state import ReadState
from tether.tools.exec.run import run_tool_call
from tether.wire.markers import LiveTurns, is_marker

MAX_COMPACTIONS_PER_REQUEST = 3
"""Compactions before one request at most (the monitor's no-progress guard normally stops
earlier); then the request is sent and a context_overflow answer is handled once more."""


class RunawayGuard(TurnPolicy):
    """The context guard of an agent without automatic compaction (`--no-compact`,
    `Agent(compaction=False)`): the monitor measures every request as with compaction on (the
    TUI's gauge reads it), and a runaway (`CompactionPolicy.runaway_total` of the effective
    window in total, or `runaway_growth` of it in one turn) stops the run with stop reason
    `context_runaway` and an `error` event, since nothing can compact it.

    Args:
        monitor: a monitor built with `compacts=False`.
    """

    def __init__(self, monitor: ContextMonitor) -> None:
        self.monitor = monitor

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """None to go on, or `context_runaway` (after an `error` event) to end the run."""
        decision = self.monitor.check(parts.view(state.history))
        if decision.runaway:
            parts.emit(ErrorEvent(kind="context_overflow", message=decision.runaway))
            return "context_runaway"
        return None

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """The turn policy's hook: the monitor observes the reply's usage (`after_request`)."""
        if state.sent is not None:
            self.after_request(turn, state.sent)
        return None

    def after_request(self, turn: Turn, sent: SentView) -> None:
        """Tell the monitor a request was answered, with the usage it reported."""
        self.monitor.observe(
            view_len=sent.turns,
            usage=turn.usage,
            assistant_turn_id=turn.id,
            generation=sent.generation,
        )


class AutoCompaction(TurnPolicy):
    """Automatic compaction for one agent (`Agent(compaction=AutoCompaction(monitor))`).

    Args:
        monitor: the pressure monitor (its limits give the window, in tokens).
        summarizer: the provider writing summaries (default: the agent's own).
        compactor: a user function replacing the LLM summarizer (see `Compactor`).
        keep_turns: live turns kept verbatim after the summary (rounded to whole rounds).
        tail: the wire-only tail strategy's settings, or None to leave results whole.
        wire_compactor: a user function shaping the wire view in the tail strategy's place
            (`tether.compaction.tail.WireCompactor`), told `tail`'s knobs (default
            `TailPolicy()`) and the view's total bytes; its output is repaired before it is sent.
        restore_budget_tokens: tokens of recently read files restored after a compaction
            (default: a tenth of the window); 0 disables restoring.
        max_restore_files: files restored at most.
        timeout_s: wall-clock limit of one summary call (its retries included), in seconds.
        summary_max_tokens: the summary's output cap (default: min(4096, window / 4, max output)).
        offer_recall: add the `recall` tool (`tether.compaction.recall`) to the agent's tools
            once the history holds a marker (after the first compaction, or at once for a
            resumed session that has one) or a tool result was pruned, so nothing a compaction
            elided is out of reach.
            Not offered before: it would cost tokens on every request for nothing.
        prune: progressive pruning of old tool results before the summary pass
            (`tether.compaction.prune`, wire view only), or None to leave them.
        idle: cache-aware idle compaction (`tether.compaction.idle`), or None (off).
        clock: the clock idle compaction reads, in seconds (injected by tests).
    """

    def __init__(
        self,
        monitor: ContextMonitor,
        *,
        summarizer: Provider | None = None,
        compactor: Compactor | None = None,
        keep_turns: int = 4,
        tail: TailPolicy | None = None,
        wire_compactor: WireCompactor | None = None,
        restore_budget_tokens: int | None = None,
        max_restore_files: int = 5,
        timeout_s: float = 120.0,
        summary_max_tokens: int | None = None,
        offer_recall: bool = True,
        prune: PrunePolicy | None = None,
        idle: IdlePolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pruner = Pruner(prune) if prune is not None else None
        self._rescued: frozenset[str] = frozenset()  # results stubbed by `_rescue`
        self.idle = IdleWatch(idle) if idle is not None else None
        self.clock = clock
        self.offer_recall = offer_recall
        self.monitor = monitor
        self.summarizer = summarizer
        self.compactor = compactor
        self.keep_turns = keep_turns
        self.tail = tail
        self.wire_compactor = wire_compactor
        self.restore_budget_tokens = restore_budget_tokens
        self.max_restore_files = max_restore_files
        self.timeout_s = timeout_s
        self.summary_max_tokens = summary_max_tokens
        self.compactions = 0
        self._recall_scanned = 0  # history turns already checked for a marker
        self._live = LiveTurns()  # live_turns(history), kept incrementally (O(new turns))
        self.reads: ReadState | None = None
        self._stale: StaleReads | None = None
        self._dedup: ReadDedup | None = None
        self._shaped: tuple[tuple[Turn, ...], tuple[Turn, ...]] | None = None
        """The last `shape` (view in, view out): the pressure check and the request that
        follows it shape the same view once (cleared at each request boundary and whenever
        what shapes it changes)."""

    def use_reads(self, reads: ReadState, *, elide_stale: bool = True) -> None:
        """Shape `read` results with the session's read-state map: stale reads elided
        (`context.elide_stale_reads`; `tether.compaction.reads.StaleReads`), unchanged
        re-reads pointed at the earlier output (`read.dedup`: when the map is enabled), and
        restoration picks its files from the map."""
        self.reads = reads
        self._shaped = None
        self._stale = StaleReads(reads.rules) if elide_stale else None
        self._dedup = ReadDedup(reads.rules, lambda: reads.unchanged) if reads.enabled else None

    # -- the loop's hooks -------------------------------------------------------------------

    def shape(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """The view as sent: pruned results stubbed, the tail strategy, unchanged re-reads
        pointed at the earlier output, stale reads elided, each when enabled (pure,
        byte-stable). The dedup follows the passes that remove or shorten results: it checks
        that the earlier output is really in what is sent. The same view shaped again before
        the next request boundary gives the same result without the passes (the check and the
        request share it)."""
        memo = self._shaped
        if memo is not None and memo[0] is view:
            return memo[1]
        shaped = self._shape(view)
        self._shaped = (view, shaped)
        return shaped

    def _shape(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        if self.pruner is not None:
            view = self.pruner.shape(view)
        if self._rescued:
            view = apply_rescue(view, self._rescued)
        if self.wire_compactor is not None:  # in the tail strategy's place
            ctx = compact_context(view, self.tail or TailPolicy())
            view = tuple(self.wire_compactor(view, ctx))
        elif self.tail is not None:
            view = shorten_old_results(view, self.tail)
        if self._dedup is not None:
            view = self._dedup.shape(view)
        return view if self._stale is None else self._stale.shape(view)

    async def _prune_or_idle(self, parts: RunParts, state: RunState) -> None:
        """Before the pressure check: prune old tool results in a chunk when the view nears
        the trigger; after an idle pause that outlived the provider's prompt cache, prune all
        that may be pruned and compact when the view is still large (the next request re-sends
        it uncached anyway)."""
        view = parts.view(state.history)
        p = self.monitor.peek(self.shape(view))
        now = self.clock()
        idle = self.idle is not None and self.idle.due(
            now,
            lifetime_s=cache_lifetime_s(parts.provider.name, parts.provider.target),
            tokens=p.tokens,
        )
        if self.pruner is not None and self.pruner.step(
            view, tokens=p.tokens, effective_window=p.effective_window, everything=idle
        ):
            self._shaped = None  # more results are stubbed now
            shaped = self.shape(view)
            self.monitor.reshaped(shaped)
            self._ensure_recall(parts, state)
            p = self.monitor.peek(shaped)
        if idle and self.idle is not None:
            self.idle.replied(now)  # once per pause, whatever comes of it
            if p.tokens > self.idle.policy.min_tokens:
                await self.compact(parts, state, reason="idle")

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """Check pressure before a request; compact when the monitor says so.

        Returns:
            None to go on, or a stop reason (`context_runaway`) to end the run.

        Raises:
            RunError: `context_overflow` when compactions make no progress or cannot be done.
        """
        self._shaped = None  # tools ran since the last request: the read map may have moved
        self._ensure_recall(parts, state)
        if self.pruner is not None or self.idle is not None:
            await self._prune_or_idle(parts, state)
        for compacted in range(MAX_COMPACTIONS_PER_REQUEST + 1):
            decision = self.monitor.check(self.shape(parts.view(state.history)))
            if decision.no_progress:
                message = (
                    "context window exhausted: compactions in a row left the context above the "
                    "trigger; the task's recent turns alone do not fit this model's window"
                )
                parts.emit(ErrorEvent(kind="context_overflow", message=message))
                raise RunError("context_overflow", message)
            if decision.runaway:
                if self._rescue(parts, state):
                    continue  # the newest results are stubs now: check the smaller view
                parts.emit(ErrorEvent(kind="context_overflow", message=decision.runaway))
                return "context_runaway"
            if not decision.compact or compacted >= MAX_COMPACTIONS_PER_REQUEST:
                break
            if await self.compact(parts, state, reason="threshold") is None:
                break  # nothing left to summarize: send as is (an overflow is handled later)
        return None

    def _rescue(self, parts: RunParts, state: RunState) -> bool:
        """The runaway guard is about to stop the run although compaction ran (or could not):
        stub the largest tool results anywhere in the view, the running tool loop's included,
        until the view is back at half the effective window (`plan_rescue`; wire view only,
        each stub names its turn for `recall`). True when any result was stubbed (the caller
        checks again); False when nothing is left to stub (the guard stops the run)."""
        shaped = self.shape(parts.view(state.history))
        p = self.monitor.peek(shaped)
        ids = plan_rescue(shaped, tokens=p.tokens, goal=p.effective_window // 2)
        if not ids:
            return False
        self._rescued |= ids
        self._shaped = None
        self.monitor.reshaped(self.shape(parts.view(state.history)))
        self._ensure_recall(parts, state)  # a stub points at it
        return True

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """The turn policy's hook: the monitor observes the reply's usage (`after_request`)."""
        if state.sent is not None:
            self.after_request(turn, state.sent)
        return None

    def after_request(self, turn: Turn, sent: SentView) -> None:
        """Tell the monitor a request was answered, with the usage it reported (None when the
        provider reported none: the pressure stays an estimate); `sent` is the view it
        measured (the one the answering provider was sent)."""
        if self.idle is not None:
            self.idle.replied(self.clock())
        self.monitor.observe(
            view_len=sent.turns,
            usage=turn.usage,
            assistant_turn_id=turn.id,
            generation=sent.generation,
        )

    async def on_overflow(self, message: str, parts: RunParts, state: RunState) -> bool:
        """The provider said the request was too long: learn the window, compact. Returns True
        when a marker was written (the caller retries the request once)."""
        self.monitor.overflow(message)
        return await self.compact(parts, state, reason="overflow") is not None

    # -- compaction -------------------------------------------------------------------------

    async def compact(
        self, parts: RunParts, state: RunState, *, reason: str, focus: str | None = None
    ) -> CompactionResult | None:
        """Run the ladder and append the marker (and the restored-files pair) to the history,
        inside a `compaction` span (`parts.tracing`).

        Returns:
            The result, or None when there was nothing to compact.

        Raises:
            RunError: `context_overflow` when the summary failed and no truncation is possible.
        """
        self._shaped = None
        with parts.tracing.compaction(reason) as span:
            result = await self._compact(parts, state, reason=reason, focus=focus)
            span.compaction_done(result)
            return result

    async def _compact(
        self, parts: RunParts, state: RunState, *, reason: str, focus: str | None
    ) -> CompactionResult | None:
        await parts.before_compaction(reason)  # the `before_compaction` hooks
        # live turns and the new marker's generation, kept in O(new turns)
        snap = CompactionSnapshot.tracked(tuple(state.history), self._live)
        before = estimate_tokens(self.shape(parts.view(state.history)))
        parts.emit(CompactionStartEvent(reason=reason, tokens_before=before))
        scope = self._scope(snap)
        if scope is None:
            parts.emit(_nothing_written(before, "nothing to summarize"))
            return None
        marker_id = parts.new_id()
        try:
            result = await self._summarize(parts, snap, scope, focus, marker_id)
        except CompactionFailedError as exc:
            try:
                result = truncation_marker(
                    snap, scope, str(exc), marker_id=marker_id, keep_user_tokens=self._keep_user()
                )
            except CompactInvalidInputError as inner:  # pragma: no cover - scope was checked
                raise RunError("context_overflow", f"{exc}; {inner}") from exc
        if reason == "manual" and result.tokens_after >= result.tokens_before:
            return self._refuse_growth(parts, state, result, before)  # as `tether compact`
        state.append(result.marker_turn)
        state.add_usage(result.usage)
        self._ensure_recall(parts, state)
        restored = await self._restore(parts, state, snap, scope)
        after_view = self.shape(parts.view(state.history))
        self.monitor.compacted(after_view)
        self.compactions += 1
        parts.emit(
            CompactionEndEvent(
                tokens_before=before,
                tokens_after=estimate_tokens(after_view),
                turns_replaced=len(result.replaced_ids),
                marker_id=result.marker_turn.id,
                generation=result.generation,
                truncated=result.truncated,
                restored_files=restored,
                usage=result.usage,
            )
        )
        return result

    def _refuse_growth(
        self, parts: RunParts, state: RunState, result: CompactionResult, before: int
    ) -> None:
        """A manual compaction whose summary is not shorter than what it replaces writes
        nothing (`compaction_end` says why); the summary call's tokens still count."""
        state.add_usage(result.usage)
        why = (
            f"the summary ({result.tokens_after} tokens with what stays) is not shorter than "
            f"the conversation ({result.tokens_before}); nothing written"
        )
        parts.emit(_nothing_written(before, why, result.usage))

    def _ensure_recall(self, parts: RunParts, state: RunState) -> None:
        """Offer `recall` once the history holds a marker (each turn is looked at once)."""
        if not self.offer_recall or RECALL_TOOL in parts.registry:
            return
        history = state.history
        seen, self._recall_scanned = self._recall_scanned, len(history)
        if seen > len(history):  # the history was replaced: look at all of it
            seen = 0
        pruned = bool(self._rescued) or (self.pruner is not None and bool(self.pruner.ids))
        if pruned or any(is_marker(t) for t in history[seen:]):
            parts.registry.add(recall_tool(lambda: history))

    def _keep_user(self) -> int:
        """The verbatim budget of the user's later messages for the current model: a quarter
        of its effective window, 8,000 tokens at most (`keep_user_budget`)."""
        return keep_user_budget(effective_window(self.monitor.limits, self.monitor.policy))

    def _scope(self, snap: CompactionSnapshot) -> Scope | None:
        """The first scope that replaces at least one turn besides earlier markers: keep
        `keep_turns` live turns, then half as many, ..., then none (`full`)."""
        keeps: list[int] = []
        k = self.keep_turns
        while k > 0:
            keeps.append(k)
            k //= 2
        for scope in (*(Scope.tail(k) for k in keeps), Scope.full()):
            try:
                selection = select(snap, scope, keep_user_tokens=self._keep_user())
            except CompactInvalidInputError:
                continue
            if any(not is_marker(t) for t in selection.turns):
                return scope
        return None

    async def _summarize(
        self,
        parts: RunParts,
        snap: CompactionSnapshot,
        scope: Scope,
        focus: str | None,
        marker_id: str,
    ) -> CompactionResult:
        keep = self._keep_user()
        if self.compactor is not None:
            return await compact_with(
                self.compactor, snap, scope, focus, marker_id=marker_id, keep_user_tokens=keep
            )
        limits = self.monitor.limits
        cap = self.summary_max_tokens or summary_cap(limits)
        request = SummaryRequest(
            snapshot=snap,
            scope=scope,
            instructions=focus,
            timeout_s=self.timeout_s,
            window_tokens=limits.context_window,
            summary_max_tokens=cap,
            marker_id=marker_id,
            keep_user_tokens=keep,
        )
        return await compact_conversation(
            self.summarizer or parts.provider, request, call=parts.summary_call(self.summarizer)
        )

    async def _restore(
        self, parts: RunParts, state: RunState, snap: CompactionSnapshot, scope: Scope
    ) -> tuple[str, ...]:
        """Re-read recently read files (within the budget) and list the background shells
        still running: one synthetic call+results pair (the todo list is restated by its own
        policy, `tether.agent.turn.todo_policy`)."""
        budget = self.restore_budget_tokens
        if budget is None:
            budget = self.monitor.limits.context_window // 10
        kept = select(snap, scope, keep_user_tokens=self._keep_user()).kept
        calls: list[ToolCallBlock] = []
        results: list[ToolResultBlock] = []
        if budget > 0 and READ_TOOL in parts.registry.names():
            paths = recent_read_paths(snap.history, kept, max_files=self.max_restore_files)
            if self.reads is not None:  # the read-state map's, when it recorded any
                mapped = self.reads.recent_paths(exclude=kept, max_files=self.max_restore_files)
                paths = mapped or paths
            spent = 0
            for path in paths:
                call = ToolCallBlock(
                    id=f"restore_{parts.new_id()}", name=READ_TOOL, arguments={"path": path}
                )
                result = await run_tool_call(
                    parts.registry, call, parts.tool_context, timeout_s=30.0, redact=parts.redact
                )
                cost = text_tokens(result.text) + 8
                if result.is_error or spent + cost > budget:
                    continue
                if self.reads is not None:
                    self.reads.observe(call, result)
                spent += cost
                calls.append(call)
                results.append(result)
        shells = parts.tool_context.shells
        if shells is not None and shells.running() and SHELL_OUTPUT_TOOL in parts.registry:
            # the background shells still running: listed (nothing of their output is read)
            call = ToolCallBlock(id=f"restore_{parts.new_id()}", name=SHELL_OUTPUT_TOOL)
            result = await run_tool_call(
                parts.registry, call, parts.tool_context, timeout_s=30.0, redact=parts.redact
            )
            calls.append(call)
            results.append(result)
        pair = restore_pair(calls, results, assistant_id=parts.new_id(), user_id=parts.new_id())
        if pair is None:
            return ()
        for t in pair:
            state.append(t)
        return tuple(str(c.arguments["path"]) for c in calls if c.name == READ_TOOL)


def _nothing_written(before: int, why: str, usage: Usage | None = None) -> CompactionEndEvent:
    """The `compaction_end` of a compaction that wrote nothing, and why."""
    return CompactionEndEvent(
        tokens_before=before,
        tokens_after=before,
        turns_replaced=0,
        marker_id=None,
        error=why,
        usage=usage,
    )
