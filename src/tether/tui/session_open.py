"""Opening a session in the app: at start (built before the app runs, or once the session is
picked) and on `/new`, `/resume`, `/fork`, `/model`.

Owns: `Opening` (building the app's agent through its factory, ahead of the app (`preopen`:
errors shown once the app is up) or in it (`build`), the notes kept for the start meanwhile and
the one-line reason a session could not open), `show_session` (the opened session on screen:
its history's rows, the start's notes after them (showing the history clears the transcript),
the opening panel of a new session, its MCP servers started).
Does not own: building the agent (`tether.tui.opening`), the rows (`tether.tui.rows`), the
app's state (`tether.tui.app`).
"""

from __future__ import annotations

from tether.agent.host import Host
from tether.agent.sessions import stored_host_outputs
from tether.errors import ConfigError
from tether.tui.host import AppHost
from tether.tui.opening import Factory, Opened
from tether.tui.rows import history_rows, stored_subagents
from tether.tui.welcome import Welcome


class Opening:
    """Building the app's agent for `host` with `factory`.

    Attributes:
        pending: notes for the start, shown once a session is on screen.
    """

    def __init__(self, factory: Factory, host: Host) -> None:
        self.factory = factory
        self.host = host
        self.pending: list[str] = []
        self._preopened: Opened | None = None
        self._failed = False

    def preopen(self, resume: str | None) -> str | None:
        """Build the agent now, before the app runs; why it could not (kept for the start), or
        None."""
        try:
            self._preopened = self.factory(self.host, resume)
        except Exception as exc:
            error = f"cannot start the agent: {exc}"
            self.pending.append(error)
            self._failed = True
            return error
        return None

    def build(self, resume: str | None) -> tuple[Opened | None, str | None, list[str]]:
        """The session to open (new, or `resume`; the preopened one first), why it could not
        open (None: it opened, or the preopen's reason stands), and the notes for the start."""
        pending, self.pending = self.pending, []
        if self._failed:
            self._failed = False
            return None, None, pending
        try:
            if self._preopened is not None:
                opened, self._preopened = self._preopened, None
                return opened, None, pending
            return self.factory(self.host, resume), None, pending
        except (ConfigError, OSError) as exc:
            return None, f"cannot start the agent: {exc}", pending
        except Exception as exc:  # SessionError and the like: said, the app stays up
            return None, f"cannot open the session: {exc}", pending


async def show_session(app: AppHost, opened: Opened, pending: list[str]) -> None:
    """Show `opened`'s history (subagents' runs nested, host outputs), then the `pending` notes,
    then for a new session the opening panel."""
    agent = opened.agent
    subagents = stored_subagents(opened.store, agent.session.id)
    loaded = agent.session.loaded
    outputs = stored_host_outputs(loaded.events) if loaded is not None else ()
    await app.transcript.show_history(history_rows(agent.history, subagents, outputs))
    for line in pending:
        app.note(line)
    if not agent.history:  # a new session opens on where you are and what was loaded
        app.transcript.add(Welcome(agent))


async def start_servers(app: AppHost, opened: Opened) -> None:
    """Start `opened`'s MCP servers (a failure is a warning note)."""
    try:
        await opened.start()
    except Exception as exc:
        app.note(f"warning: MCP servers did not start: {exc}")
