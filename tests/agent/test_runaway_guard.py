"""The runaway guard holds with automatic compaction off (`--no-compact`,
`Agent(compaction=False)`): a context that runs away stops the run with `context_runaway`."""

from __future__ import annotations

from pathlib import Path

from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, ErrorEvent
from tether.agent.host import Host
from tether.settings.model import AgentConfig
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.base import tool


@tool(safe=True)
def dump() -> str:
    """A tool whose output is large for the window."""
    return "data " * 700  # ~875 tokens


def _agent(tmp_path: Path, events: list[AgentEvent], **kw: object) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider([call("dump") for _ in range(12)] + ["done"], context_window=4_000)
    agent = Agent(
        provider,
        tools=[dump],
        root=tmp_path,
        runtime=deterministic(),
        host=Host(on_event=events.append),
        **kw,  # type: ignore[arg-type]
    )
    return agent, provider


async def test_the_guard_stops_a_runaway_without_compaction(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    agent, provider = _agent(tmp_path, events, compaction=False)
    assert agent.compaction is None and agent.context_monitor is not None
    result = await agent.run("go")
    assert result.stop_reason == "context_runaway"
    assert len(provider.requests) < 12  # stopped before the context filled the window
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.kind == "context_overflow" and "compaction is off" in error.message


async def test_the_guard_follows_the_setting(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    config = AgentConfig.model_validate({"context": {"auto_compact": False}})
    agent, _ = _agent(tmp_path, events, config=config)
    assert agent.compaction is None and agent.parts.guard is not None
    assert (await agent.run("go")).stop_reason == "context_runaway"
    agent.apply_settings({"context.auto_compact": True})
    assert agent.compaction is not None and agent.parts.guard is None


async def test_the_guard_error_names_the_way_on_for_every_front_end(tmp_path: Path) -> None:
    """The fourth trial: the error named no way out; the TUI added one, ACP editors and
    `tether run` got the bare text. The one message (the event every host shows) names each."""
    events: list[AgentEvent] = []
    agent, _ = _agent(tmp_path, events, compaction=False)
    await agent.run("go")
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.message.endswith(
        "stopping; to go on, leave out the message that made it large: in `tether chat`, "
        "/rewind to before it or /compact; from a shell (`tether run`, an editor's session), "
        "`tether sessions fork ID --before N` (a new session without user message N; "
        "`tether sessions list` shows the id)"
    ), error.message
