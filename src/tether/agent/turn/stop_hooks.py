"""The `stop` hooks as a turn policy: a final answer a hook does not accept becomes one more
user message.

Owns: `StopHooks` and `STOP_DENIED` (the message's form).
Does not own: running hooks (`tether.agent.turn.hooks.HookRunner`), the `user_prompt` hook
(the loop's, `tether.agent.turn.loop`: it can refuse a prompt before anything is stored).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.turn.hooks import HookRunner
from tether.agent.turn.policy import TurnPolicy
from tether.messages import Turn

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["STOP_DENIED", "StopHooks"]

STOP_DENIED = "A stop hook did not accept this as the final answer: {reason}"


class StopHooks(TurnPolicy):
    """After a reply without tool calls (a final answer), run the `stop` hooks on the answer's
    text: a denial sends the model back to work with `STOP_DENIED` and the reason.

    Args:
        hooks: the agent's hooks.
    """

    def __init__(self, hooks: HookRunner) -> None:
        self.hooks = hooks

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """None to let the run end on the answer, else the message to send next."""
        if turn.tool_calls or not self.hooks.active("stop"):
            return None
        decision = await self.hooks.run("stop", answer=state.answer)
        if decision.allow:
            return None
        return STOP_DENIED.format(reason=decision.reason.strip() or "(no reason given)")
