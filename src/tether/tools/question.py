"""The `question` tool: the model asks the user, through a bridge the host provides.

Owns: `QuestionBridge` (the host's side: `async ask(question, options) -> answer`), the
`question` tool, and its headless refusal. A host with a user (TUI, IDE) passes a bridge as
`Agent(question_bridge=...)` (it lands in `ToolContext.questions`); without one (the headless
`tether run`), the tool answers that nobody is there and the model must use its own judgment.
Does not own: rendering the question (the host).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tether.tools.base import ToolContext, ToolError, tool

QUESTION_TIMEOUT_S = 24 * 3600.0
"""The question tool's time limit (s): a person may take a while to answer."""
HEADLESS_ANSWER = (
    "No user is available to answer questions in this run (headless). Do not ask again: decide "
    "for yourself using your best judgment, state the assumption you made, and continue."
)


class QuestionBridge(Protocol):
    """How a host puts a question to its user."""

    async def ask(self, question: str, options: Sequence[str]) -> str:
        """Ask `question` (with `options` to choose from, or free text when empty); return the
        user's answer. Raise to report that no answer can be had."""
        ...


@tool(timeout_s=QUESTION_TIMEOUT_S)
async def question(question: str, options: list[str] | None = None, *, ctx: ToolContext) -> str:
    """Ask the user a question and wait for the answer. Use it only when you cannot proceed
    without the user's decision; prefer a few short options.

    Args:
        question: the question, self-contained.
        options: the answers to choose from (the user may still answer freely); omit for a
            free-text answer.
    """
    bridge = ctx.questions
    if bridge is None:
        return HEADLESS_ANSWER
    if not question.strip():
        raise ToolError("the question is empty")
    answer = await bridge.ask(question, tuple(options or ()))
    if not answer.strip():
        return "The user gave an empty answer."
    return f"The user answered: {answer}"
