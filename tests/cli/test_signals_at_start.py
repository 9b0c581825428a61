"""SIGINT / SIGTERM while a run starts print the one `tether: cancelled` line and exit 130
(docs/cli.md: every cancellation says so). Without the fix a signal during the start-up of the
command (its lazy imports, the settings, the agent's construction) was silent: typer turns the
`KeyboardInterrupt` into a quiet exit 130.

Real `tether run` processes against a loopback model server (`kit.faultserver`). As in
`test_signals_at_close.py`, the child pauses at one instant of the start (a hook around the code
running there) and tells the test, which sends the signal, then lets it go on: each instant is
hit every time, not by timing.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from kit.cli import cli_env
from kit.faultserver import FaultServer, text
from kit.paused import PAUSE, signal_at

CHILD = PAUSE + r"""
import functools

def before(owner, name):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        pause()
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)

class Importing:  # pauses as `tether.cli.run` is first imported (the command's lazy import)
    def find_spec(self, name, path=None, target=None):
        if name == "tether.cli.run":
            sys.meta_path.remove(self)
            pause()
        return None

if point == "import":
    sys.meta_path.insert(0, Importing())
elif point == "settings":
    import tether.settings.trust
    before(tether.settings.trust, "trusted_settings")
elif point == "build":
    import tether.cli.run
    before(tether.cli.run, "_build")
elif point == "start":
    from tether.agent.agent import Agent
    original = Agent.start

    async def start(self):
        pause()
        await original(self)

    Agent.start = start

from tether.cli import entry

sys.argv = ["tether", *sys.argv[3:]]
entry.main()
"""

POINTS = ["import", "settings", "build", "start"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("point", POINTS)
def test_a_signal_while_the_run_starts_says_cancelled(tmp_path: Path, point: str, sig: int) -> None:
    home, work, marks = tmp_path / "home", tmp_path / "work", tmp_path / "marks"
    work.mkdir()
    marks.mkdir()
    with FaultServer([text("the answer")]) as server:
        args = ["run", "--model", "openai/m", "--base-url", server.openai_url, "hi"]
        env = cli_env(home, OPENAI_API_KEY="sk-test")
        code, out, errs = signal_at(
            CHILD, point, marks, args, cwd=work, env=env, sig=sig, stdin=subprocess.DEVNULL
        )
        assert not server.requests  # cancelled before the model was asked
    assert code == 130, (out, errs)
    assert "Traceback" not in errs and "KeyboardInterrupt" not in errs, errs
    assert errs.splitlines().count("tether: cancelled") == 1, errs
