"""A folder tool in its sandboxed worker asks the user (issue 39, audit row "question bridge
inside the sandboxed worker"): `ctx.questions.ask(...)` in the worker reaches the host's
`QuestionBridge` over the worker's own pipes, the answer comes back typed, the call's time limit
stops while the user thinks, and without a host bridge the tool hears so (no host callback
crosses the sandbox: the worker's context is rebuilt from JSON)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from kit.calls import make_call
from kit.sandbox import SANDBOX_KINDS, sandbox_for
from tether.tools import ToolContext, ToolRegistry, scrubbed_env
from tether.tools.context import Answer, QuestionSpec
from tether.tools.exec.run import run_tool
from tether.tools.scan import scan_tool_folders

TOOLS = '''
import os
from tether.tools import ToolContext, tool
from tether.tools.context import OptionSpec, QuestionSpec


@tool(timeout_s=2)
async def pick_db(ctx: ToolContext) -> dict:
    """Ask which database to use."""
    if ctx.questions is None:
        return {"asked": False}
    try:
        first = await ctx.questions.ask([QuestionSpec(
            header="DB", question="Which database?",
            options=[OptionSpec(label="postgres"), OptionSpec(label="sqlite")])])
        second = await ctx.questions.ask([QuestionSpec(
            header="Name", question="Its name?",
            options=[OptionSpec(label="main"), OptionSpec(label="test")])])
    except RuntimeError as exc:
        return {"asked": True, "error": str(exc)}
    return {"asked": True, "answers": [first[0].labels, second[0].text], "pid": os.getpid()}
'''


class Bridge:
    """A host's bridge that answers after `delay_s` and records what it was asked."""

    def __init__(self, delay_s: float = 0.0, fail: bool = False) -> None:
        self.delay_s = delay_s
        self.fail = fail
        self.asked: list[list[str]] = []

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        self.asked.append([q.question for q in questions])
        await asyncio.sleep(self.delay_s)
        if self.fail:
            raise RuntimeError("the editor went away")
        if len(self.asked) == 1:
            return [Answer(labels=("postgres",))]
        return [Answer(text="orders")]


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "ask.py").write_text(TOOLS)
    return scan_tool_folders([folder]).registry


@pytest.mark.parametrize("kind", SANDBOX_KINDS)
async def test_a_worker_tool_asks_the_host_and_gets_typed_answers(
    registry: ToolRegistry, root: Path, kind: str
) -> None:
    bridge = Bridge()
    ctx = ToolContext.create(root, env=scrubbed_env(), sandbox=sandbox_for(kind), questions=bridge)
    r = await run_tool(registry, make_call("pick_db"), ctx)
    assert not r.block.is_error, r.block.text
    data = json.loads(r.block.text)
    assert data["asked"] and data["answers"] == [["postgres"], "orders"]
    assert bridge.asked == [["Which database?"], ["Its name?"]]


async def test_the_time_limit_stops_while_the_user_is_asked(
    registry: ToolRegistry, root: Path
) -> None:
    bridge = Bridge(delay_s=1.5)  # two questions: 3 s of the user's time, over the tool's 2 s
    ctx = ToolContext.create(root, env=scrubbed_env(), questions=bridge)
    r = await run_tool(registry, make_call("pick_db"), ctx)
    assert not r.block.is_error, r.block.text
    assert json.loads(r.block.text)["answers"] == [["postgres"], "orders"]


async def test_headless_and_a_failing_bridge_are_the_tools_to_handle(
    registry: ToolRegistry, root: Path
) -> None:
    headless = ToolContext.create(root, env=scrubbed_env())
    r = await run_tool(registry, make_call("pick_db"), headless)
    assert json.loads(r.block.text) == {"asked": False}
    failing = ToolContext.create(root, env=scrubbed_env(), questions=Bridge(fail=True))
    r = await run_tool(registry, make_call("pick_db"), failing)
    assert json.loads(r.block.text) == {"asked": True, "error": "RuntimeError: the editor went away"}
