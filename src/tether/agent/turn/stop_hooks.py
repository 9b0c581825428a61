"""The `stop` hooks as a turn policy: a final answer a hook does not accept becomes one more
user message.

Owns: `StopHooks` and `STOP_DENIED` (the message's form), the cap on refusals in a row
(`hooks.max_stop_denials`, then a `stop_hook_loop` warning and the answer stands).
Does not own: running hooks (`tether.agent.turn.hooks.HookRunner`), the `user_prompt` hook
(the loop's, `tether.agent.turn.loop`: it can refuse a prompt before anything is stored).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.events import WarningEvent
from tether.agent.turn.hooks import HookRunner
from tether.agent.turn.policy import TurnPolicy
from tether.messages import ContentBlock, Turn

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["STOP_DENIED", "StopHooks"]

STOP_DENIED = "A stop hook did not accept this as the final answer: {reason}"


class StopHooks(TurnPolicy):
    """After a reply without tool calls (a final answer), run the `stop` hooks on the answer's
    text: a denial sends the model back to work with `STOP_DENIED` and the reason. The hooks
    are told whether a refusal came before in this run (`stop_hook_active`, `stop_denials`);
    past `hooks.max_stop_denials` refusals the answer stands, with one `stop_hook_loop`
    warning.

    Args:
        hooks: the agent's hooks.
    """

    def __init__(self, hooks: HookRunner) -> None:
        self.hooks = hooks
        self.denials = 0

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """A run starts: no refusal yet."""
        self.denials = 0
        return content

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """None to let the run end on the answer, else the message to send next."""
        if turn.tool_calls or not self.hooks.active("stop"):
            return None
        decision = await self.hooks.run(
            "stop",
            answer=state.answer,
            stop_hook_active=self.denials > 0,
            stop_denials=self.denials,
        )
        if decision.allow:
            return None
        reason = decision.reason.strip() or "(no reason given)"
        cap = self.hooks.settings.max_stop_denials
        if self.denials >= cap:
            parts.emit(
                WarningEvent(
                    kind="stop_hook_loop",
                    message=f"the stop hooks refused the answer {cap + 1} times in a row "
                    f"(last: {reason[:200]}); it stands (hooks.max_stop_denials = {cap})",
                )
            )
            return None
        self.denials += 1
        return STOP_DENIED.format(reason=reason)
