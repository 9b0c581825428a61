"""Opening the TUI's agent through the front door, as `tether run` does.

Owns: `ChatOptions` (the `tether chat` flags), `Opened` (the agent with its session
writer and MCP servers) and `open_agent`, which builds them: `Agent.from_settings` in the
working folder with the TUI's `tether.Host` (event callback, question bridge, approver,
notes), a resumed session or a new one (or none: `tether.agent.sessions.AgentSession`),
the MCP servers; `load_in_background`, the embedded model's load while the app runs.
Does not own: the app (`tether.tui.app`), the settings rules (`tether.agent.assembly.build`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tether.agent.agent import Agent
from tether.agent.assembly.prompting import session_commands
from tether.agent.host import Host
from tether.agent.runtime import Runtime
from tether.agent.sessions import AgentSession
from tether.session import SessionInfo, SessionStore, SessionWriter
from tether.skills.commands import Command

if TYPE_CHECKING:
    from tether.providers.local.provider import LocalProvider


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
    plan: bool = False
    overrides: dict[str, Any] = field(default_factory=dict[str, Any])
    name: str | None = None
    """`--name`: the name given to the session opened first."""
    pick: bool = False
    """`--resume` without an id: open on the session picker."""


@dataclass(slots=True)
class Opened:
    """An agent ready to run, with what must be closed after it."""

    agent: Agent
    writer: SessionWriter | None = None
    store: SessionStore | None = None
    """Where `/sessions` lists and `/fork` creates sessions (None: no session commands)."""
    commands: dict[str, Command] = field(default_factory=dict[str, Command])
    """The session's `/name` commands: prompt files and skills (`tether.skills.commands`)."""

    async def start(self) -> None:
        """Start the MCP servers (their tools join the agent's registry; `Agent.start`)."""
        await self.agent.start()

    async def aclose(self) -> None:
        """Stop the MCP servers and close the session file (idempotent)."""
        await self.agent.aclose()
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.close()


Factory = Callable[[Host, "str | None"], Opened]
"""Builds an `Opened` for the TUI's host callbacks; the second argument is a session id to resume (or None
for a new session). `open_agent` bound to options is the CLI's; tests pass their own."""


def open_agent(
    opts: ChatOptions, host: Host, resume: str | None = None, runtime: Runtime | None = None
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
    if resume:
        session = AgentSession.resume(store, resume)
        assert session.loaded is not None
        if not session.loaded.report.ok and host.note is not None:
            host.note(session.loaded.report.describe())
        started = session.loaded.header.cwd
        if started and Path(started) != root and host.note is not None:
            host.note(f"note: session {resume} was started in {started}; its tools work here, in {root}")
    elif opts.no_session:
        session = AgentSession()
    else:
        session = AgentSession.new(store, cwd=root)
    agent = Agent.from_settings(
        root,
        model=opts.model,
        base_url=opts.base_url,
        overrides=overrides,
        host=host,
        session=session,
        runtime=runtime,
    )
    agent.set_plan_mode(opts.plan)
    session.open()  # a taken id is reported while the TUI opens
    commands = session_commands(root, session.context, warn=host.note or (lambda _l: None))
    return Opened(agent, session.writer, store, commands)


def other_folder(
    rows: Sequence[SessionInfo], resume: str, here: Path
) -> tuple[Path, Path] | None:
    """`(its folder, here)` when session `resume` (an id or a name, among `rows`) was started
    in a folder other than `here` that still exists; else None (open it here)."""
    found = next((r for r in rows if r.id == resume), None) or next(
        (r for r in rows if r.name == resume), None
    )
    if found is None or not found.cwd:
        return None
    there = Path(found.cwd)
    if there == here or not there.is_dir():
        return None
    return there, here


def embedded_model(opened: Opened) -> LocalProvider | None:
    """`opened`'s embedded model, if its agent runs one (a child process to load)."""
    provider = opened.agent.provider
    if provider.name != "local":
        return None
    from tether.providers.local.provider import LocalProvider

    return provider if isinstance(provider, LocalProvider) else None


def load_embedded(opened: Opened) -> str | None:
    """Load `opened`'s embedded model now, if it runs one (its child process starts and loads
    it; blocking); a crash there is returned as a note for the transcript (None: it loaded, or
    there is none)."""
    model = embedded_model(opened)
    if model is not None:
        try:
            model.warm()
        except Exception as exc:
            return f"the embedded model: {exc}"
    return None


LOAD_THREAD = "tether-model-load"
MUTED_THREADS = frozenset({LOAD_THREAD, "tether-local"})
"""The embedded model's threads (its load, its generation worker), whose stderr lines
(`tether: loading …`, `model loaded in …`, `generating…`) a TUI never shows: the footer says it
loads, and once the app quit they would print over the shell."""


class MutedThreads:
    """`sys.stderr` for a TUI process: writes from `MUTED_THREADS` are dropped, all others
    (tether's own lines at exit) go to `inner`."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        if threading.current_thread().name in MUTED_THREADS:
            return len(text)
        return self.inner.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def load_in_background(opened: Opened, done: Callable[[str | None], None]) -> bool:
    """Start loading `opened`'s embedded model in a daemon thread (`load_embedded`), so the
    app paints and takes keys meanwhile; `done` is called on the running event loop with its
    note once the load ended (not at all once that loop is closed). Quitting never waits for
    it: the thread dies with tether, and the model's child process exits when tether does
    (its socket's EOF). The first request waits for a load still under way (the supervisor's
    lock), never starts a second one. False: there is no embedded model (nothing started)."""
    if embedded_model(opened) is None:
        return False
    loop = asyncio.get_running_loop()

    def load() -> None:
        note = load_embedded(opened)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the app is gone
            loop.call_soon_threadsafe(done, note)

    threading.Thread(target=load, name=LOAD_THREAD, daemon=True).start()
    return True
