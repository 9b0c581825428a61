"""The budget's estimate before a request counts what the request sends: the system prompt, the
tool schemas and the messages (images included); a cap under a cent is printed as such."""

from __future__ import annotations

from pathlib import Path

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, WarningEvent
from tether.agent.host import Host
from tether.agent.turn.budget import PromptEstimate, usd
from tether.compaction.pressure import IMAGE_TOKENS
from tether.messages import ImageBlock, TextBlock, ToolSpec, Turn
from tether.testing import ScriptedProvider, deterministic
from tether.tools.base import tool

CAP = 0.003
"""$0.003: 1,200 gpt-4o input tokens ($2.50 per million)."""


def _agent(
    tmp_path: Path, events: list[AgentEvent], **kw: object
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(["hi"], model="gpt-4o")
    agent = Agent(
        provider,
        config=AgentConfig.model_validate({"run": {"max_budget_usd": CAP}}),
        root=tmp_path,
        host=Host(on_event=events.append),
        runtime=deterministic(),
        **kw,  # type: ignore[arg-type]
    )
    return agent, provider


async def test_a_first_request_whose_system_prompt_passes_the_cap_is_not_sent(
    tmp_path: Path,
) -> None:
    events: list[AgentEvent] = []
    agent, provider = _agent(
        tmp_path, events, system="Follow the house rules. " * 500
    )  # ~3,000 tokens
    result = await agent.run("hi")
    assert result.stop_reason == "max_budget"
    assert len(provider.requests) == 0
    stops = [e.message for e in events if isinstance(e, WarningEvent) and e.kind == "max_budget"]
    assert len(stops) == 1 and "budget of $0.0030" in stops[0], stops


async def test_the_tool_schemas_count_too(tmp_path: Path) -> None:
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    big = tool(lookup, description="Look a key up in the catalog. " * 400)  # ~3,000 tokens
    events: list[AgentEvent] = []
    agent, provider = _agent(tmp_path, events, tools=[big], system="short")
    result = await agent.run("hi")
    assert result.stop_reason == "max_budget" and len(provider.requests) == 0


async def test_a_small_request_under_the_cap_is_sent(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    agent, provider = _agent(tmp_path, events, system="short")
    result = await agent.run("hi")
    assert result.stop_reason == "end_turn" and len(provider.requests) == 1


def test_the_estimate_adds_system_tools_and_messages_and_follows_a_growing_view() -> None:
    spec = ToolSpec(name="t", description="d" * 400, parameters={"type": "object"})
    specs = (spec,)
    one = Turn(id="1", role="user", content=(TextBlock(text="x" * 40),))
    image = Turn(
        id="2",
        role="user",
        content=(ImageBlock(data="iVBORw0KGgo=", media_type="image/png"),),
    )
    est = PromptEstimate()
    system = "s" * 80
    base = est.tokens(system, specs, (one,))
    assert base >= 20 + 100 + 10  # system 20, the tool >= 100, the message 10
    assert est.tokens(system, specs, (one, image)) == base + IMAGE_TOKENS
    assert est.tokens(system, specs, (image,)) == base - 10 + IMAGE_TOKENS  # a new view: afresh
    assert est.tokens(system, (), (image,)) < base - 10 + IMAGE_TOKENS


def test_a_cap_under_a_cent_prints_as_such() -> None:
    assert usd(0.003) == "$0.0030"
    assert usd(0.5) == "$0.50" and usd(2) == "$2.00" and usd(0) == "$0.00"
