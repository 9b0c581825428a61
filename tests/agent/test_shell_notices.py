"""A background shell that ends is told to the model at the next request (found by a new user:
after `/tasks stop`, or a build that finished, the model learned nothing unless it polled
`shell_output`): once, with how it ended and its unread bytes; not for a shell the model
stopped itself or read to its end; never shown as a message the user typed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kit.sandbox import sandbox_or_skip
from tether.agent.agent import Agent
from tether.agent.turn.checkpoints import synthetic_user_turn
from tether.messages import TextBlock, Turn
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.exec.run import system_note_block

NOTE = "Background shell bash_1 (echo built; exit 3) ended (exit code 3)"


def _agent(tmp_path: Path, script: list[Any]) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(script)
    agent = Agent(provider, tools=builtin_tools(), root=tmp_path, runtime=deterministic())
    return agent, provider


def _notes(turns: list[Turn]) -> list[str]:
    """The background-shell notes among `turns`' user text blocks."""
    texts = (b.text for t in turns if t.role == "user" for b in t.content if isinstance(b, TextBlock))
    return [text for text in texts if "Background shell" in text]


async def _ended(agent: Agent, shell_id: str) -> None:
    shells = agent.tool_context.shells
    assert shells is not None
    shell = shells.get(shell_id)
    assert shell is not None
    while shell.running:
        await asyncio.sleep(0.02)


async def test_a_shell_that_ends_mid_run_is_told_before_the_next_request(tmp_path: Path) -> None:
    sandbox_or_skip()
    script = [
        call("bash", command="echo built; exit 3", run_in_background=True),
        call("bash", command="sleep 1"),
        call("bash", command="true"),
        "done",
    ]
    agent, provider = _agent(tmp_path, script)
    try:
        await agent.run("build it in the background")
        sent = [[m for m in r.messages] for r in provider.requests]
        assert not _notes(sent[1])  # it was still running when the first result came back
        (note,) = _notes(sent[2])
        assert NOTE in note and "6 bytes of its output unread" in note and "shell_output" in note
        assert _notes(sent[3]) == [note]  # told once: the stored note, no second one
        assert synthetic_user_turn(next(t for t in agent.history if _notes([t])))
    finally:
        await agent.aclose()


async def test_a_shell_that_ended_between_runs_is_told_after_the_next_prompt(
    tmp_path: Path,
) -> None:
    sandbox_or_skip()
    script = [call("bash", command="echo built; exit 3", run_in_background=True), "started", "ok"]
    agent, provider = _agent(tmp_path, script)
    try:
        await agent.run("build it in the background")
        await _ended(agent, "bash_1")
        await agent.run("what now?")
        prompt = [t for t in agent.history if t.role == "user" and "what now?" in t.text]
        assert len(prompt) == 1 and NOTE in prompt[0].text and prompt[0].text.startswith("what now?")
        assert len(_notes(list(provider.requests[-1].messages))) == 1
    finally:
        await agent.aclose()


async def test_no_note_for_a_shell_the_model_stopped(tmp_path: Path) -> None:
    sandbox_or_skip()
    script = [
        call("bash", command="sleep 30", run_in_background=True),
        call("shell_kill", shell_id="bash_1"),
        "done",
        "ok",
    ]
    agent, provider = _agent(tmp_path, script)
    try:
        await agent.run("go")
        await agent.run("and?")
        assert not [n for r in provider.requests if (n := _notes(list(r.messages)))]
    finally:
        await agent.aclose()


async def test_a_shell_the_user_stopped_is_told_as_such(tmp_path: Path) -> None:
    sandbox_or_skip()
    script = [call("bash", command="sleep 30", run_in_background=True), "started", "ok"]
    agent, provider = _agent(tmp_path, script)
    try:
        await agent.run("serve")
        shells = agent.tool_context.shells
        assert shells is not None
        await shells.kill("bash_1")  # `/tasks stop bash_1`
        await agent.run("is it still up?")
        (note,) = _notes(list(provider.requests[-1].messages))
        assert "Background shell bash_1 (sleep 30) was stopped by the user." in note
    finally:
        await agent.aclose()


def test_a_note_is_the_harness_s_turn_not_the_user_s() -> None:
    """The rewind picker and the checkpoints' latest user message leave a note out."""
    assert synthetic_user_turn(Turn(id="n", role="user", content=(system_note_block("x"),)))
