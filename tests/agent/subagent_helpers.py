"""Shared helpers for the subagent and hook tests: a scripted provider routed by task, agents
built through the front door, a session store under the test's folder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tether import Agent, AgentConfig
from tether.agent.subagents import task_tool
from tether.messages import TextBlock, Turn
from tether.providers.base import ModelRequest
from tether.sandbox.detect import available
from tether.testing import Response, ScriptedProvider, deterministic
from tether.tools.base import Tool


def first_user_text(turns: Sequence[Turn]) -> str:
    for t in turns:
        if t.role == "user":
            return "".join(b.text for b in t.content if isinstance(b, TextBlock))
    return ""


def routed(plan: dict[str, list[Response]]) -> Callable[[ModelRequest], Response]:
    """A script keyed by the request's first user text (which agent is asking), then by how many
    assistant turns the request already holds (which step of that agent it is)."""

    def respond(request: ModelRequest) -> Response:
        key = first_user_text(request.messages)
        step = sum(1 for t in request.messages if t.role == "assistant")
        return plan[key][step]

    return respond


def sandbox_kind() -> str:
    sandbox = available("bwrap") or available("landlock")
    if sandbox is None:
        pytest.skip("no OS sandbox works on this machine")
    return sandbox.kind


def make_agent(
    provider: ScriptedProvider,
    root: Path,
    *,
    tools: Sequence[Tool] = (),
    settings: dict[str, Any] | None = None,
    **kw: Any,
) -> Agent:
    cfg = AgentConfig.model_validate(
        {"tools": {"sandbox": sandbox_kind(), "approval": "auto"}, **(settings or {})}
    )
    return Agent(
        provider,
        config=cfg,
        tools=[*tools, task_tool(cfg.agents)],
        root=root,
        runtime=deterministic(),
        **kw,
    )
