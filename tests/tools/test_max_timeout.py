"""The ceiling of a model-chosen time limit is the `tools.max_timeout` setting (issue 39, audit
row "agent-owned time limit"; the seed's `toolTimeoutLimit`): a tool's `timeout` argument and
`bash`'s own `timeout_s` are capped at it, and the runner's backstop for `bash` follows it.
Before, the ceiling was the constant 1200 s and `bash` refused anything above 600 s."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

from kit.agents import make_agent
from kit.calls import make_call
from tether import AgentConfig
from tether.testing import ScriptedProvider
from tether.tools import ToolContext, ToolRegistry, builtin_tools, tool
from tether.tools.base import MAX_CALL_TIMEOUT_S, TIMES_ITSELF_MARGIN_S
from tether.tools.exec.run import call_limit_s, run_tool


def test_the_setting_parses_durations_and_defaults_to_twenty_minutes() -> None:
    assert AgentConfig().tools.max_timeout_s == MAX_CALL_TIMEOUT_S == 1200.0
    cfg = AgentConfig.model_validate({"tools": {"max_timeout": "45m"}})
    assert cfg.tools.max_timeout_s == 2700.0


def test_an_agent_hands_the_ceiling_to_its_tools(tmp_path: Path) -> None:
    settings = {"tools": {"max_timeout": "45m"}}
    agent = make_agent(ScriptedProvider([]), tmp_path, settings=settings, exact=False)
    assert agent.tool_context.max_timeout_s == 2700.0
    # never below the default limit (as Claude Code's BASH_MAX_TIMEOUT_MS)
    settings = {"tools": {"max_timeout": "1m", "timeout": "5m"}}
    agent = make_agent(ScriptedProvider([]), tmp_path, settings=settings, exact=False)
    assert agent.tool_context.max_timeout_s == 300.0


async def test_a_timeout_argument_is_capped_at_the_setting(ctx: ToolContext) -> None:
    @tool
    async def wait(seconds: float, timeout: float = 5.0) -> str:
        await asyncio.sleep(seconds)
        return "done"

    assert call_limit_s(wait, 10_000, 120, 3600.0) == 3600.0  # above the old constant
    low = replace(ctx, max_timeout_s=0.2)
    t0 = time.monotonic()
    r = await run_tool(ToolRegistry([wait]), make_call("wait", seconds=10, timeout=60), low)
    assert r.block.is_error and r.block.text == "`wait` timed out after 0.2 s"
    assert time.monotonic() - t0 < 5


async def test_bash_follows_the_ceiling_both_ways(ctx: ToolContext) -> None:
    bash = ToolRegistry(builtin_tools()).get("bash")
    assert bash is not None
    # the runner's backstop for `bash` grows with the ceiling (it was a fixed 630 s)
    assert call_limit_s(bash, None, 120, 3600.0) == 3600.0 + TIMES_ITSELF_MARGIN_S
    reg = ToolRegistry(builtin_tools())
    # above the old 600 s cap: accepted (it was a validation error)
    r = await run_tool(reg, make_call("bash", command="echo ok", timeout_s=1800), ctx)
    assert not r.block.is_error and r.block.text.strip() == "ok"
    # a lower ceiling cuts the model's request
    low = replace(ctx, max_timeout_s=0.5)
    t0 = time.monotonic()
    r = await run_tool(reg, make_call("bash", command="sleep 20", timeout_s=30), low)
    assert r.block.is_error and "timed out after 0.5 s" in r.block.text
    assert time.monotonic() - t0 < 10
