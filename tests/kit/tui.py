
"""Shared pieces of the TUI tests: an app over a scripted provider and a stored session."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.subagents import task_tool
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, deterministic
from tether.tools.base import Tool
from tether.tools.builtin.question import question
from tether.tools.builtin.toolset import builtin_tools
from tether.tui.app import TetherApp
from tether.tui.opening import Opened

SIZE = (100, 30)


def scripted_app(
    tmp_path: Path,
    script: Sequence[Response] | Callable[[ModelRequest], Response],
    *,
    store: SessionStore | None = None,
    approval: str = "auto",
    safe: bool = False,
    resume: str | None = None,
    tools: Sequence[Tool] = (),
    settings: dict[str, Any] | None = None,
    task: bool = False,
) -> tuple[TetherApp, ScriptedProvider]:
    """A TetherApp whose agent runs `script` (a list, or a function of the request) in
    `tmp_path` (sessions in `store`, if given); `task`: with the `task` tool."""
    provider = ScriptedProvider(script if callable(script) else list(script))
    config = AgentConfig.model_validate(
        {"tools": {"approval": approval, "safe": safe}, **(settings or {})}
    )
    extra = [task_tool(config.agents)] if task else []

    opened = itertools.count(1)

    def factory(host: Host, resume_id: str | None) -> Opened:
        history = store.load(resume_id).turns if store and resume_id else ()
        writer = None
        if store is not None:
            if resume_id:
                writer = store.open_for_append(resume_id)
            else:
                writer = store.create(None if store.exists("s1") else "s1", cwd=str(tmp_path))
        agent = Agent(
            provider,
            config=config,
            tools=[*builtin_tools(), question, *tools, *extra],
            root=tmp_path,
            host=replace(host, note=None),  # the scripted agent's setup notes are not shown
            session=AgentSession(history=history, sink=writer),
            runtime=deterministic(id_prefix=f"t{next(opened)}"),  # unique across /new, /fork
        )
        return Opened(agent, writer, store=store)

    return TetherApp(factory, resume=resume), provider
