"""Compaction inside the agent loop: before every request (T17), counters reset after a
compaction (T15), overflow → learn + compact + retry once, ladder, runaway, restore, recall."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from kit.agents import make_agent
from tether import Runtime
from tether.agent.agent import Agent
from tether.agent.events import (
    AgentEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    FallbackEvent,
    RetryEvent,
)
from tether.agent.sessions import AgentSession
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor, Decision
from tether.compaction.pressure import (
    CompactionPolicy,
    ModelLimits,
    effective_window,
    estimate_tokens,
)
from tether.compaction.prompt import SUMMARY_SYSTEM
from tether.errors import RunError
from tether.messages import CompactSummaryBlock, TextBlock, Turn, Usage
from tether.providers.base import ModelRequest, StreamError
from tether.testing import Reply, Response, ScriptedProvider, call
from tether.tools.base import tool
from tether.wire.markers import SUMMARY_HEADER, elided_ids

TASK = "Process all the records, one dump per step, then say done."


@tool(safe=True, inline=True)
def dump(n: int) -> str:
    """Dump record n.

    Args:
        n: the record number.
    """
    return f"record {n}: " + "d" * 2000


class Sink:
    id = "s1"

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def append(self, turn: Turn) -> None:
        self.turns.append(turn)


def measured(script: Callable[[ModelRequest, int], Response]) -> ScriptedProvider:
    """A provider reporting usage consistent with the view it was sent (prompt = estimate)."""
    counter = {"n": 0}

    def answer(request: ModelRequest) -> Response:
        counter["n"] += 1
        r = script(request, counter["n"])
        blocks = (
            (TextBlock(text=r),)
            if isinstance(r, str)
            else (r,)
            if not isinstance(r, Reply | StreamError | list)
            else None
        )
        if blocks is None:
            return r
        return Reply(
            blocks=blocks,
            usage=Usage(input_tokens=estimate_tokens(request.messages), output_tokens=20),
        )

    return ScriptedProvider(answer)


def steps(n_steps: int) -> Callable[[ModelRequest, int], Response]:
    def script(request: ModelRequest, k: int) -> Response:
        return call("dump", n=k) if k <= n_steps else "done"

    return script


def compacting_agent(
    tmp_path: Path,
    provider: ScriptedProvider,
    *,
    window: int = 6_000,
    monitor: ContextMonitor | None = None,
    summarizer: ScriptedProvider | None = None,
    secret_texts: tuple[str, ...] = (),
    fallback: Sequence[ScriptedProvider] = (),
    agent_summarizes: bool = False,
    sleeps: list[float] | None = None,
    **kw: object,
) -> tuple[Agent, list[AgentEvent], Sink]:
    events: list[AgentEvent] = []
    sink = Sink()
    limits = ModelLimits(context_window=window, max_output_tokens=1_000)
    mon = monitor or ContextMonitor(limits, CompactionPolicy(output_reserve=1_000))
    default = None if agent_summarizes else ScriptedProvider(lambda r: "## Goal\nprocess records")
    manager = AutoCompaction(
        mon,
        summarizer=summarizer or default,
        **kw,  # type: ignore[arg-type]
    )

    async def sleep(delay_s: float) -> None:
        if sleeps is not None:
            sleeps.append(delay_s)

    agent = make_agent(
        [provider, *fallback],
        tmp_path,
        tools=[dump],
        builtins=True,
        events=events,
        session=AgentSession(sink=sink),
        settings={"run": {"max_turns": 200}, "retry": {"max_attempts": 2}},
        compaction=manager,
        runtime=Runtime(secret_texts=tuple(secret_texts), sleep=sleep, rng=lambda: 0.5),
    )
    return agent, events, sink


def _compactions(events: Sequence[AgentEvent]) -> list[CompactionEndEvent]:
    return [e for e in events if isinstance(e, CompactionEndEvent)]


async def test_t17_no_request_exceeds_the_budget_and_the_final_reply_is_persisted(
    tmp_path: Path,
) -> None:
    provider = measured(steps(25))
    agent, events, sink = compacting_agent(tmp_path, provider)
    result = await agent.run(TASK)
    assert result.text == "done" and result.stop_reason == "end_turn"
    assert sink.turns[-1] is result.message  # the final reply is persisted
    budget = effective_window(
        ModelLimits(context_window=6_000, max_output_tokens=1_000),
        CompactionPolicy(output_reserve=1_000),
    )
    sizes = [estimate_tokens(r.messages) for r in provider.requests]
    assert max(sizes) <= budget, sizes
    ends = _compactions(events)
    assert len(ends) >= 2
    assert all(e.tokens_after < e.tokens_before and e.turns_replaced > 0 for e in ends)
    starts = [e for e in events if isinstance(e, CompactionStartEvent)]
    assert len(starts) == len(ends) and starts[0].reason == "threshold"
    # the task stays verbatim in every request; after a compaction the summary is there too
    for r in provider.requests:
        assert r.messages[0].content[0] == TextBlock(text=TASK)
    assert SUMMARY_HEADER in "".join(
        b.text for b in provider.requests[-1].messages[0].content if isinstance(b, TextBlock)
    )


async def test_t15_turns_under_threshold_never_trigger_compaction(tmp_path: Path) -> None:
    provider = measured(steps(30))
    agent, events, _ = compacting_agent(tmp_path, provider, window=8_000)
    await agent.run(TASK)
    # between two compactions there are several requests: no compaction on consecutive requests
    kinds = [e.type for e in events if e.type in ("turn_start", "compaction_end")]
    for a, b in itertools.pairwise(kinds):
        assert not (a == "compaction_end" and b == "compaction_end")
    positions = [i for i, k in enumerate(kinds) if k == "compaction_end"]
    assert len(positions) >= 2
    assert all(b - a > 2 for a, b in itertools.pairwise(positions))


async def test_overflow_error_learns_the_window_compacts_and_retries_once(tmp_path: Path) -> None:
    def script(request: ModelRequest, k: int) -> Response:
        if k == 4:
            return StreamError(
                kind="context_overflow", message="prompt is too long: 3500 tokens > 20000 maximum"
            )
        return call("dump", n=k) if k < 6 else "done"

    agent, events, _ = compacting_agent(tmp_path, measured(script), window=100_000)
    result = await agent.run(TASK)
    assert result.text == "done"
    starts = [e for e in events if isinstance(e, CompactionStartEvent)]
    assert [s.reason for s in starts][:1] == ["overflow"]
    assert agent.compaction is not None and agent.compaction.monitor.limits.context_window == 20000
    assert not [e for e in events if e.type == "error"]

    def always(request: ModelRequest, k: int) -> Response:
        if k >= 3:
            return StreamError(kind="context_overflow", message="prompt is too long")
        return call("dump", n=k)

    agent, events, _ = compacting_agent(tmp_path, measured(always), window=100_000)
    with pytest.raises(RunError) as info:
        await agent.run(TASK)
    assert info.value.kind == "context_overflow"


async def test_the_summary_call_uses_the_runs_retries_retry_after_and_fallback(
    tmp_path: Path,
) -> None:
    """No summarizer of its own: the summary goes through the agent's chain. The first provider
    is rate limited with a Retry-After (honoured), then overloaded (5xx-like, retried, then
    spent); the backup writes the summary; its tokens are on `compaction_end` and in the run's
    usage."""
    faults = iter(
        [
            StreamError(kind="rate_limited", message="slow down", retry_after_s=9.0),
            StreamError(kind="provider", message="internal", status_code=503),
        ]
    )
    step = steps(12)

    def script(request: ModelRequest, k: int) -> Response:
        if request.system == SUMMARY_SYSTEM:
            return next(faults, StreamError(kind="overloaded", message="still down"))
        return step(request, k)

    summary_usage = Usage(input_tokens=1_234, output_tokens=56)
    backup = ScriptedProvider(
        lambda r: Reply(blocks=(TextBlock(text="## Goal\nprocess records"),), usage=summary_usage)
    )
    sleeps: list[float] = []
    agent, events, _ = compacting_agent(
        tmp_path,
        measured(script),
        fallback=[backup],
        agent_summarizes=True,
        sleeps=sleeps,
    )
    # the run's turns go back to the head after the summary's fallback (a sticky fallback
    # would hand them to the backup, which only writes summaries)
    agent.apply_settings({"retry.fallback_cooldown_s": 0})
    result = await agent.run(TASK)
    assert result.text == "done"
    ends = _compactions(events)
    assert ends and not any(e.truncated for e in ends)
    assert all(e.usage == summary_usage for e in ends)
    retries = [e for e in events if isinstance(e, RetryEvent)]
    assert (retries[0].kind, retries[0].delay_s, retries[0].from_retry_after) == (
        "rate_limited",
        9.0,
        True,
    )
    assert sleeps[0] == 9.0
    assert any(isinstance(e, FallbackEvent) for e in events)
    assert all(r.system == SUMMARY_SYSTEM for r in backup.requests)  # only summaries went there
    turns_usage = sum((t.usage for t in result.new_turns if t.usage), Usage())
    assert result.usage == turns_usage + Usage(
        input_tokens=summary_usage.input_tokens * len(ends),
        output_tokens=summary_usage.output_tokens * len(ends),
    )


async def test_failed_summary_falls_back_to_a_truncation_marker(tmp_path: Path) -> None:
    broken = ScriptedProvider(lambda r: StreamError(kind="auth", message="bad key"))
    provider = measured(steps(12))
    agent, events, _sink = compacting_agent(tmp_path, provider, summarizer=broken)
    result = await agent.run(TASK)
    assert result.text == "done"
    ends = _compactions(events)
    assert ends and all(e.truncated for e in ends)
    view_text = "".join(
        b.text for b in provider.requests[-1].messages[0].content if isinstance(b, TextBlock)
    )
    assert "earlier turns were removed without a summary" in view_text


class _Forced(ContextMonitor):
    def __init__(self, decision: Callable[[Decision], Decision]) -> None:
        super().__init__(ModelLimits(context_window=100_000, max_output_tokens=1_000))
        self._decide = decision

    def check(self, turns: Sequence[Turn]) -> Decision:
        return self._decide(super().check(turns))


async def test_runaway_stops_with_a_clear_stop_reason(tmp_path: Path) -> None:
    from dataclasses import replace

    mon = _Forced(lambda d: replace(d, compact=False, runaway="context above 90% of the window"))
    agent, events, _ = compacting_agent(tmp_path, measured(steps(5)), monitor=mon)
    result = await agent.run(TASK)
    assert result.stop_reason == "context_runaway"
    assert any(e.type == "error" and "90%" in e.message for e in events)  # type: ignore[union-attr]


async def test_no_progress_stops_with_context_overflow(tmp_path: Path) -> None:
    from dataclasses import replace

    mon = _Forced(lambda d: replace(d, no_progress=True))
    agent, _, _ = compacting_agent(tmp_path, measured(steps(5)), monitor=mon)
    with pytest.raises(RunError, match="context window exhausted") as info:
        await agent.run(TASK)
    assert info.value.kind == "context_overflow"


async def test_recently_read_files_are_restored_and_recall_returns_elided_turns(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("NOTE-CONTENT\n")
    (tmp_path / "other.txt").write_text("OTHER-CONTENT\n")
    seen: dict[str, str] = {}

    def script(request: ModelRequest, k: int) -> Response:
        if k == 1:
            return call("read", path="notes.txt")
        if k == 2:
            return call("read", path="other.txt")
        if k <= 14:
            return call("dump", n=k)
        if "recall" not in seen:
            seen["recall"] = "asked"
            first = next(t for t in agent.history if t.tool_results)  # notes.txt's results turn
            assert first.id in elided_ids(tuple(agent.history))  # no longer in the view
            seen["id"] = first.id
            return call("recall", turn_id=first.id)
        return "done"

    agent, events, _ = compacting_agent(tmp_path, measured(script))
    result = await agent.run(TASK)
    assert result.text == "done"
    ends = _compactions(events)
    assert ends and ends[0].restored_files == ("other.txt", "notes.txt")
    restore_calls = [c for t in agent.history for c in t.tool_calls if c.id.startswith("restore_")]
    assert {c.arguments["path"] for c in restore_calls} >= {"notes.txt", "other.txt"}
    recall_result = next(
        r for t in agent.history for r in t.tool_results if "--- turn " + seen["id"] in r.text
    )
    assert "NOTE-CONTENT" in recall_result.text  # the elided read result, verbatim
    # `recall` is offered only once there is something to recall
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    offered = ["recall" in {t.name for t in r.tools} for r in provider.requests]
    first_after = next(i for i, t in enumerate(offered) if t)
    assert not any(offered[:first_after]) and all(offered[first_after:]) and first_after > 2


async def test_restored_files_are_redacted_like_any_tool_output(tmp_path: Path) -> None:
    secret = "SuperSecretValue123"
    (tmp_path / "notes.txt").write_text(f"token={secret}\n")

    def script(request: ModelRequest, k: int) -> Response:
        if k == 1:
            return call("read", path="notes.txt")
        return call("dump", n=k) if k <= 14 else "done"

    agent, events, _ = compacting_agent(tmp_path, measured(script), secret_texts=(secret,))
    await agent.run(TASK)
    ends = _compactions(events)
    assert ends and "notes.txt" in ends[0].restored_files  # the restore path ran
    restored = [
        r.text
        for t in agent.history
        for r in t.tool_results
        if r.tool_call_id.startswith("restore_")
    ]
    assert restored and all("token=[REDACTED]" in text for text in restored)
    assert not any(secret in r.text for t in agent.history for r in t.tool_results)


async def test_a_compaction_never_scans_the_whole_history_for_the_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each marker's generation comes from the agent's incremental `LiveTurns`, not from a
    pass over the whole history per compaction (21 ms at 35,000 turns: the per-turn cost grew
    with the session, issue 12). The generations are still 1, 2, 3, …"""
    from tether.compaction import rounds

    def whole_pass(_turns: object) -> int:
        raise AssertionError("next_generation(history) ran during a compaction")

    monkeypatch.setattr(rounds, "next_generation", whole_pass)
    agent, events, _ = compacting_agent(tmp_path, measured(steps(25)))
    assert (await agent.run(TASK)).text == "done"
    ends = _compactions(events)
    assert len(ends) >= 2
    gens = [
        b.generation for t in agent.history for b in t.content if isinstance(b, CompactSummaryBlock)
    ]
    assert gens == list(range(1, len(ends) + 1))


