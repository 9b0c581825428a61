"""Context management inside the tool loop: ask the monitor before every request, compact when
told, learn from context_overflow errors, restore recently read files, shape the view (tail).

Owns: `ContextManager`, the driver the loop calls in a few places (`before_request`,
`after_request`, `on_overflow`, `shape`), and the compaction ladder: LLM summary (with its own
retries) → truncation marker (turns removed without a summary, still recallable) → a
`context_overflow` `RunError`. A no-progress signal from the monitor (compactions that leave the
view above the trigger) stops the run with a clear `context_overflow` error; a runaway signal
stops it with stop reason `context_runaway`.
Does not own: the pressure arithmetic (`tether.compaction.monitor`), the summary call
(`tether.compaction.summarize`), the loop itself (`tether.agent.loop`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tether.agent.events import AgentEvent, CompactionEndEvent, CompactionStartEvent, ErrorOutEvent
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import estimate_tokens, text_tokens
from tether.compaction.recall import RECALL_TOOL, recall_tool
from tether.compaction.restore import READ_TOOL, recent_read_paths, restore_pair
from tether.compaction.rounds import CompactInvalidInputError, Scope, select
from tether.compaction.summarize import (
    CompactionFailedError,
    CompactionResult,
    compact_conversation,
    compact_with,
    truncation_marker,
)
from tether.compaction.tail import Compactor, TailPolicy, shorten_old_results
from tether.errors import RunError
from tether.messages import ToolCallBlock, ToolResultBlock, Turn
from tether.providers.base import Provider
from tether.tools.base import ToolContext
from tether.tools.registry import ToolRegistry
from tether.tools.run import run_tool_call
from tether.wire.markers import is_marker

MAX_COMPACTIONS_PER_REQUEST = 3
"""Compactions before one request at most (the monitor's no-progress guard normally stops
earlier); then the request is sent and a context_overflow answer is handled once more."""


class Host(Protocol):
    """What the driver needs of the agent (`tether.agent.loop.Agent` satisfies it)."""

    history: list[Turn]
    registry: ToolRegistry
    context: ToolContext
    new_id: Callable[[], str]

    @property
    def provider(self) -> Provider: ...

    def current_view(self) -> tuple[Turn, ...]: ...

    def redact(self, text: str) -> str: ...

    def add_turn(self, turn: Turn, new_turns: list[Turn]) -> None: ...

    def emit(self, event: AgentEvent) -> None: ...


class ContextManager:
    """Automatic compaction for one agent.

    Args:
        monitor: the pressure monitor (its limits give the window, in tokens).
        summarizer: the provider writing summaries (default: the agent's own).
        compactor: a user function replacing the LLM summarizer (see `Compactor`).
        keep_turns: live turns kept verbatim after the summary (rounded to whole rounds).
        tail: the wire-only tail strategy's settings, or None to leave results whole.
        restore_budget_tokens: tokens of recently read files restored after a compaction
            (default: a tenth of the window); 0 disables restoring.
        max_restore_files: files restored at most.
        timeout_s: wall-clock limit of one summary call, in seconds.
        retry_wait_s: base wait between transient summary-call retries, in seconds.
        summary_max_tokens: the summary's output cap (default: min(4096, window / 4, max output)).
        offer_recall: add the `recall` tool (`tether.compaction.recall`) to the agent's tools
            once the history holds a marker (after the first compaction, or at once for a
            resumed session that has one), so nothing a compaction elided is out of reach.
            Not offered before: it would cost tokens on every request for nothing.
    """

    def __init__(
        self,
        monitor: ContextMonitor,
        *,
        summarizer: Provider | None = None,
        compactor: Compactor | None = None,
        keep_turns: int = 4,
        tail: TailPolicy | None = None,
        restore_budget_tokens: int | None = None,
        max_restore_files: int = 5,
        timeout_s: float = 120.0,
        retry_wait_s: float = 1.0,
        summary_max_tokens: int | None = None,
        offer_recall: bool = True,
    ) -> None:
        self.offer_recall = offer_recall
        self.monitor = monitor
        self.summarizer = summarizer
        self.compactor = compactor
        self.keep_turns = keep_turns
        self.tail = tail
        self.restore_budget_tokens = restore_budget_tokens
        self.max_restore_files = max_restore_files
        self.timeout_s = timeout_s
        self.retry_wait_s = retry_wait_s
        self.summary_max_tokens = summary_max_tokens
        self.compactions = 0
        self._view_len = 0
        self._generation = 0
        self._recall_scanned = 0  # history turns already checked for a marker

    # -- the loop's hooks -------------------------------------------------------------------

    def shape(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """The view as sent: the tail strategy applied when enabled (pure, byte-stable)."""
        out = view if self.tail is None else shorten_old_results(view, self.tail)
        self._view_len = len(out)
        self._generation = self.monitor.generation  # the generation this view was built at
        return out

    async def before_request(self, host: Host, new_turns: list[Turn]) -> str | None:
        """Check pressure before a request; compact when the monitor says so.

        Returns:
            None to go on, or a stop reason (`context_runaway`) to end the run.

        Raises:
            RunError: `context_overflow` when compactions make no progress or cannot be done.
        """
        self._ensure_recall(host)
        for compacted in range(MAX_COMPACTIONS_PER_REQUEST + 1):
            decision = self.monitor.check(self.shape(host.current_view()))
            if decision.no_progress:
                message = (
                    "context window exhausted: compactions in a row left the context above the "
                    "trigger; the task's recent turns alone do not fit this model's window"
                )
                host.emit(ErrorOutEvent(kind="context_overflow", message=message))
                raise RunError("context_overflow", message)
            if decision.runaway:
                host.emit(ErrorOutEvent(kind="context_overflow", message=decision.runaway))
                return "context_runaway"
            if not decision.compact or compacted >= MAX_COMPACTIONS_PER_REQUEST:
                break
            if await self.compact(host, new_turns, reason="threshold") is None:
                break  # nothing left to summarize: send as is (an overflow is handled later)
        return None

    def after_request(self, turn: Turn) -> None:
        """Feed the request's measured usage to the monitor."""
        if turn.usage is not None:
            self.monitor.observe(
                view_len=self._view_len,
                usage=turn.usage,
                assistant_turn_id=turn.id,
                generation=self._generation,
            )

    async def on_overflow(self, host: Host, message: str, new_turns: list[Turn]) -> bool:
        """The provider said the request was too long: learn the window, compact. Returns True
        when a marker was written (the caller retries the request once)."""
        self.monitor.overflow(message)
        return await self.compact(host, new_turns, reason="overflow") is not None

    # -- compaction -------------------------------------------------------------------------

    async def compact(
        self, host: Host, new_turns: list[Turn], *, reason: str, focus: str | None = None
    ) -> CompactionResult | None:
        """Run the ladder and append the marker (and the restored-files pair) to the history.

        Returns:
            The result, or None when there was nothing to compact.

        Raises:
            RunError: `context_overflow` when the summary failed and no truncation is possible.
        """
        history = tuple(host.history)
        before = estimate_tokens(self.shape(host.current_view()))
        host.emit(CompactionStartEvent(reason=reason, tokens_before=before))
        scope = self._scope(history)
        if scope is None:
            host.emit(
                CompactionEndEvent(
                    tokens_before=before,
                    tokens_after=before,
                    turns_replaced=0,
                    marker_id=None,
                    error="nothing to summarize",
                )
            )
            return None
        marker_id = host.new_id()
        try:
            result = await self._summarize(host, history, scope, focus, marker_id)
        except CompactionFailedError as exc:
            try:
                result = truncation_marker(history, scope, str(exc), marker_id=marker_id)
            except CompactInvalidInputError as inner:  # pragma: no cover - scope was checked
                raise RunError("context_overflow", f"{exc}; {inner}") from exc
        host.add_turn(result.marker_turn, new_turns)
        self._ensure_recall(host)
        restored = await self._restore(host, history, scope, new_turns)
        after_view = self.shape(host.current_view())
        self.monitor.compacted(after_view)
        self.compactions += 1
        host.emit(
            CompactionEndEvent(
                tokens_before=before,
                tokens_after=estimate_tokens(after_view),
                turns_replaced=len(result.replaced_ids),
                marker_id=result.marker_turn.id,
                generation=result.generation,
                truncated=result.truncated,
                restored_files=restored,
            )
        )
        return result

    def _ensure_recall(self, host: Host) -> None:
        """Offer `recall` once the history holds a marker (each turn is looked at once)."""
        if not self.offer_recall or RECALL_TOOL in host.registry:
            return
        seen, self._recall_scanned = self._recall_scanned, len(host.history)
        if seen > len(host.history):  # the history was replaced: look at all of it
            seen = 0
        if any(is_marker(t) for t in host.history[seen:]):
            host.registry.add(recall_tool(lambda: host.history))

    def _scope(self, history: tuple[Turn, ...]) -> Scope | None:
        """The first scope that replaces at least one turn besides earlier markers: keep
        `keep_turns` live turns, then half as many, ..., then none (`full`)."""
        keeps: list[int] = []
        k = self.keep_turns
        while k > 0:
            keeps.append(k)
            k //= 2
        for scope in (*(Scope.tail(k) for k in keeps), Scope.full()):
            try:
                selection = select(history, scope)
            except CompactInvalidInputError:
                continue
            if any(not is_marker(t) for t in selection.turns):
                return scope
        return None

    async def _summarize(
        self,
        host: Host,
        history: tuple[Turn, ...],
        scope: Scope,
        focus: str | None,
        marker_id: str,
    ) -> CompactionResult:
        if self.compactor is not None:
            return await compact_with(self.compactor, history, scope, focus, marker_id=marker_id)
        limits = self.monitor.limits
        cap = self.summary_max_tokens or max(
            64, min(4096, limits.context_window // 4, limits.max_output_tokens)
        )
        return await compact_conversation(
            self.summarizer or host.provider,
            history,
            scope,
            focus,
            timeout_s=self.timeout_s,
            window_tokens=limits.context_window,
            summary_max_tokens=cap,
            retry_wait_s=self.retry_wait_s,
            marker_id=marker_id,
        )

    async def _restore(
        self, host: Host, history: tuple[Turn, ...], scope: Scope, new_turns: list[Turn]
    ) -> tuple[str, ...]:
        budget = self.restore_budget_tokens
        if budget is None:
            budget = self.monitor.limits.context_window // 10
        if budget <= 0 or READ_TOOL not in host.registry.names():
            return ()
        kept = select(history, scope).kept
        paths = recent_read_paths(history, kept, max_files=self.max_restore_files)
        calls: list[ToolCallBlock] = []
        results: list[ToolResultBlock] = []
        spent = 0
        for path in paths:
            call = ToolCallBlock(
                id=f"restore_{host.new_id()}", name=READ_TOOL, arguments={"path": path}
            )
            result = await run_tool_call(
                host.registry, call, host.context, timeout_s=30.0, redact=host.redact
            )
            cost = text_tokens(result.text) + 8
            if result.is_error or spent + cost > budget:
                continue
            spent += cost
            calls.append(call)
            results.append(result)
        pair = restore_pair(calls, results, assistant_id=host.new_id(), user_id=host.new_id())
        if pair is None:
            return ()
        for t in pair:
            host.add_turn(t, new_turns)
        return tuple(str(c.arguments["path"]) for c in calls)
