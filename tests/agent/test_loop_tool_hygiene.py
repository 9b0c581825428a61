"""The loop with tool system notes, display values, block-after-N and stale-read notices (scripted
provider); the results turn stays pairing-clean on every target."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.assembly.assemble import assemble
from tether.agent.events import AgentEvent, ToolResultEvent, event_to_dict
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.settings import AgentConfig
from tether.testing import Reply, ScriptedProvider, call
from tether.tools import DedupRule, HygieneConfig, builtin_tools, tool
from tether.tools.exec.hygiene import shell_key
from tether.wire import build_view, check_pairing


@tool
def lint(path: str) -> dict[str, object]:
    """Lint a file."""
    return {
        "result": f"{path}: 2 warnings",
        "system": "the linter config is strict in this repo",
        "display": {"warnings": [1, 2]},
    }


@tool
def fmt(path: str) -> dict[str, object]:
    """Format a file."""
    return {"result": "formatted", "system": ["note B", "the linter config is strict in this repo"]}


async def test_system_notes_follow_all_results_and_display_only_in_events(tmp_path: Path) -> None:
    calls = (
        ToolCallBlock(id="a", name="lint", arguments={"path": "x.py"}),
        ToolCallBlock(id="b", name="fmt", arguments={"path": "x.py"}),
    )
    provider = ScriptedProvider([Reply(blocks=calls), "done"])
    events: list[AgentEvent] = []
    agent = Agent(
        provider,
        tools=[lint, fmt],
        root=tmp_path,
        host=Host(on_event=events.append),
    )
    await agent.run("check x.py")
    results_turn = agent.history[2]
    assert [b.type for b in results_turn.content] == ["tool_result", "tool_result", "text", "text"]
    assert results_turn.content[2] == TextBlock(
        text="<system-reminder>\nthe linter config is strict in this repo\n</system-reminder>"
    )
    assert results_turn.content[3] == TextBlock(
        text="<system-reminder>\nnote B\n</system-reminder>"
    )  # the repeated note is rendered once
    stored = repr(agent.history)
    assert "warnings': [1, 2]" not in stored and "[1, 2]" not in stored
    shown = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [e.display for e in shown] == [{"warnings": [1, 2]}, None]
    assert event_to_dict(shown[0])["display"] == {"warnings": [1, 2]}
    # the model saw the notes (in the wire view of the second request), not the display
    sent = provider.requests[1].messages[-1]
    assert sent.content[2:] == results_turn.content[2:]
    assert "[1, 2]" not in repr(provider.requests[1])
    for target in ("anthropic", "openai-chat", "openai-responses", "google"):
        view = build_view(agent.history, target)
        assert check_pairing(view) == []
        assert view[2].content == results_turn.content  # nothing was moved or repaired


async def test_block_after_n_in_the_loop(tmp_path: Path) -> None:
    script = [call("bash", command=c) for c in ["echo hi", "cd . && echo  hi", "echo hi"]]
    provider = ScriptedProvider([*script, "gave up"])
    hygiene = HygieneConfig(dedup={"bash": DedupRule(policy="block", after=2, key=shell_key)})
    session = AgentSession()
    parts = assemble(
        AgentConfig(), (provider,), builtin_tools(), root=tmp_path, session=session, hygiene=hygiene
    )
    agent = Agent.from_parts(parts, session)
    await agent.run("loop")
    results = [t.tool_results[0] for t in agent.history if t.tool_results]
    assert [r.text for r in results[:2]] == ["hi", "hi"]
    assert results[2].is_error and results[2].text.startswith("Blocked: ")


async def test_stale_read_notice_after_editing_a_file_read_before(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    provider = ScriptedProvider(
        [
            call("read", path="a.txt"),
            call("edit", path="a.txt", old_string="two", new_string="2"),
            call("edit", path="a.txt", old_string="one", new_string="1"),
            "done",
        ]
    )
    agent = Agent(provider, tools=builtin_tools(), root=tmp_path)
    await agent.run("edit it")
    results_turns = [t for t in agent.history if t.tool_results]
    notes = [[b.text for b in t.content if isinstance(b, TextBlock)] for t in results_turns]
    assert notes[0] == []
    assert len(notes[1]) == 1 and "file a.txt changed since you read it" in notes[1][0]
    assert notes[2] == []  # one notice per read → edit
    assert (tmp_path / "a.txt").read_text() == "1\n2\n"


async def test_folder_tool_runs_in_a_worker_through_the_loop(tmp_path: Path) -> None:
    from tether.tools.scan import scan_tool_folders

    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "pid.py").write_text(
        "import os\nfrom tether.tools import tool\n"
        "@tool\ndef pid() -> dict:\n    '''The pid.'''\n"
        "    print('noise')\n    return {'result': str(os.getpid()), 'display': 'shown'}\n"
    )
    scan = scan_tool_folders([folder], base=builtin_tools())
    events: list[AgentEvent] = []
    provider = ScriptedProvider([call("pid"), "done"])
    agent = Agent(
        provider,
        tools=scan.registry,
        root=tmp_path,
        host=Host(on_event=events.append),
    )
    await agent.run("pid?")
    result = agent.history[2].tool_results[0]
    assert isinstance(result, ToolResultBlock) and result.text.isdigit()
    import os

    assert int(result.text) != os.getpid()
    assert [e.display for e in events if isinstance(e, ToolResultEvent)] == ["shown"]


@pytest.mark.parametrize("n", [1, 3])
def test_pairing_checker_accepts_text_after_results_only(n: int) -> None:
    from tether.messages import Turn

    calls = tuple(ToolCallBlock(id=f"c{i}", name="t") for i in range(n))
    results = tuple(ToolResultBlock(tool_call_id=f"c{i}") for i in range(n))
    turns = [
        Turn(id="u", role="user", content=(TextBlock(text="go"),)),
        Turn(id="a", role="assistant", content=calls),
        Turn(
            id="r",
            role="user",
            content=(*results, TextBlock(text="<system-reminder>\nx\n</system-reminder>")),
        ),
    ]
    view = build_view(turns, "anthropic")
    assert check_pairing(view) == [] and view[2].content[-1] == turns[2].content[-1]
