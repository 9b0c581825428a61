"""The interactive session (`tether` / `tether chat`): a Textual app over one agent.

Owns: `run_tui(options)`, the CLI's way in. Modules: `app` (the app), `opening` (building the
agent through the front door), `widgets`, `screens` (approval prompt, question overlay),
`commands` (slash commands, keys; pure).
"""

from __future__ import annotations

from tether.tui.opening import ChatOptions


def run_tui(options: ChatOptions) -> int:
    """Run the interactive session until the user quits; returns the exit code (0)."""
    from tether.agent.host import Host
    from tether.tui.app import TetherApp
    from tether.tui.opening import Opened, open_agent

    def factory(host: Host, resume: str | None) -> Opened:
        return open_agent(options, host, resume)

    app = TetherApp(factory, resume=options.resume)
    app.preopen()  # before Textual owns the terminal: model loading may print or redirect fds
    code = app.run()
    return code if isinstance(code, int) else 0
