"""The `question` tool: the model asks the user, through a bridge the host provides.

Owns: the `question` tool (1-4 `QuestionSpec`s, each with a header chip of at most 16
characters, 2-16 `OptionSpec`s with a label of at most 60 characters, a description and an
optional preview, and a multi-select flag; answers `{labels}`, `{text}` or `{abandoned}`) and
its headless refusal. The shapes and the host's side (`QuestionBridge`: `async ask(questions)
-> answers`) are data in `tether.tools.context`. A host with a user (TUI, IDE) passes a bridge as
`Host(questions=...)` (it lands in `ToolContext.questions`); without one (the headless
`tether run`), the tool answers that nobody is there and the model must use its own judgment.
The tool is `safe` (it changes nothing): it stays offered in safe mode.
Does not own: rendering the questions (the host: the TUI's overlay).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Annotated

from pydantic import Field

from tether.errors import ToolError
from tether.providers.base import inline_refs
from tether.tools.base import tool
from tether.tools.context import QuestionSpec, ToolContext

QUESTION_TIMEOUT_S = 24 * 3600.0
"""The question tool's time limit (s): a person may take a while to answer."""
HEADLESS_ANSWER = (
    "No user is available to answer questions in this run (headless). Do not ask again: decide "
    "for yourself using your best judgment, state the assumption you made, and continue."
)
@tool(name="question", timeout_s=QUESTION_TIMEOUT_S, safe=True)
async def _question(
    questions: Annotated[list[QuestionSpec], Field(min_length=1, max_length=4)],
    *,
    ctx: ToolContext,
) -> str:
    """Ask the user 1-4 multiple-choice questions and wait for the answers. Use it only when
    you cannot proceed without the user's decision. The user may also type a free answer.

    Args:
        questions: the questions; each has a short header chip, 2-16 options (label,
            description, optional preview) and may allow several choices.

    Returns JSON: one object per question, `{"labels": [...]}`, `{"text": "..."}` (a free
    answer) or `{"abandoned": true}` (the user dismissed the prompt: use your best judgment).
    """
    bridge = ctx.questions
    if bridge is None:
        return HEADLESS_ANSWER
    answers = list(await bridge.ask(tuple(questions)))
    if len(answers) != len(questions):
        raise ToolError(f"the host returned {len(answers)} answers for {len(questions)} questions")
    valid = [{o.label for o in q.options} for q in questions]
    for q, a, labels in zip(questions, answers, valid, strict=True):
        if a.labels and (not set(a.labels) <= labels or (len(a.labels) > 1 and not q.multi_select)):
            raise ToolError(f"the host returned an invalid choice for {q.header!r}")
    out = [{"header": q.header, **a.to_dict()} for q, a in zip(questions, answers, strict=True)]
    return json.dumps(out, ensure_ascii=False)


question = replace(_question, parameters=inline_refs(_question.parameters))
"""The `question` tool (its schema self-contained: no `$ref`)."""
