"""One turn's work does not grow with the history: a 5,000-turn scripted run with every
per-turn feature on (checkpoints on a stored session, the budget, compaction with the todo
restatement, permission rules, events to a host), counting work, not time:

- turns visited: every turn read out of the agent's history list (iterated, reversed, sliced);
- bytes serialised: what the session file grew by;
- files opened: `open` audit events (Python's `open`, `os.open`).

The per-turn mean of each count over turns 4,001-5,000 must stay within a small factor of turns
1,001-2,000. The turns where a compaction ran are left out of both: a compaction still reads the
stored history once (its snapshot, the wire view's thinking scan), O(history) per compaction,
which `docs/benchmarks.md` measures."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, SupportsIndex, overload

import pytest

from tether import AgentConfig
from tether.agent import agent as agent_module
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits
from tether.messages import Turn
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call, deterministic
from tether.tools.base import tool
from tether.tools.builtin.todo import todo

TURNS = 5_000
EARLY = range(999, 1_999)
LATE = range(3_999, 4_999)


class CountingHistory(list[Turn]):
    """The agent's history list, counting every turn read out of it."""

    visits = 0

    def __iter__(self) -> Iterator[Turn]:
        for t in super().__iter__():
            CountingHistory.visits += 1
            yield t

    def __reversed__(self) -> Iterator[Turn]:
        for t in super().__reversed__():
            CountingHistory.visits += 1
            yield t

    @overload
    def __getitem__(self, i: SupportsIndex) -> Turn: ...
    @overload
    def __getitem__(self, i: slice) -> list[Turn]: ...
    def __getitem__(self, i: SupportsIndex | slice) -> Turn | list[Turn]:
        got = super().__getitem__(i)
        CountingHistory.visits += len(got) if isinstance(got, list) else 1
        return got


_opens = [0]
_counting = [False]


def _audit(event: str, _args: tuple[Any, ...]) -> None:
    if _counting[0] and event == "open":
        _opens[0] += 1


sys.addaudithook(_audit)  # cannot be removed: it counts only while `_counting` is set


def change(note: str) -> str:
    """A tool that may change files (not `safe`: the checkpoint path runs before each call)."""
    return f"noted {note}"


def test_one_turns_work_does_not_grow_with_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    store = SessionStore(tmp_path / "data" / "sessions")
    session = AgentSession.new(store, cwd=root)
    marks: list[tuple[int, int, int]] = []  # (visits, session bytes, opens) at each request
    compacted: list[int] = []  # compactions made before each request
    writer_path: list[Path] = []

    def model(_request: ModelRequest) -> Response:
        size = writer_path[0].stat().st_size if writer_path else 0
        marks.append((CountingHistory.visits, size, _opens[0]))
        compacted.append(compaction.compactions)
        k = len(marks)
        if k == TURNS:
            return "done"
        if k % 250 == 1:
            return call("todo", items=[{"text": f"step {k}", "status": "in_progress"}])
        return call("change", note=f"turn {k}")

    provider = ScriptedProvider(model, model="claude-sonnet-4-5")
    limits = ModelLimits(context_window=8_000, max_output_tokens=1_000)
    summarizer = ScriptedProvider(lambda _r: "## Goal\ncall change\n## Progress\n- changed")
    events: list[AgentEvent] = []
    compaction = AutoCompaction(
        ContextMonitor(limits, CompactionPolicy()), summarizer=summarizer, offer_recall=True
    )
    # the agent copies the session's turns into its history list with `list(...)`: make that
    # list a counting one
    monkeypatch.setattr(agent_module, "list", CountingHistory, raising=False)
    agent = Agent(
        provider,
        config=AgentConfig.model_validate(
            {
                "run": {"max_turns": TURNS + 1, "max_budget_usd": 1_000.0},
                "tools": {"approval": "auto"},
                "permissions": {"allow": ["change"], "deny": ["bash(rm *)"]},
            }
        ),
        tools=[tool(change, inline=True), todo],
        root=root,
        session=session,
        host=Host(on_event=events.append),
        runtime=deterministic(),
        compaction=compaction,
    )
    monkeypatch.undo()
    assert isinstance(agent.history, CountingHistory)

    async def run() -> None:
        session.open()
        assert session.writer is not None
        writer_path.append(session.writer.path)
        _counting[0] = True
        try:
            result = await agent.run("Call change until told otherwise.")
        finally:
            _counting[0] = False
        assert result.text == "done"

    asyncio.run(run())
    assert compaction.compactions >= 10
    assert any(type(e).__name__ == "CheckpointEvent" for e in events)
    per_turn = [
        tuple(b - a for a, b in zip(x, y, strict=True)) for x, y in itertools.pairwise(marks)
    ]
    plain = [compacted[k] == compacted[k + 1] for k in range(len(per_turn))]

    def mean(window: range, i: int) -> float:
        return statistics.fmean(per_turn[k][i] for k in window if plain[k])

    for i, what in enumerate(("turns visited", "bytes serialised", "files opened")):
        early, late = mean(EARLY, i), mean(LATE, i)
        assert late <= 1.25 * early + 2, f"{what} per turn: {early:.1f} early, {late:.1f} late"
