"""The TUI after a fatal start-up error (a malformed settings file, a session that will not
open): the reason is shown, the app stays up until the user quits, and the exit code is 1
(docs/settings.md, docs/tui.md), not 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.tui import SIZE, notes, until
from tether.agent.host import Host
from tether.errors import ConfigError, SessionError
from tether.tui.app import TetherApp
from tether.tui.opening import Opened

MALFORMED = ".tether/settings.json: malformed JSON at line 1, column 2: Expecting value"


def _failing(exc: Exception) -> TetherApp:
    def factory(host: Host, resume: str | None) -> Opened:
        raise exc

    return TetherApp(factory)


@pytest.mark.parametrize("preopen", [True, False], ids=["preopened", "opened-in-app"])
@pytest.mark.parametrize(
    "exc",
    [ConfigError(MALFORMED), SessionError("session x is locked")],
    ids=["config", "session"],
)
async def test_quitting_after_a_failed_start_exits_1(
    tmp_path: Path, preopen: bool, exc: Exception
) -> None:
    app = _failing(exc)
    if preopen:  # as `run_tui` does, before Textual owns the terminal
        app.preopen()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: str(exc) in notes(app))
        assert app.is_running  # the reason stays on screen until the user quits
        await pilot.press("ctrl+c")
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value == 1
    assert app.start_error is not None and app.start_error.endswith(str(exc))
    assert app.start_error.startswith(("cannot start the agent: ", "cannot open the session: "))
