"""Opening the TUI's agent through the front door, as `tether run` does.

Owns: `ChatOptions` (the `tether chat` flags), `Hooks` (what the TUI hands the agent: the
event callback, the question bridge, the approver), `Opened` (the agent with its session
writer and MCP servers) and `open_agent`, which builds them: `Agent.from_settings` in the
working folder, a resumed session or a new one (or none) through `tether.agent.sessions`,
the MCP servers.
Does not own: the app (`tether.tui.app`), the settings rules (`tether.agent.build`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.agent.approval import Approver
from tether.agent.events import AgentEvent
from tether.agent.loop import Agent
from tether.agent.runtime import Runtime
from tether.agent.sessions import load_for_resume, open_session
from tether.session import SessionStore, SessionWriter
from tether.tools.builtin.question import question
from tether.tools.context import QuestionBridge


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatOptions:
    """`tether chat`'s flags (None: the setting or the default)."""

    model: str | None = None
    base_url: str | None = None
    resume: str | None = None
    cwd: Path = Path(".")
    no_session: bool = False
    safe: bool = False
    network: bool = False
    overrides: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True, slots=True)
class Hooks:
    """The TUI's callbacks for the agent."""

    on_event: Callable[[AgentEvent], None]
    questions: QuestionBridge
    approver: Approver
    note: Callable[[str], None]


@dataclass(slots=True)
class Opened:
    """An agent ready to run, with what must be closed after it."""

    agent: Agent
    writer: SessionWriter | None = None
    store: SessionStore | None = None
    """Where `/sessions` lists and `/fork` creates sessions (None: no session commands)."""

    async def start(self) -> None:
        """Start the MCP servers (their tools join the agent's registry; `Agent.start`)."""
        await self.agent.start()

    async def aclose(self) -> None:
        """Stop the MCP servers and close the session file (idempotent)."""
        await self.agent.aclose()
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.close()


Factory = Callable[[Hooks, "str | None"], Opened]
"""Builds an `Opened` for the hooks; the second argument is a session id to resume (or None
for a new session). `open_agent` bound to options is the CLI's; tests pass their own."""


def open_agent(
    opts: ChatOptions, hooks: Hooks, resume: str | None = None, runtime: Runtime | None = None
) -> Opened:
    """The agent `tether run` would build in `opts.cwd`, with the TUI's hooks and the
    `question` tool.

    Raises:
        ConfigError / AuthError: settings or model invalid. SessionError: `resume` not found.
    """
    overrides = dict(opts.overrides)
    if opts.safe:
        overrides["tools.safe"] = True
    if opts.network:
        overrides["tools.network"] = True
    root = opts.cwd.resolve()
    store = SessionStore()
    resume = resume or opts.resume
    resumed = load_for_resume(store, resume) if resume else None
    if resumed is not None and not resumed.loaded.report.ok:
        hooks.note(resumed.loaded.report.describe())
    agent = Agent.from_settings(
        root,
        model=opts.model,
        base_url=opts.base_url,
        overrides=overrides,
        history=resumed.history if resumed else (),
        on_event=hooks.on_event,
        question_bridge=hooks.questions,
        approver=hooks.approver,
        runtime=runtime,
        note=hooks.note,
    )
    if "question" not in agent.registry:
        agent.registry.add(question)
    writer: SessionWriter | None = None
    if resumed is not None or not opts.no_session:
        writer = open_session(agent, store, resumed=resumed, cwd=root)
    return Opened(agent, writer, store)
