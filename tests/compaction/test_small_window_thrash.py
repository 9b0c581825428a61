"""trial5: compaction thrash on small windows. The user's verbatim budget scales with the window
(a quarter of it, 8,000 tokens at most), a compaction that freed little backs off instead of
running again a request later, and the note that user messages were folded into a summary is
carried forward by every later compaction (tether writes it, not the summarizing model)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.agent.events import CompactionEndEvent
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits, trigger_tokens
from tether.compaction.prompt import folded_count, make_marker, marker_text
from tether.compaction.rounds import (
    DEFAULT_KEEP_USER_TOKENS,
    Scope,
    keep_user_budget,
    select,
)
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.summarize import compact_with
from tether.messages import TextBlock, ToolResultBlock, Turn, text_turn
from tether.providers.base import ModelRequest
from tether.testing import Response, call

from .helpers import TASK, round_turns
from .test_loop_compaction import compacting_agent, measured

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.integers(0, 2_000_000))
def test_the_verbatim_user_budget_is_at_most_a_quarter_of_the_window(eff: int) -> None:
    budget = keep_user_budget(eff)
    assert 0 <= budget <= eff // 4 + 1
    assert budget <= DEFAULT_KEEP_USER_TOKENS
    assert budget == DEFAULT_KEEP_USER_TOKENS or eff < 4 * DEFAULT_KEEP_USER_TOKENS + 4
    assert keep_user_budget(eff + 1_000) >= budget  # monotone


def _tok(turn_id: str, tokens: int, role: str = "user") -> Turn:
    return text_turn(turn_id, role, "x" * (4 * tokens))  # type: ignore[arg-type]


@SETTINGS
@given(
    st.integers(8_000, 200_000),
    st.floats(0.5, 0.95),
    st.floats(0.0, 0.099),
    st.floats(0.0, 0.999),
)
def test_a_weak_compaction_is_not_followed_by_another_at_the_plain_hysteresis(
    window: int, land: float, freed: float, grow: float
) -> None:
    """A compaction that freed less than a tenth of the effective window and landed below the
    trigger: the next check asks for none until the view grew by twice the hysteresis (or
    reached runaway_total, where the runaway rule compacts anyway)."""
    limits = ModelLimits(context_window=window, max_output_tokens=0)
    pol = CompactionPolicy(output_reserve=0)
    mon = ContextMonitor(limits, pol)
    eff = window
    trig = trigger_tokens(limits, pol)
    after = int(land * trig)
    before = after + int(freed * eff)
    d = mon.check([_tok("task", before)])
    mon.compacted([_tok("task", after)])
    p = mon.pressure
    assert p is not None and p.tokens == after < trig
    mon.observe(view_len=1, usage=None, assistant_turn_id="r1", generation=mon.generation)
    # grown by the hysteresis (0.10) and up to just under twice it, still below runaway (0.9)
    size = after + int(0.10 * eff) + int(grow * 0.10 * eff)
    d = mon.check([_tok("task", after), _tok("g", size - after)])
    if d.pressure.tokens < min(after + 0.2 * eff, 0.9 * eff):
        assert not d.compact, (after, d)
    else:
        assert d.compact


def test_a_compaction_that_freed_enough_keeps_the_plain_hysteresis() -> None:
    limits = ModelLimits(context_window=10_000, max_output_tokens=0)
    mon = ContextMonitor(limits, CompactionPolicy(output_reserve=0))
    mon.check([_tok("task", 8_500)])
    mon.compacted([_tok("task", 3_000)])
    mon.observe(view_len=1, usage=None, assistant_turn_id="r1", generation=mon.generation)
    assert mon.check([_tok("task", 3_000), _tok("g", 1_100)]).compact is False
    assert mon.check([_tok("task", 3_000), _tok("g", 5_100)]).compact is True


def _history_with_marker(carried: int, new_users: int) -> list[Turn]:
    """A task, a marker whose note says `carried` user messages were folded, then rounds and
    `new_users` large user messages, then the newest (small) one."""
    turns: list[Turn] = [text_turn("task", "user", TASK)]
    turns += round_turns(0)
    text = marker_text("## Goal\n- (fake summary)", "a0", "u0", carried)
    turns.append(make_marker("m1", text, ("a0", "u0"), 1))
    for k in range(new_users):
        turns += round_turns(10 + k)
        turns.append(text_turn(f"big{k}", "user", f"UMSG-{k} " + "w " * 400))
    turns += round_turns(50)
    turns.append(text_turn("newest", "user", "the newest message"))
    turns += round_turns(60)
    return turns


def _fake(turns: Sequence[Turn], previous_summary: str | None, focus: str | None) -> str:
    return "## Goal\n- (fake summary, drops every note)"


@SETTINGS
@given(st.integers(0, 20), st.integers(0, 4))
def test_the_folded_note_is_carried_forward_by_the_next_compaction(
    carried: int, new_users: int
) -> None:
    turns = _history_with_marker(carried, new_users)
    snap = CompactionSnapshot.of(turns)
    sel = select(snap, Scope.full(), keep_user_tokens=0)
    assert sel.carried_user == carried
    result = asyncio.run(compact_with(_fake, snap, Scope.full(), keep_user_tokens=0))
    # the summarizer dropped the note; tether wrote it again with the running total
    assert folded_count(result.summary) == carried + new_users
    if carried + new_users:
        assert "folded into this summary" in result.summary
        assert "recall" in result.summary


def test_a_folded_count_is_read_only_from_the_notes_own_place() -> None:
    assert folded_count(marker_text("s", "a", "b", 3)) == 3
    assert folded_count(marker_text("s", "a", "b", 0)) == 0
    assert folded_count("## Goal\nNote: 4 earlier message(s) written by the user did not fit") == 0


# -- the trial's session, in the loop ----------------------------------------------------------

BIG = 9_600  # characters of one pasted message (~2,400 tokens)


def _script(request: ModelRequest, k: int) -> Response:
    """Four tool steps after every user message, then a short answer."""
    steps = 0
    for t in reversed(request.messages):
        if t.role == "user" and not any(isinstance(b, ToolResultBlock) for b in t.content):
            break
        if t.role == "assistant":
            steps += 1
    return call("dump", n=k) if steps < 4 else "done"


async def test_a_16k_window_with_long_user_messages_does_not_thrash(tmp_path: Path) -> None:
    """trial5's repro: a 16 K window, eight pasted ~2,400-token messages each followed by four
    tool steps. With a fixed 8,000-token verbatim budget, compactions ran on almost every
    request, each freeing a few hundred tokens."""
    provider = measured(_script)
    agent, events, _ = compacting_agent(tmp_path, provider, window=16_000)
    await agent.run("UM-TASK: short task")
    for k in range(1, 9):
        await agent.run(f"UMSG-{k} " + "word " * (BIG // 5))
    ends = [e for e in events if isinstance(e, CompactionEndEvent) and e.marker_id]
    requests = len(provider.requests)
    assert ends, "the session should need compaction"
    # compactions are a small share of the requests, and each frees a real part of the window
    # (before the fix: 9 compactions in 51 requests, some freeing ~2,000 tokens; after: 3 in 45,
    # each freeing ~8,800)
    assert len(ends) * 8 <= requests, (len(ends), requests)
    eff = 15_000
    for e in ends:
        assert e.tokens_before - e.tokens_after >= eff // 4, e
    # every user message is either verbatim in the last request or counted in its summary note
    last = provider.requests[-1]
    text = "\n".join(b.text for t in last.messages for b in t.content if isinstance(b, TextBlock))
    verbatim = sum(1 for k in range(1, 9) if f"UMSG-{k} word" in text)
    noted = 0
    for line in text.splitlines():
        noted = max(noted, folded_count(line))
    assert verbatim + noted >= 8, (verbatim, noted)
