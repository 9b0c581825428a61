"""The final answer in a schema (`run.output_schema`) and the tool-call cap
(`run.max_tool_calls`): issue 39, audit rows 5 and 4."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from tether.agent.events import AgentEvent, DoneEvent, WarningEvent
from tether.agent.turn.output_schema import load_schema, parse_answer
from tether.agent.turn.tool_limit import LIMIT_REACHED
from tether.errors import ConfigError
from tether.messages import TextBlock
from tether.testing import Reply, ScriptedProvider, call
from tether.tools.base import tool

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def _user_texts(provider: ScriptedProvider, i: int) -> list[str]:
    last = provider.requests[i].messages[-1]
    return [b.text for b in last.content if isinstance(b, TextBlock)]


async def test_an_invalid_answer_is_asked_again_and_the_valid_one_is_structured(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(
        ["Sure! Here it is.", '{"name": "Ada"}', '```json\n{"name": "Ada", "age": 36}\n```']
    )
    events: list[AgentEvent] = []
    agent = make_agent(
        provider, tmp_path, settings={"run": {"output_schema": SCHEMA}}, events=events
    )
    result = await agent.run("who?")
    assert result.stop_reason == "end_turn" and result.turns == 3
    assert result.structured == {"name": "Ada", "age": 36}
    (first,) = _user_texts(provider, 1)
    assert "not JSON" in first and '"required"' in first  # the error and the schema
    (second,) = _user_texts(provider, 2)
    assert "'age' is a required property" in second
    done = [e for e in events if isinstance(e, DoneEvent)]
    assert done[-1].structured == {"name": "Ada", "age": 36}


async def test_retries_spent_stop_with_schema_invalid(tmp_path: Path) -> None:
    provider = ScriptedProvider(["no", "still no"])
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps(SCHEMA))
    settings = {"run": {"output_schema": "s.json", "output_schema_retries": 1}}
    agent = make_agent(provider, tmp_path, settings=settings)
    result = await agent.run("who?")
    assert result.stop_reason == "schema_invalid" and result.turns == 2
    assert result.structured is None


async def test_without_a_schema_nothing_is_asked_again(tmp_path: Path) -> None:
    agent = make_agent(ScriptedProvider(["free text"]), tmp_path)
    result = await agent.run("hi")
    assert result.stop_reason == "end_turn" and result.structured is None


def test_bad_schemas_are_one_line_config_errors(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{nope")
    for value, words in (
        ("missing.json", "cannot read"),
        ("broken.json", "not JSON"),
        ({"type": 12}, "not a valid JSON Schema"),
    ):
        with pytest.raises(ConfigError, match=words):
            load_schema(value, tmp_path)


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4))
def test_parse_answer_accepts_exactly_what_validates(value: dict[str, Any]) -> None:
    parsed, why = parse_answer(json.dumps(value), SCHEMA)
    valid = isinstance(value.get("name"), str) and isinstance(value.get("age"), int)
    assert (why is None) == valid
    assert parsed == (value if valid else None)


# -- run.max_tool_calls -------------------------------------------------------------------


def _counter() -> tuple[list[str], Any]:
    ran: list[str] = []

    def note(text: str) -> str:
        """Note text."""
        ran.append(text)
        return "noted"

    return ran, tool(note)


async def test_the_call_that_would_pass_the_cap_is_not_run(tmp_path: Path) -> None:
    ran, note = _counter()
    script: list[Any] = [
        call("note", text="a"),
        Reply(blocks=(call("note", id="c2", text="b"), call("note", id="c3", text="c"))),
    ]
    provider = ScriptedProvider(script)
    events: list[AgentEvent] = []
    agent = make_agent(
        provider, tmp_path, tools=[note], settings={"run": {"max_tool_calls": 2}}, events=events
    )
    result = await agent.run("go")
    assert ran == ["a", "b"]
    assert result.stop_reason == "max_tool_calls" and result.turns == 2
    held = [r for t in agent.history for r in t.tool_results if r.tool_call_id == "c3"]
    assert len(held) == 1 and held[0].is_error
    assert held[0].text == LIMIT_REACHED.format(cap=2)
    assert any(isinstance(e, WarningEvent) and e.kind == "max_tool_calls" for e in events)
    # the session stays well-formed: the next run goes on from it
    script.append("done")
    again = await agent.run("and?")
    assert again.stop_reason == "end_turn"


async def test_a_cap_of_zero_runs_nothing_and_a_final_answer_is_not_stopped(
    tmp_path: Path,
) -> None:
    ran, note = _counter()
    agent = make_agent(
        ScriptedProvider([call("note", text="a")]),
        tmp_path,
        tools=[note],
        settings={"run": {"max_tool_calls": 0}},
    )
    result = await agent.run("go")
    assert ran == [] and result.stop_reason == "max_tool_calls"
    ran, note = _counter()
    agent = make_agent(
        ScriptedProvider([call("note", text="a"), "ok"]),
        tmp_path,
        tools=[note],
        settings={"run": {"max_tool_calls": 1}},
    )
    result = await agent.run("go")
    assert ran == ["a"] and result.stop_reason == "end_turn"


# -- subagents: the schema and the cap are the main agent's ------------------------------


async def test_a_subagent_answers_freely_and_its_calls_are_not_counted(tmp_path: Path) -> None:
    from kit.agents import routed, subagent_agent
    from tether.agent.subagents import TASK_TOOL

    provider = ScriptedProvider(
        routed(
            {
                "who?": [
                    call(TASK_TOOL, id="c1", name="look", prompt="find out"),
                    '{"name": "Ada", "age": 36}',
                ],
                "find out": [call("ls", path="."), "It is Ada, 36."],
            }
        )
    )
    settings = {"run": {"output_schema": SCHEMA, "max_tool_calls": 1}}
    agent = subagent_agent(provider, tmp_path, settings=settings)
    result = await agent.run("who?")
    assert result.stop_reason == "end_turn", result
    assert result.structured == {"name": "Ada", "age": 36}
    assert len(provider.requests) == 4  # no schema retry in the child, no cap on its `ls`
