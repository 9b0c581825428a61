"""The question tool: the full schema, through the host's bridge, or refused when headless."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.messages import ToolCallBlock
from tether.testing import ScriptedProvider, call
from tether.tools import ToolContext, ToolRegistry, question
from tether.tools.builtin.question import HEADLESS_ANSWER
from tether.tools.context import ABANDONED, Answer, QuestionSpec
from tether.tools.exec.run import run_tool


class Bridge:
    def __init__(self, *answers: Answer) -> None:
        self.answers = answers
        self.asked: list[tuple[QuestionSpec, ...]] = []

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        self.asked.append(tuple(questions))
        return self.answers


def opt(label: str, **extra: Any) -> dict[str, Any]:
    return {"label": label, "description": f"about {label}", **extra}


def one(header: str = "Color", multi: bool = False, n: int = 2) -> dict[str, Any]:
    options = [opt(f"o{i}") for i in range(n)]
    return {"header": header, "question": "Which?", "options": options, "multi_select": multi}


def q(*questions: dict[str, Any]) -> ToolCallBlock:
    return ToolCallBlock(id="q1", name="question", arguments={"questions": list(questions)})


async def ask(ctx: ToolContext, bridge: Bridge | None, *questions: dict[str, Any]) -> Any:
    c = ToolContext(root=ctx.root, env=ctx.env, questions=bridge)
    return await run_tool(ToolRegistry([question]), q(*questions), c)


async def test_answers_come_back_as_labels_text_or_abandoned(ctx: ToolContext) -> None:
    bridge = Bridge(Answer(labels=("o1",)), Answer(text="my own"), ABANDONED)
    r = await ask(ctx, bridge, one("A"), one("B"), one("C", n=16))
    assert not r.block.is_error
    assert json.loads(r.block.text) == [
        {"header": "A", "labels": ["o1"]},
        {"header": "B", "text": "my own"},
        {"header": "C", "abandoned": True},
    ]
    (asked,) = bridge.asked
    assert [x.header for x in asked] == ["A", "B", "C"] and len(asked[2].options) == 16
    assert asked[0].options[0].description == "about o0"


async def test_multi_select_and_preview_reach_the_host(ctx: ToolContext) -> None:
    spec = one(multi=True)
    spec["options"][0]["preview"] = "def f(): ..."
    bridge = Bridge(Answer(labels=("o0", "o1")))
    r = await ask(ctx, bridge, spec)
    assert json.loads(r.block.text) == [{"header": "Color", "labels": ["o0", "o1"]}]
    assert bridge.asked[0][0].multi_select and bridge.asked[0][0].options[0].preview


@pytest.mark.parametrize(
    "questions",
    [
        [],  # no question
        [one()] * 5,  # more than 4
        [one(n=1)],  # fewer than 2 options
        [one(n=17)],  # more than 16
        [one(header="x" * 17)],  # header chip too long
        [{**one(), "options": [opt("x" * 61), opt("b")]}],  # label too long
    ],
)
async def test_out_of_schema_questions_are_errors_the_model_sees(
    ctx: ToolContext, questions: list[dict[str, Any]]
) -> None:
    bridge = Bridge()
    r = await ask(ctx, bridge, *questions)
    assert r.block.is_error and bridge.asked == []


async def test_a_host_answer_outside_the_options_is_an_error(ctx: ToolContext) -> None:
    assert (await ask(ctx, Bridge(Answer(labels=("nope",))), one())).block.is_error
    assert (await ask(ctx, Bridge(Answer(labels=("o0", "o1"))), one())).block.is_error
    assert (await ask(ctx, Bridge(), one())).block.is_error  # no answer at all


async def test_headless_refuses_and_says_use_your_judgment(ctx: ToolContext) -> None:
    r = await ask(ctx, None, one())
    assert r.block.text == HEADLESS_ANSWER and not r.block.is_error
    assert "judgment" in r.block.text and "headless" in r.block.text


def test_question_is_safe_so_safe_mode_keeps_it() -> None:
    assert question.safe
    assert question.parameters["properties"]["questions"]["maxItems"] == 4


async def test_agent_passes_its_bridge(tmp_path: Path) -> None:
    bridge = Bridge(Answer(labels=("o0",)))
    provider = ScriptedProvider([call("question", questions=[one()]), "ok"])
    agent = Agent(
        provider,
        tools=[question],
        root=tmp_path,
        host=Host(questions=bridge),
    )
    await agent.run("go")
    assert len(bridge.asked) == 1
    assert json.loads(agent.history[-2].tool_results[0].text) == [
        {"header": "Color", "labels": ["o0"]}
    ]
    headless = Agent(
        ScriptedProvider([call("question", questions=[one()]), "ok"]),
        tools=[question],
        root=tmp_path,
    )
    await headless.run("go")
    assert headless.history[-2].tool_results[0].text == HEADLESS_ANSWER


def test_the_schema_is_self_contained_for_grammars_and_providers() -> None:
    text = json.dumps(question.parameters)
    assert "$ref" not in text and "$defs" not in text and question.name == "question"
    item = question.parameters["properties"]["questions"]["items"]
    assert item["properties"]["header"]["maxLength"] == 16
    assert item["properties"]["options"]["items"]["properties"]["label"]["maxLength"] == 60
