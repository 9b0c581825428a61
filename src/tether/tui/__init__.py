"""The interactive session (`tether` / `tether chat`): a Textual app over one agent.

Owns: `run_tui(options)`, the CLI's way in. Modules: `app` (the app), `opening` (building the
agent through the front door), `widgets`, `screens` (approval prompt, question overlay),
`commands` (slash commands, keys; pure).
"""

from __future__ import annotations

from tether.tui.opening import ChatOptions


def run_tui(options: ChatOptions) -> int:
    """Run the interactive session until the user quits; returns the exit code: 0, or 1 when
    it could not start an agent (the reason is repeated on stderr once the screen is gone)."""
    from dataclasses import replace
    from pathlib import Path

    from tether.agent.host import Host
    from tether.session import SessionStore
    from tether.session.names import NAME_EVENT
    from tether.tui.app import TetherApp
    from tether.tui.opening import Opened, open_agent, other_folder
    from tether.tui.pickers import Choice, session_choices

    names = [options.name] if options.name else []

    def factory(host: Host, resume: str | None) -> Opened:
        where = app.open_in  # the session's own folder, when the user picked it at start
        opened = open_agent(options if where is None else replace(options, cwd=where), host, resume)
        if names and opened.writer is not None:  # `--name`: the first session opened
            opened.writer.append_event(NAME_EVENT, {"name": names.pop()})
        return opened

    def pick() -> list[Choice]:
        return session_choices(SessionStore().list(), options.cwd.resolve())

    def elsewhere(resume: str) -> tuple[Path, Path] | None:
        return other_folder(SessionStore().list(), resume, options.cwd.resolve())

    app = TetherApp(
        factory,
        resume=options.resume,
        pick=pick if options.pick else None,
        elsewhere=elsewhere,
    )
    import sys
    from typing import TextIO, cast

    from tether.tui.opening import MutedThreads

    # the embedded model's load and generation lines never reach the terminal: while the app
    # runs the footer says it loads; after `/quit` they printed over the shell
    sys.stderr = cast(TextIO, MutedThreads(sys.stderr))
    app.preopen()  # the agent built before Textual owns the terminal; a model loads after
    code = app.run()
    if code and app.start_error is not None:
        print(f"tether: {app.start_error}", file=sys.stderr, flush=True)
    return code if isinstance(code, int) else 0
