"""The pluggable wire compactor (issue 39 row, the seed's compactStrategy function): a user
function takes the tail strategy's place on the wire view and is told its context — the tail's
threshold and keep-turns and the view's total bytes — the stored turns stay whole, and what it
returns is repaired before it is sent (a stranded call answered, a user turn last)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import ModelLimits
from tether.compaction.tail import CompactContext, TailPolicy, compact_context, view_bytes
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock, Turn
from tether.testing import ScriptedProvider, call
from tether.tools.base import tool
from tether.wire import check_pairing

LIMITS = ModelLimits(context_window=200_000, max_output_tokens=4_000)


@tool(safe=True, inline=True)
def dump(n: int) -> str:
    """Dump record n.

    Args:
        n: the record number.
    """
    return f"record {n}: " + "d" * 3000


async def test_the_compactor_gets_its_context_and_replaces_the_tail(tmp_path: Path) -> None:
    seen: list[CompactContext] = []

    def drop_old_results(view: tuple[Turn, ...], ctx: CompactContext) -> Sequence[Turn]:
        seen.append(ctx)
        if ctx.total_bytes < ctx.threshold:
            return view
        # keep the last keep_turns turns; drop earlier assistant turns holding calls (their
        # results are then stranded: the loop's repair must drop them, not the provider)
        head, tail = view[: -ctx.keep_turns], view[-ctx.keep_turns :]
        return (*(t for t in head if not t.tool_calls), *tail)

    provider = ScriptedProvider([*(call("dump", n=i) for i in range(4)), "done"])
    compaction = AutoCompaction(
        ContextMonitor(LIMITS),
        tail=TailPolicy(max_result_bytes=3_000, keep_recent_turns=3),
        wire_compactor=drop_old_results,
    )
    agent = make_agent(provider, tmp_path, tools=[dump], compaction=compaction)
    await agent.run("dump four records")
    assert seen and all(c.threshold == 3_000 and c.keep_turns == 3 for c in seen)
    totals = [c.total_bytes for c in seen]
    assert totals == sorted(totals) and totals[-1] >= 4 * 2000  # the whole view's bytes, before
    last = provider.requests[-1].messages
    assert check_pairing(last) == [] and last[-1].role == "user"
    sent = sum(1 for t in last for b in t.content if isinstance(b, ToolCallBlock))
    assert sent < 4  # old calls left out of what was sent
    stored = sum(1 for t in agent.history for b in t.content if isinstance(b, ToolCallBlock))
    assert stored == 4  # and kept in the session


text = st.text(max_size=30)


@given(st.lists(st.tuples(st.booleans(), text), max_size=8))
def test_total_bytes_is_the_views_text(items: list[tuple[bool, str]]) -> None:
    view = tuple(
        Turn(
            id=f"t{i}",
            role="user",
            content=(ToolResultBlock(tool_call_id=f"c{i}", content=(TextBlock(text=s),)),)
            if is_result
            else (TextBlock(text=s),),
        )
        for i, (is_result, s) in enumerate(items)
    )
    assert view_bytes(view) == sum(len(s.encode("utf-8")) for _, s in items)
    assert compact_context(view, TailPolicy()).total_bytes == view_bytes(view)
