"""The question tool: through the host's bridge, or refused when headless."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tether.agent.loop import Agent
from tether.messages import ToolCallBlock
from tether.testing import ScriptedProvider, call
from tether.tools import ToolContext, ToolRegistry, question
from tether.tools.question import HEADLESS_ANSWER
from tether.tools.run import run_tool


class Bridge:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    async def ask(self, question: str, options: Sequence[str]) -> str:
        self.asked.append((question, tuple(options)))
        return self.answer


def q(**args: object) -> ToolCallBlock:
    return ToolCallBlock(id="q1", name="question", arguments=dict(args))


async def test_bridge_gets_the_question_and_options(ctx: ToolContext) -> None:
    bridge = Bridge("the blue one")
    c = ToolContext(root=ctx.root, env=ctx.env, questions=bridge)
    r = await run_tool(ToolRegistry([question]), q(question="Which?", options=["red", "blue"]), c)
    assert not r.block.is_error and r.block.text == "The user answered: the blue one"
    assert bridge.asked == [("Which?", ("red", "blue"))]
    r = await run_tool(ToolRegistry([question]), q(question="Free?"), c)
    assert bridge.asked[-1] == ("Free?", ())
    blank = ToolContext(root=ctx.root, env=ctx.env, questions=Bridge("  "))
    r = await run_tool(ToolRegistry([question]), q(question="x"), blank)
    assert r.block.text == "The user gave an empty answer."


async def test_headless_refuses_and_says_use_your_judgment(ctx: ToolContext) -> None:
    r = await run_tool(ToolRegistry([question]), q(question="Which?"), ctx)
    assert r.block.text == HEADLESS_ANSWER and not r.block.is_error
    assert "judgment" in r.block.text and "headless" in r.block.text


async def test_agent_passes_its_bridge(tmp_path: Path) -> None:
    bridge = Bridge("yes")
    provider = ScriptedProvider([call("question", question="Proceed?"), "ok"])
    agent = Agent(provider, tools=[question], root=tmp_path, question_bridge=bridge)
    await agent.run("go")
    assert bridge.asked == [("Proceed?", ())]
    assert agent.history[-2].tool_results[0].text == "The user answered: yes"
    headless = Agent(
        ScriptedProvider([call("question", question="?"), "ok"]), tools=[question], root=tmp_path
    )
    await headless.run("go")
    assert headless.history[-2].tool_results[0].text == HEADLESS_ANSWER
