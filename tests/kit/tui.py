
"""The TUI tests' pieces: an app over a scripted provider and a stored session (or over a real
provider: `provider_app`), and the Pilot
helpers (send a prompt, wait for a condition or for the agent to go idle, read notes/status)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.subagents import task_tool
from tether.providers.base import ModelRequest, Provider
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, deterministic
from tether.tools.base import Tool
from tether.tools.builtin.question import question
from tether.tools.builtin.toolset import builtin_tools
from tether.tui.app import TetherApp
from tether.tui.opening import Opened
from tether.tui.status import StatusBar
from tether.tui.widgets import NoteRow, PromptInput

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
        loaded = store.load(resume_id) if store and resume_id else None
        history = loaded.turns if loaded is not None else ()
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
            session=AgentSession(history=history, sink=writer, loaded=loaded),
            runtime=deterministic(id_prefix=f"t{next(opened)}"),  # unique across /new, /fork
        )
        return Opened(agent, writer, store=store)

    return TetherApp(factory, resume=resume), provider


def provider_app(
    tmp_path: Path,
    provider: Provider,
    store: SessionStore,
    *,
    config: AgentConfig | None = None,
    tools: Sequence[Tool] = (),
) -> TetherApp:
    """A TetherApp whose agent talks to a real `provider` in `tmp_path`, its session `s1` in
    `store` (the setup notes not shown)."""

    def factory(host: Host, resume_id: str | None) -> Opened:
        writer = store.create("s1", cwd=str(tmp_path))
        agent = Agent(
            provider,
            config=config or AgentConfig(),
            tools=tools,
            root=tmp_path,
            host=replace(host, note=None),
            session=AgentSession(history=(), sink=writer),
        )
        return Opened(agent, writer, store=store)

    return TetherApp(factory)


async def until(pilot: Pilot[Any], check: Callable[[], object], timeout_s: float = 10) -> None:
    """Let the app run (`pilot.pause()`) until `check()` holds.

    Raises:
        AssertionError: it did not within `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        await pilot.pause()
        if check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached in {timeout_s}s")
        await asyncio.sleep(0.005)


async def idle(app: TetherApp, pilot: Pilot[Any]) -> None:
    """Until the agent is no longer busy (and the screen caught up)."""
    await until(pilot, lambda: not app.busy)
    await pilot.pause()


async def send(pilot: Pilot[Any], text: str) -> None:
    """Type `text` into the prompt and press enter."""
    prompt = pilot.app.query_one(PromptInput)
    prompt.text = text
    await pilot.press("enter")
    await pilot.pause()


def notes(app: TetherApp) -> str:
    """The note rows' text, one per line."""
    return "\n".join(str(n.render()) for n in app.query(NoteRow))


def status(app: TetherApp) -> str:
    """The status bar's text."""
    return str(app.query_one(StatusBar).render())


QUESTIONS: list[dict[str, Any]] = [
    {
        "header": "Plan",
        "question": "Which plan?",
        "options": [
            {"label": "small", "description": "one file", "preview": "PREVIEW-SMALL"},
            {"label": "big", "description": "many files"},
        ],
    },
    {
        "header": "Parts",
        "question": "Which parts?",
        "multi_select": True,
        "options": [{"label": "api"}, {"label": "cli"}, {"label": "docs"}],
    },
    {"header": "Name", "question": "Name?", "options": [{"label": "a"}, {"label": "b"}]},
]
"""Three questions for the `question` tool (a single-select with a preview, a multi-select, a
plain one): the question overlay tests' script."""
