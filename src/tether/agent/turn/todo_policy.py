"""The todo list restated after a compaction, as a turn policy: when a compaction's summary
replaces the turn holding the todo list's latest state, the list is restated before the next
request (one synthetic `todo` call and its result), so the model keeps its plan.

Owns: `TodoRestatement`.
Does not own: the `todo` tool (`tether.tools.builtin.todo`), compaction and its restored files
(`tether.agent.turn.compacting`), the `todo` event (`tether.agent.turn.tool_calls`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.turn.policy import TurnPolicy
from tether.compaction.restore import restore_pair
from tether.messages import RunStopReason, ToolCallBlock, Turn
from tether.tools.builtin.todo import TODO_TOOL, latest_todo
from tether.tools.exec.run import run_tool_call
from tether.wire.markers import marker_blocks

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["TodoRestatement"]


class TodoRestatement(TurnPolicy):
    """Restates the todo list's latest state once a compaction marker replaced the turn that
    held it (module docstring). Each history turn is looked at once (O(new turns) per request).
    A compaction made outside a run (`Agent.compact_now`) or on a context_overflow answer is
    seen at the next `before_request`, still before the next request is sent."""

    def __init__(self) -> None:
        self._history: list[Turn] | None = None  # the history looked at
        self._scanned = 0  # its turns already looked at
        self._reset()

    def _reset(self) -> None:
        self._items: tuple[dict[str, str], ...] | None = None  # the list's latest state
        self._holder: str | None = None  # the id of the turn holding it
        self._replaced = False  # a marker replaced that turn since
        self._calls: frozenset[str] = frozenset()  # the holder's `todo` call ids
        self._before: tuple[tuple[dict[str, str], ...] | None, str | None] = (None, None)

    def _scan(self, history: list[Turn]) -> None:
        seen, self._scanned = self._scanned, len(history)
        if history is not self._history or seen > len(history):  # another session, a rewind
            self._history = history
            self._reset()
            seen = 0
        for turn in history[seen:]:
            for block in marker_blocks(turn):
                if self._holder is not None and self._holder in block.replaces_turn_ids:
                    self._replaced = True
            if self._calls and any(
                r.is_error and r.tool_call_id in self._calls for r in turn.tool_results
            ):
                (self._items, self._holder), self._calls = self._before, frozenset()
            todo = [c.id for c in turn.tool_calls if c.name == TODO_TOOL]
            if todo and (items := latest_todo((turn,))) is not None:  # only a todo call's turn
                self._before = (self._items, self._holder)
                self._items, self._holder, self._replaced = items, turn.id, False
                self._calls = frozenset(todo)

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """Appends the restated list (a `todo` call and its result) when a marker replaced the
        turn holding its latest state and the `todo` tool is offered; never stops the run."""
        self._scan(state.history)
        if not self._replaced or self._items is None or TODO_TOOL not in parts.registry:
            return None
        self._replaced = False
        call = ToolCallBlock(
            id=f"restore_{parts.new_id()}", name=TODO_TOOL, arguments={"items": list(self._items)}
        )
        result = await run_tool_call(
            parts.registry, call, parts.tool_context, timeout_s=30.0, redact=parts.redact
        )
        if result.is_error:
            return None
        pair = restore_pair((call,), (result,), assistant_id=parts.new_id(), user_id=parts.new_id())
        for turn in pair or ():
            state.append(turn)
        return None
