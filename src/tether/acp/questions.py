"""The `question` tool in an editor: the ACP host's `QuestionBridge`.

Owns: `AcpQuestions`, which puts the model's questions to the person in the editor, in the best
form the client declared at `initialize`:
- **a form** (`elicitation/create`, form mode, when the client's capabilities include
  `elicitation.form`): one field per question, single choice (`oneOf`) or several
  (`anyOf` items), each with a free-text field beside it, scoped to the session and the
  `question` call; accept gives the choices (or the free text), decline or cancel abandons;
- else **a permission prompt per question** (`session/request_permission`, which every ACP
  client shows): the question as the tool call's title, one option per choice and a last
  "Skip" option; picking one answers it, Skip or a cancelled prompt abandons it. A permission
  prompt takes one choice, so a multi-select question gets one label there; free text needs a
  form.
Does not own: the tool (`tether.tools.builtin.question`), the session updates (`server`).

Without this bridge the ACP host had none, so the tool answered as in a headless run ("no
user is available") while a person sat in front of the editor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    ElicitationFormSessionMode,
    ElicitationSchema,
    PermissionOption,
    ToolCallUpdate,
)

import acp
from tether.tools.context import ABANDONED, Answer, QuestionSpec

__all__ = ["OTHER_SUFFIX", "SKIP_OPTION", "AcpQuestions", "answers_of", "form_schema"]

SKIP_OPTION = "skip"
"""The permission option that leaves a question to the agent's judgment."""
OTHER_SUFFIX = "_other"
"""A form's free-text field for question `qN` is `qN_other`."""


def form_schema(questions: Sequence[QuestionSpec]) -> ElicitationSchema:
    """The form: field `q1`… per question (its header as title, the question and the options'
    descriptions as description) and `q1_other`… for a free answer. Nothing is required: a
    question left empty is abandoned."""
    properties: dict[str, Any] = {}
    for n, q in enumerate(questions, start=1):
        choices = [
            {
                "const": o.label,
                "title": f"{o.label} — {o.description}" if o.description else o.label,
            }
            for o in q.options
        ]
        described = "\n".join(
            [q.question, *(f"- {o.label}: {o.description}" for o in q.options if o.description)]
        )
        if q.multi_select:
            properties[f"q{n}"] = {
                "type": "array",
                "title": q.header,
                "description": described,
                "items": {"anyOf": choices},
            }
        else:
            properties[f"q{n}"] = {
                "type": "string",
                "title": q.header,
                "description": described,
                "oneOf": choices,
            }
        properties[f"q{n}{OTHER_SUFFIX}"] = {
            "type": "string",
            "title": f"{q.header}: or in your own words",
        }
    return ElicitationSchema.model_validate({"type": "object", "properties": properties})


def answers_of(questions: Sequence[QuestionSpec], content: dict[str, Any] | None) -> list[Answer]:
    """The answers in an accepted form's `content`: the chosen labels that are options of the
    question, else the free text, else abandoned."""
    content = content or {}
    out: list[Answer] = []
    for n, q in enumerate(questions, start=1):
        labels_ok = {o.label for o in q.options}
        raw: object = content.get(f"q{n}")
        picked: list[object] = (
            [raw]
            if isinstance(raw, str)
            else list(cast(list[object], raw))
            if isinstance(raw, list)
            else []
        )
        labels = tuple(str(x) for x in picked if str(x) in labels_ok)
        if labels and not q.multi_select:
            labels = labels[:1]
        text = content.get(f"q{n}{OTHER_SUFFIX}")
        if labels:
            out.append(Answer(labels=labels))
        elif isinstance(text, str) and text.strip():
            out.append(Answer(text=text.strip()))
        else:
            out.append(ABANDONED)
    return out


def _form_capable(capabilities: ClientCapabilities | None) -> bool:
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.form is not None


class AcpQuestions:
    """The ACP session's `QuestionBridge`.

    Args:
        conn: the client side of the connection (read when asking).
        session_id: the ACP session.
        capabilities: the client's capabilities from `initialize` (read when asking).
        call_id: the ACP id of the `question` call being answered (the session tracks it), or
            None.
        flushed: waits until the updates queued before are sent (the client has seen the
            `tool_call` the questions belong to).
    """

    def __init__(
        self,
        *,
        conn: Callable[[], acp.Client],
        session_id: str,
        capabilities: Callable[[], ClientCapabilities | None],
        call_id: Callable[[], str | None],
        flushed: Callable[[], Awaitable[None]],
    ) -> None:
        self._conn = conn
        self._session_id = session_id
        self._capabilities = capabilities
        self._call_id = call_id
        self._flushed = flushed

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        """A form when the client takes one, else one permission prompt per question."""
        await self._flushed()
        if _form_capable(self._capabilities()):
            return await self._form(questions)
        return [await self._choose(q) for q in questions]

    async def _form(self, questions: Sequence[QuestionSpec]) -> list[Answer]:
        mode = ElicitationFormSessionMode(
            session_id=self._session_id,
            tool_call_id=self._call_id(),
            requested_schema=form_schema(questions),
        )
        message = questions[0].question if len(questions) == 1 else "The agent asks:"
        response = await self._conn().create_elicitation(message=message, mode=mode)
        if isinstance(response, AcceptElicitationResponse):
            return answers_of(questions, response.content)
        return [ABANDONED for _ in questions]

    async def _choose(self, q: QuestionSpec) -> Answer:
        options = [
            PermissionOption(option_id=f"o{i}", name=o.label, kind="allow_once")
            for i, o in enumerate(q.options)
        ]
        options.append(
            PermissionOption(
                option_id=SKIP_OPTION, name="Skip (let the agent decide)", kind="reject_once"
            )
        )
        update = ToolCallUpdate(
            tool_call_id=self._call_id() or "question",
            title=f"{q.header}: {q.question}",
            kind="other",
            status="pending",
        )
        response = await self._conn().request_permission(
            session_id=self._session_id, tool_call=update, options=options
        )
        outcome = response.outcome
        chosen: str | None = getattr(outcome, "option_id", None)
        if outcome.outcome != "selected" or chosen is None or not chosen.startswith("o"):
            return ABANDONED
        index = int(chosen[1:])
        return Answer(labels=(q.options[index].label,)) if index < len(q.options) else ABANDONED
