"""The run-level hook points as the loop calls them: `user_prompt` and `stop`.

Owns: turning those points' decisions into what the loop does next (a prompt rewritten or
refused; a stop allowed or turned into one more user message).
Does not own: running hooks (`tether.agent.hooks.HookRunner`); the tool-call points
(`tether.agent.gate`), `before_compaction` (`tether.agent.context`), `transform_context` (the
request builder in `tether.agent.loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tether.agent.events import AgentEvent, DoneEvent, WarningEvent
from tether.agent.hooks import HookRunner
from tether.agent.state import RunResult
from tether.messages import ContentBlock, TextBlock, Usage

PROMPT_DENIED = "a user_prompt hook refused the prompt; nothing was sent"
STOP_DENIED = "A stop hook did not accept this as the final answer: {reason}"


async def user_prompt(
    hooks: HookRunner, prompt: str | Sequence[ContentBlock]
) -> tuple[str | Sequence[ContentBlock], str | None]:
    """The prompt to store (possibly rewritten) and, when a hook refused it, the reason (the
    caller then sends nothing). A rewrite of a prompt made of blocks replaces its text blocks
    with one text block (images and documents are kept after it)."""
    if not hooks.active("user_prompt"):
        return prompt, None
    text = (
        prompt
        if isinstance(prompt, str)
        else "\n".join(b.text for b in prompt if isinstance(b, TextBlock))
    )
    decision = await hooks.run("user_prompt", prompt=text)
    if not decision.allow:
        reason = decision.reason.strip()
        return prompt, f"{PROMPT_DENIED}: {reason}" if reason else PROMPT_DENIED
    if decision.prompt is None:
        return prompt, None
    if isinstance(prompt, str):
        return decision.prompt, None
    rest = [b for b in prompt if not isinstance(b, TextBlock)]
    return [TextBlock(text=decision.prompt), *rest], None


async def stop(hooks: HookRunner, answer: str) -> str | None:
    """None to let the run end on the final `answer` (its text), else the user message to
    send next (a `stop` hook denied, with its reason)."""
    if not hooks.active("stop"):
        return None
    decision = await hooks.run("stop", answer=answer)
    if decision.allow:
        return None
    return STOP_DENIED.format(reason=decision.reason.strip() or "(no reason given)")


def prompt_denied(
    emit: Callable[[AgentEvent], None], session_id: str | None, reason: str
) -> RunResult:
    """The run a refused prompt makes: nothing stored or sent; a `warning` event
    `prompt_denied` with the reason, then `done` (stop reason `prompt_denied`)."""
    emit(WarningEvent(kind="prompt_denied", message=reason))
    emit(
        DoneEvent(
            session_id=session_id,
            message=None,
            text="",
            usage=Usage(),
            stop_reason="prompt_denied",
            turns=0,
        )
    )
    return RunResult(
        message=None, usage=Usage(), stop_reason="prompt_denied", turns=0, new_turns=()
    )