async def test_a_file_that_cannot_be_read_back_is_skipped_and_the_rest_restored(
    tmp_path: Path,
) -> None:
    """Restoration failure isolation: of three recently read files, one deleted and one made
    unreadable before the compaction, the third is restored; the compaction completes and the
    run goes on (no error result in the restored pair)."""
    for name in ("gone.txt", "locked.txt", "kept.txt"):
        (tmp_path / name).write_text(f"{name.upper()}-CONTENT\n")

    def script(request: ModelRequest, k: int) -> Response:
        if k <= 3:
            return call("read", path=("gone.txt", "locked.txt", "kept.txt")[k - 1])
        if k == 4:
            (tmp_path / "gone.txt").unlink()
            (tmp_path / "locked.txt").unlink()
            (tmp_path / "locked.txt").mkdir()  # now a folder: `read` refuses it
        return call("dump", n=k) if k <= 14 else "done"

    agent, events, _ = compacting_agent(tmp_path, measured(script))
    result = await agent.run(TASK)
    assert result.text == "done"
    ends = _compactions(events)
    assert ends and ends[0].restored_files == ("kept.txt",)
    restored = [
        r for t in agent.history for r in t.tool_results if r.tool_call_id.startswith("restore_")
    ]
    assert restored and not any(r.is_error for r in restored)
    assert "KEPT.TXT-CONTENT" in restored[0].text
