"""SIGINT/SIGTERM during a headless run: exit 130, the partial turn persisted first; and secrets
from the harness environment never reach the session file (T31)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tether import Runtime
from tether.agent.agent import Agent
from tether.agent.sessions import CANCELLED_RUNNING, AgentSession
from tether.cli.run import _drive  # pyright: ignore[reportPrivateUsage]
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools

pytestmark = pytest.mark.usefixtures("handlers_back")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_cancels_with_130_and_persists_the_killed_call(tmp_path: Path, sig: int) -> None:
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    agent = Agent(
        ScriptedProvider([call("bash", id="b1", command="sleep 30")]),
        tools=builtin_tools(),
        root=tmp_path,
        session=AgentSession(sink=writer),
    )

    async def main() -> int:
        asyncio.get_running_loop().call_later(0.5, os.kill, os.getpid(), sig)
        return await _drive(agent, "sleep please")

    assert asyncio.run(main()) == 130
    loaded = store.load(writer.id)
    roles = [t.role for t in loaded.turns]
    assert roles == ["user", "assistant", "user"]
    (result,) = loaded.turns[-1].tool_results
    assert result.tool_call_id == "b1" and result.is_error and result.text == CANCELLED_RUNNING


def test_t31_harness_keys_never_reach_the_session_file(tmp_path: Path) -> None:
    secret = "sk-ant-REDACTEDVALUE-0123456789abcdef"
    (tmp_path / ".env").write_text("DB_PASSWORD=hunter2hunter2\n")
    store = SessionStore(tmp_path / "store")
    writer = store.create(cwd=str(tmp_path))
    provider = ScriptedProvider(
        [
            call("read", path=".env"),
            call("grep", pattern="DB_PASS"),
            call("bash", command="env | grep -i -E 'password|key|token'; echo done"),
            "ok",
        ]
    )
    agent = Agent(
        provider,
        tools=builtin_tools(),
        root=tmp_path,
        session=AgentSession(sink=writer),
        runtime=Runtime(
            env={
                "ANTHROPIC_API_KEY": secret,
                "HF_TOKEN": "hf_abcdefghijklmnop",
                "PATH": os.environ["PATH"],
            }
        ),
    )
    asyncio.run(agent.run("show env"))
    text = writer.path.read_text()
    assert secret not in text and "hf_abcdefghijklmnop" not in text and "hunter2hunter2" not in text
    refused = agent.history[2].tool_results[0]
    assert refused.is_error and ".env" in refused.text  # T31 call 1: denied by default
    assert "hunter2hunter2" not in agent.history[4].tool_results[0].text  # grep skips it too
    assert "done" in agent.history[6].tool_results[0].text
    for request in provider.requests:
        assert secret not in repr(request.messages)


ENTRY_WITH = """
import os, signal, sys, time
import tether.cli.main as cli

def fake():
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises KeyboardInterrupt here
        time.sleep(5)
    except KeyboardInterrupt as exc:
        {on_interrupt}
    sys.exit(0)

cli.main = fake
from tether.cli.entry import main
main()
"""


@pytest.mark.parametrize(
    "on_interrupt",
    [
        # a library wraps the KeyboardInterrupt in its own error (pydantic building a schema
        # while the provider SDKs import raised SchemaError)
        "raise RuntimeError('Event loop stopped before Future completed') from exc",
        "pass  # swallowed: the cancel reached a run that had just finished",
    ],
)
def test_a_signal_always_ends_the_process_with_130_and_no_traceback(on_interrupt: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", ENTRY_WITH.format(on_interrupt=on_interrupt)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "tether: cancelled" in done.stderr
