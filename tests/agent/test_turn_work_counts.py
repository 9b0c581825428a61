"""What one tool turn of the loop does, counted (issue 38: fewer Python calls per turn): a
scripted run of plain tool turns reads each reply's calls (`Turn.tool_calls`, a new tuple per
read) a fixed few times, and the todo policy looks for a todo list only in a turn that calls
`todo`. Each count failed before its cut."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.agent.turn import todo_policy
from tether.messages import ToolCallBlock, Turn
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call
from tether.tools.base import tool
from tether.tools.builtin.todo import todo

TURNS = 30


def echo(text: str) -> str:
    """Echo."""
    return text


def _run(tmp_path: Path) -> None:
    def model(request: ModelRequest) -> Response:
        k = len(provider.requests)
        return "done" if k == TURNS else call("echo", id=f"c{k}", text=f"turn {k}")

    provider = ScriptedProvider(model)
    store = SessionStore(tmp_path / "data" / "sessions")
    agent = Agent(
        provider,
        tools=[tool(echo, inline=True), todo],
        root=str(tmp_path),
        session=AgentSession.new(store, cwd=tmp_path),
        config=AgentConfig.model_validate({"run": {"max_turns": TURNS + 1}}),
    )
    result = asyncio.run(agent.run("go"))
    assert result.text == "done"


def test_a_tool_turn_builds_its_calls_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop and each policy read a reply's calls (~14 reads per tool turn); the tuples
    they get: one per reply (and per its view turn, read by the shaping passes), not one per
    read."""
    got: list[tuple[ToolCallBlock, ...]] = []  # kept alive: distinct objects stay distinct
    real = Turn.tool_calls

    def counted(self: Turn) -> tuple[ToolCallBlock, ...]:
        calls = real.fget(self)  # pyright: ignore[reportOptionalCall]
        got.append(calls)
        return calls

    monkeypatch.setattr(Turn, "tool_calls", property(counted))
    _run(tmp_path)
    built = len({id(c) for c in got if c})  # the empty tuple is one object anyway
    assert len(got) > 10 * TURNS  # read that often
    assert built <= 2 * TURNS  # a tuple per reply and view turn read (a read each before)


def test_repeated_reads_give_the_same_tuple() -> None:
    turn = Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name="x", arguments={}),))
    other = Turn(id="b", role="assistant", content=(ToolCallBlock(id="d", name="x", arguments={}),))
    first = turn.tool_calls
    assert turn.tool_calls is first
    assert other.tool_calls == (other.content[0],)
    assert turn.tool_calls == first == (turn.content[0],)


def test_the_todo_policy_looks_for_a_list_only_in_a_todo_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looks = [0]
    real = todo_policy.latest_todo

    def counted(history: tuple[Turn, ...]) -> object:
        looks[0] += 1
        return real(history)

    monkeypatch.setattr(todo_policy, "latest_todo", counted)
    _run(tmp_path)
    assert looks[0] == 0  # one per tool turn before


def test_a_tool_reply_s_stream_events_are_not_tested_four_times_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Attempts._attempt` turns text and thinking deltas, warnings and environment notices
    into agent events; the other events of a stream (a tool call's start, delta and end, the
    usage, the end) only feed the assembler: one set lookup each, not four isinstance tests."""
    from tether.agent.turn import attempts
    from tether.providers.base import EnvNotice, StreamWarning, TextDelta, ThinkingDelta

    tests = [0]

    def counted(obj: object, cls: Any) -> bool:
        tests[0] += 1
        return isinstance(obj, cls)

    monkeypatch.setattr(attempts, "isinstance", counted, raising=False)
    _run(tmp_path)
    assert tests[0] <= 3 * TURNS  # the replies' results and the text delta (~18 a turn before)
    for cls in (TextDelta, ThinkingDelta, StreamWarning, EnvNotice):  # the lookup's premise
        assert cls.__subclasses__() == []
