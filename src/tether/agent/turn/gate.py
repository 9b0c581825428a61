"""The one gate every tool call passes before and after it runs: hooks, then approval.

Owns: the order of the checks a call goes through once safe mode and loop hygiene let it
through (`tether.agent.turn.tool_calls`), like Claude Code's PreToolUse then permissions:
    1. `before_tool` hooks (`tether.agent.turn.hooks`): a denial wins (nothing is asked, the model
       is told the reason); a rewrite changes the arguments the approval prompt shows and the
       tool gets (the stored call keeps the model's arguments);
    2. the spawn permission for `task` calls (`agents.spawn`: `deny` refuses, `allow` skips
       the approval prompt, `ask` asks as for any non-safe call);
    3. the approval gate (`tether.agent.approval`).
After the call: the `after_tool` hooks, with the result the model will see.
Does not own: the hooks' and the gate's own rules, running the call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Literal

from tether.agent.approval import ApprovalGate, call_kind
from tether.agent.turn.hooks import HookRunner
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock

SpawnPermission = Literal["ask", "allow", "deny"]


def hook_denied_result(call: ToolCallBlock, reason: str) -> ToolResultBlock:
    """The is_error result of a call a `before_tool` hook denied (it was not run)."""
    why = f" Reason: {reason.strip()}" if reason.strip() else ""
    text = (
        f"denied: a hook refused this `{call.name}` call; it was not run.{why} "
        "Do not repeat the same call; adjust your approach."
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)


def spawn_denied_result(call: ToolCallBlock) -> ToolResultBlock:
    """The is_error result of a `task` call refused by `agents.spawn = deny`."""
    text = (
        "denied: starting subagents is turned off here (setting agents.spawn = deny); the "
        "call was not run. Do the work yourself."
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)


class CallGate:
    """Hooks, the spawn permission and approval, in that order (module docstring).

    Args:
        approval: the approval gate.
        hooks: the agent's hooks (None: none).
        spawn: the spawn permission for `task` calls.
    """

    def __init__(
        self,
        approval: ApprovalGate,
        hooks: HookRunner | None = None,
        *,
        spawn: SpawnPermission = "ask",
    ) -> None:
        self.approval = approval
        self.hooks = hooks
        self.spawn: SpawnPermission = spawn

    async def before(
        self,
        call: ToolCallBlock,
        *,
        safe: bool,
        diff: Callable[[ToolCallBlock], str | None] | None = None,
    ) -> tuple[ToolCallBlock, ToolResultBlock | None]:
        """The call to run (its arguments possibly rewritten by a hook) and, when it must not
        run, its is_error result.

        Args:
            call: the call as the model made it.
            safe: whether the tool is read-only.
            diff: computes an edit's preview for the approval prompt (of the call as it will
                run).
        """
        if self.hooks is not None and self.hooks.active("before_tool"):
            decision = await self.hooks.run("before_tool", call=call)
            if not decision.allow:
                return call, hook_denied_result(call, decision.reason)
            if decision.arguments is not None:
                call = replace(call, arguments=decision.arguments)
        if call_kind(call.name) == "spawn":
            if self.spawn == "deny":
                return call, spawn_denied_result(call)
            if self.spawn == "allow":
                return call, None
            safe = False  # `ask`: a spawn is asked like any non-safe call
        final = call
        denied = await self.approval.check(
            final, safe=safe, diff=None if diff is None else (lambda: diff(final))
        )
        return call, denied

    async def after(self, call: ToolCallBlock, result: ToolResultBlock) -> None:
        """Run the `after_tool` hooks (their answers are ignored)."""
        if self.hooks is not None and self.hooks.active("after_tool"):
            await self.hooks.run("after_tool", call=call, result=result)
