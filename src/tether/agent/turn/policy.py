"""The turn-policy seam: what acts around a turn, behind one small interface.

Owns: `TurnPolicy` (four optional hooks, each with its contract below) and `Policies` (an
agent's policies in order, calling each hook only on the policies that define it).
Does not own: the loop that calls them (`tether.agent.turn.loop.run_turns`), the policies
themselves (each in its module: `compacting` — compaction and the runaway guard, `budget`,
`continuation`, `stop_hooks`, `plan`, `checkpoints`, `children`), building them
(`tether.agent.assembly.assemble.assemble`, `AgentParts.with_settings`).

A new per-turn feature is one `TurnPolicy` subclass and one line in the assembly; the loop does
not change. Policies are long-lived (one set per agent, kept across runs): state for one run
lives in `RunState` or is reset in `on_prompt`, which every run calls first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tether.messages import ContentBlock, RunStopReason, ToolCallBlock, Turn

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["HeldBack", "Policies", "TurnPolicy"]


@dataclass(frozen=True, slots=True)
class HeldBack:
    """A policy keeps a reply's remaining calls from running (`TurnPolicy.before_tools`): each
    is answered with an is_error result of `text`, and the run ends with `stop_reason`."""

    text: str
    stop_reason: RunStopReason


class TurnPolicy:
    """One feature acting around a turn. Every hook is optional: a subclass defines those it
    needs, and the loop calls only those (`Policies`). Hooks run in the agent's policy order.
    An exception a hook raises ends the run as that exception (a `RunError` is reported as the
    run's error); a hook that can fail softly must catch its own errors and emit a `warning`
    event instead."""

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """Called once at the start of every run, before anything is stored or sent, with the
        user's prompt (empty when the run continues the history without a new prompt).

        Returns the prompt to store (`content` itself when unchanged; an empty prompt must
        stay empty). Reset any per-run state here."""
        return content

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """Called before each request of the run (after the previous reply's tools ran, before
        queued steering joins). May append turns through `state.append` (a compaction's
        marker).

        Returns a stop reason to end the run here (nothing more is sent; the later policies
        are not asked), or None to go on."""
        return None

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """Called after each reply is stored (its usage already in `state.usage`, before its
        tools run), in order until a policy returns a message: the policies after it are not
        asked about this reply.

        Returns a user message to send next instead of ending or running tools (a
        continuation, a stop hook's refusal), or None. Return a message only for a reply
        without tool calls: its calls would otherwise be left unanswered."""
        return None

    def before_tools(
        self, calls: tuple[ToolCallBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[tuple[ToolCallBlock, ...], HeldBack | None]:
        """Called before a reply's tool calls run, with the calls still to run (an earlier
        policy may have held some back).

        Returns `(calls, None)` to let them run, or `(a prefix of calls, HeldBack(...))` to run
        only the prefix: the loop answers every call left out with an is_error result of the
        `HeldBack`'s text (the session stays well-formed) and ends the run with its stop
        reason. The later policies are not asked once one holds calls back."""
        return calls, None

    def after_run(self, parts: RunParts, state: RunState) -> None:
        """Called once when the run ends — with an answer, a stop, an error or a cancel — before
        the `done` event, with `state.stop_reason`, `state.last` and `state.answer` final.
        Synchronous (it may run while the run is being cancelled); it may set
        `state.children_usage`, `state.structured`, and turn a normal end (`end_turn`) into a
        stop of its own (`schema_invalid`). Must not raise."""
        return None


_HOOKS = ("on_prompt", "before_request", "after_reply", "before_tools", "after_run")


def _defines(policy: TurnPolicy, hook: str) -> bool:
    return getattr(type(policy), hook) is not getattr(TurnPolicy, hook)


class Policies:
    """An agent's turn policies, in order (see `TurnPolicy` for each hook's contract).

    Args:
        policies: the policies, in the order their hooks run.
    """

    __slots__ = (
        "_after_reply",
        "_after_run",
        "_before_request",
        "_before_tools",
        "_on_prompt",
        "all",
    )

    def __init__(self, policies: Sequence[TurnPolicy] = ()) -> None:
        self.all: tuple[TurnPolicy, ...] = tuple(policies)
        by_hook = {h: tuple(p for p in self.all if _defines(p, h)) for h in _HOOKS}
        self._on_prompt = by_hook["on_prompt"]
        self._before_request = by_hook["before_request"]
        self._after_reply = by_hook["after_reply"]
        self._before_tools = by_hook["before_tools"]
        self._after_run = by_hook["after_run"]

    def __iter__(self) -> Iterator[TurnPolicy]:
        return iter(self.all)

    def __repr__(self) -> str:
        return f"Policies({', '.join(type(p).__name__ for p in self.all)})"

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """Every `on_prompt`, each given the previous one's result."""
        for p in self._on_prompt:
            content = p.on_prompt(content, parts, state)
        return content

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """The first stop reason a `before_request` gives, or None."""
        for p in self._before_request:
            if (stop := await p.before_request(parts, state)) is not None:
                return stop
        return None

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """The first message an `after_reply` gives, or None."""
        for p in self._after_reply:
            if (message := await p.after_reply(turn, parts, state)) is not None:
                return message
        return None

    def before_tools(
        self, calls: tuple[ToolCallBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[tuple[ToolCallBlock, ...], HeldBack | None]:
        """The calls every `before_tools` lets run, and the first `HeldBack`, if any."""
        for p in self._before_tools:
            calls, held = p.before_tools(calls, parts, state)
            if held is not None:
                return calls, held
        return calls, None

    def after_run(self, parts: RunParts, state: RunState) -> None:
        """Every `after_run`."""
        for p in self._after_run:
            p.after_run(parts, state)
