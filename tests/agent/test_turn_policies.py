"""The turn-policy seam (`tether.agent.turn.policy`): a policy a test adds to the parts, with no
change to the loop, stops a run, continues one, sees each reply and the prompt, and sees the
run's end; the assembly's own policies are built in order and a settings change rebuilds only
those of the sections that changed."""

from __future__ import annotations

from pathlib import Path

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.assembly.assemble import assemble
from tether.agent.sessions import AgentSession
from tether.agent.turn.budget import BudgetPolicy
from tether.agent.turn.checkpoint_policy import CheckpointPolicy
from tether.agent.turn.children import ChildUsage
from tether.agent.turn.compacting import AutoCompaction
from tether.agent.turn.continuation_policy import ContinuationPolicy
from tether.agent.turn.plan import PlanMode
from tether.agent.turn.policy import TurnPolicy
from tether.agent.turn.shell_notices import ShellNotices
from tether.agent.turn.state import RunParts, RunState
from tether.agent.turn.stop_hooks import StopHooks
from tether.agent.turn.todo_policy import TodoRestatement
from tether.agent.turn.tool_limit import ToolCallLimit
from tether.messages import ContentBlock, RunStopReason, TextBlock, Turn
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.base import tool


def note(text: str) -> str:
    """Note something."""
    return f"noted {text}"


class Watcher(TurnPolicy):
    """Stops before request `stop_at`, sends `again` once after the first final answer, and
    records what it sees."""

    def __init__(self, *, stop_at: int | None = None, again: str | None = None) -> None:
        self.stop_at = stop_at
        self.again = again
        self.requests = 0
        self.replies: list[str] = []
        self.prompts: list[tuple[ContentBlock, ...]] = []
        self.ended: list[RunStopReason] = []

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        self.prompts.append(content)
        return (*content, TextBlock(text="(watched)"))

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        self.requests += 1
        return "max_budget" if self.requests == self.stop_at else None

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        self.replies.append(turn.id)
        if self.again is not None and not turn.tool_calls:
            again, self.again = self.again, None
            return again
        return None

    def after_run(self, parts: RunParts, state: RunState) -> None:
        self.ended.append(state.stop_reason)


def _agent(tmp_path: Path, provider: ScriptedProvider, policy: TurnPolicy) -> Agent:
    parts = assemble(
        AgentConfig(),
        [provider],
        [tool(note, inline=True)],
        root=tmp_path,
        session=AgentSession(),
        runtime=deterministic(),
    )
    return Agent.from_parts(parts.with_policy(policy))


async def test_a_policy_stops_a_run_before_a_request(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("note", text="a"), call("note", text="b"), "done"])
    watcher = Watcher(stop_at=2)
    result = await _agent(tmp_path, provider, watcher).run("go")
    assert result.stop_reason == "max_budget" and len(provider.requests) == 1
    assert watcher.ended == ["max_budget"]


async def test_a_policy_continues_a_run_and_sees_each_reply_and_the_prompt(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("note", text="a"), "first answer", "second answer"])
    watcher = Watcher(again="check it once more")
    agent = _agent(tmp_path, provider, watcher)
    result = await agent.run("go")
    assert result.stop_reason == "end_turn" and result.text == "second answer"
    assert len(provider.requests) == 3
    assert provider.requests[2].messages[-1].text == "check it once more"
    assistant = [t.id for t in agent.history if t.role == "assistant"]
    assert watcher.replies == assistant and len(assistant) == 3
    assert [b.text for b in watcher.prompts[0] if isinstance(b, TextBlock)] == ["go"]
    assert agent.history[0].content[-1] == TextBlock(text="(watched)")
    assert watcher.ended == ["end_turn"]


def test_the_assembly_builds_its_policies_in_order_and_a_settings_change_keeps_the_rest(
    tmp_path: Path,
) -> None:
    config = AgentConfig.model_validate({"run": {"max_budget_usd": 5}})
    agent = Agent(ScriptedProvider([]), config=config, root=tmp_path, runtime=deterministic())
    kinds = [type(p) for p in agent.parts.policies]
    assert kinds == [
        BudgetPolicy,
        AutoCompaction,
        TodoRestatement,
        ShellNotices,
        ContinuationPolicy,
        StopHooks,
        PlanMode,
        CheckpointPolicy,
        ChildUsage,
    ]
    before = list(agent.parts.policies)
    agent.apply_settings({"run.continuation_limit": 1})
    after = list(agent.parts.policies)
    assert [type(p) for p in after] == kinds
    changed = [type(a).__name__ for a, b in zip(before, after, strict=True) if a is not b]
    assert changed == ["ContinuationPolicy"]


async def test_a_mid_run_change_of_another_setting_keeps_the_tool_call_count(
    tmp_path: Path,
) -> None:
    agents: list[Agent] = []

    def bump(text: str) -> str:
        """Change an unrelated setting mid-run."""
        agents[0].apply_settings({"run.continuation_limit": 1})
        return f"bumped {text}"

    script = [call("bump", text="a"), call("note", text="b"), call("note", text="c"), "done"]
    provider = ScriptedProvider(script)
    config = AgentConfig.model_validate({"run": {"max_tool_calls": 2}})
    agent = Agent(
        provider,
        config=config,
        tools=[tool(bump, inline=True), tool(note, inline=True)],
        root=tmp_path,
        runtime=deterministic(),
    )
    agents.append(agent)
    limit = next(p for p in agent.parts.policies if isinstance(p, ToolCallLimit))
    result = await agent.run("go")
    assert result.stop_reason == "max_tool_calls" and len(provider.requests) == 3
    assert next(p for p in agent.parts.policies if isinstance(p, ToolCallLimit)) is limit
    agent.apply_settings({"run.max_tool_calls": 5})  # its own section: a new cap
    fresh = next(p for p in agent.parts.policies if isinstance(p, ToolCallLimit))
    assert fresh is not limit and fresh.cap == 5
