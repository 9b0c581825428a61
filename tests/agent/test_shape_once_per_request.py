"""The wire-only shaping passes (pruned stubs, the tail strategy, read dedup, stale reads) run
once per request: the pressure check before a request and the request itself share the shaped
view (they were run twice, on the same view, in every turn)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.turn import compacting
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits
from tether.compaction.tail import TailPolicy
from tether.messages import ToolResultBlock, Turn
from tether.providers.base import ModelRequest
from tether.testing import Response, ScriptedProvider, call
from tether.tools.base import tool

REQUESTS = 6


def echo(text: str) -> str:
    """Echo a long text."""
    return text * 50


def test_the_shaping_passes_run_once_per_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[int] = []
    real = compacting.shorten_old_results

    def counting(view: tuple[Turn, ...], policy: TailPolicy) -> tuple[Turn, ...]:
        passes.append(len(view))
        return real(view, policy)

    monkeypatch.setattr(compacting, "shorten_old_results", counting)
    sent: list[ModelRequest] = []

    def model(request: ModelRequest) -> Response:
        sent.append(request)
        if len(sent) == REQUESTS:
            return "done"
        return call("echo", text=f"turn {len(sent)} ")

    tail = TailPolicy(max_result_bytes=64, keep_bytes=16, keep_recent_turns=2, step_turns=1)
    compaction = AutoCompaction(
        ContextMonitor(ModelLimits(context_window=200_000, max_output_tokens=8_000), CompactionPolicy()),
        summarizer=ScriptedProvider(lambda _r: "summary"),
        tail=tail,
    )
    agent = Agent(ScriptedProvider(model), tools=[tool(echo, inline=True)], root=tmp_path, compaction=compaction)
    result = asyncio.run(agent.run("go"))
    assert result.text == "done"
    assert len(passes) == REQUESTS  # one pass per request (was two: the check, then the request)
    # what was sent is still the shaped view: old results shortened, the newest kept whole
    results = [b for m in sent[-1].messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert len(results[0].text) < len(echo("turn 1 ")) and results[-1].text == echo(f"turn {REQUESTS - 1} ")
