"""trial5: one reply with many parallel tool calls whose results together exceed the window
ended in `context_runaway`, and every resume stopped there again (the summary pass keeps the
running round whole). The largest results are stubbed on the wire instead (recallable), and the
run goes on."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.compaction.prune import PRUNE_TAG, apply_rescue, plan_rescue
from tether.compaction.recall import RECALL_TOOL
from tether.messages import TextBlock, ToolCallBlock, Turn, Usage, text_turn, tool_result
from tether.providers.base import ModelRequest
from tether.testing import Reply, Response, ScriptedProvider
from tether.tokens import estimate_tokens

from .test_loop_compaction import compacting_agent

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parallel_view(sizes: list[int]) -> tuple[Turn, ...]:
    calls = tuple(
        ToolCallBlock(id=f"c{i}", name="dump", arguments={"n": i}) for i in range(len(sizes))
    )
    return (
        text_turn("task", "user", "do it"),
        Turn(id="a1", role="assistant", content=calls, stop_reason="tool_use"),
        Turn(
            id="u1",
            role="user",
            content=tuple(tool_result(c.id, "r" * n) for c, n in zip(calls, sizes, strict=True)),
        ),
    )


@SETTINGS
@given(st.lists(st.integers(0, 20_000), min_size=1, max_size=30), st.integers(0, 60_000))
def test_rescue_stubs_the_largest_results_until_the_goal_and_only_results(
    sizes: list[int], goal: int
) -> None:
    view = _parallel_view(sizes)
    tokens = estimate_tokens(view)
    ids = plan_rescue(view, tokens=tokens, goal=goal)
    out = apply_rescue(view, ids)
    if tokens <= goal:
        assert not ids and out == view
        return
    # only tool results change, and each stub names the turn for recall
    assert out[:2] == view[:2]
    for before, after in zip(view[2].tool_results, out[2].tool_results, strict=True):
        text = "".join(p.text for p in after.content if isinstance(p, TextBlock))
        if before.tool_call_id in ids:
            assert text.startswith(PRUNE_TAG) and "recall turn u1" in text
        else:
            assert after == before
    # largest first: every stubbed result is at least as large as every kept prunable one
    stubbed = [n for i, n in enumerate(sizes) if f"c{i}" in ids]
    kept = [n for i, n in enumerate(sizes) if f"c{i}" not in ids and n >= 1_024]
    if stubbed and kept:
        assert min(stubbed) >= max(kept) or estimate_tokens(out) <= goal
    # it reaches the goal unless nothing prunable is left
    if estimate_tokens(out) > goal:
        assert not kept


def _script() -> ScriptedProvider:
    """The first reply is text, the second holds 40 parallel dump calls (~20,000 tokens of results in a 16 K
    window); every later one is an answer."""
    sent = {"n": 0}

    def answer(request: ModelRequest) -> Response:
        used = Usage(input_tokens=estimate_tokens(request.messages), output_tokens=5)
        sent["n"] += 1
        if sent["n"] == 1:
            return Reply(blocks=(TextBlock(text="ready"),), usage=used)
        if sent["n"] == 2:
            calls = tuple(
                ToolCallBlock(id=f"p{i}", name="dump", arguments={"n": i}) for i in range(40)
            )
            return Reply(blocks=calls, stop_reason="tool_use", usage=used)
        return Reply(blocks=(TextBlock(text="done"),), usage=used)

    return ScriptedProvider(answer)


async def test_a_reply_whose_parallel_results_exceed_the_window_does_not_stop_the_run(
    tmp_path: Path,
) -> None:
    provider = _script()
    agent, _events, _sink = compacting_agent(tmp_path, provider, window=16_000)
    await agent.run("Hello; records follow.")
    result = await agent.run("Dump the forty records at once, then say done.")
    assert result.stop_reason == "end_turn", result.stop_reason
    assert result.text == "done"
    last = provider.requests[-1]
    assert estimate_tokens(last.messages) <= 15_000
    text = "".join(
        p.text
        for t in last.messages
        for r in t.tool_results
        for p in r.content
        if isinstance(p, TextBlock)
    )
    assert PRUNE_TAG in text and "recall turn" in text
    assert RECALL_TOOL in {t.name for t in last.tools}
    # the session goes on: the next prompt is answered, not stopped at the same place
    again = await agent.run("and now?")
    assert again.stop_reason == "end_turn"
