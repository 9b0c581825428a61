"""Turns a compaction preserved stop replaying their thinking: an assistant turn stored before
the newest marker goes out without thinking, except the tool loop that was in progress when
the marker was written (Anthropic wants its thinking back) and everything after the marker."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    text_turn,
    tool_result,
)
from tether.wire import ViewBuilder, build_view
from tether.wire.markers import replayed_thinking_ids

from .strategies import targets, transcripts

CLAUDE = Provenance(provider="anthropic", api="anthropic", model="claude-a")


def thought(text: str) -> ThinkingBlock:
    return ThinkingBlock(text=text, signature="SIG", producer="anthropic", model="claude-a")


def reply(tid: str, *blocks: object) -> Turn:
    return Turn(id=tid, role="assistant", content=tuple(blocks), provenance=CLAUDE)  # type: ignore[arg-type]


def session() -> tuple[Turn, ...]:
    call = ToolCallBlock(id="c1", name="read", arguments={})
    marker = Turn(
        id="m",
        role="user",
        content=(CompactSummaryBlock(summary="earlier work", replaces_turn_ids=("u0", "a0")),),
    )
    return (
        text_turn("u0", "user", "first task"),
        reply("a0", thought("t0"), TextBlock(text="done 0")),
        text_turn("u1", "user", "second task"),
        reply("a1", thought("t1"), RedactedThinkingBlock(data="R"), TextBlock(text="done 1")),
        text_turn("u2", "user", "third task"),
        reply("a2", thought("t2"), call),  # the loop in progress at compaction time
        Turn(id="r2", role="user", content=(tool_result("c1", "ok"),)),
        marker,
        reply("a3", thought("t3"), TextBlock(text="after")),
        text_turn("u3", "user", "go on"),
    )


def thinking_of(view: tuple[Turn, ...]) -> dict[str, int]:
    return {
        t.id: sum(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in t.content)
        for t in view
        if t.role == "assistant"
    }


def test_preserved_turns_lose_their_thinking_the_running_loop_keeps_it() -> None:
    turns = session()
    assert replayed_thinking_ids(turns) == {"a0", "a1"}
    view = build_view(turns, "anthropic", route=CLAUDE)
    assert thinking_of(view) == {"a1": 0, "a2": 1, "a3": 1}
    assert [t.text for t in view if t.id == "a1"] == ["done 1"]  # the answer itself stays
    builder = ViewBuilder("anthropic", route=CLAUDE)
    assert builder.view(turns[:7]) == build_view(turns[:7], "anthropic", route=CLAUDE)
    assert thinking_of(builder.view(turns[:7]))["a1"] == 2  # before the marker: replayed
    assert builder.view(turns) == view


def test_without_a_marker_nothing_is_stripped() -> None:
    turns = session()[:7]
    assert replayed_thinking_ids(turns) == frozenset()
    assert build_view(turns, "anthropic", route=CLAUDE) == turns


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), targets)
def test_no_preserved_turn_replays_thinking(turns: tuple[Turn, ...], target: str) -> None:
    strip = replayed_thinking_ids(turns)
    view = build_view(turns, target)  # type: ignore[arg-type]
    for t in view:
        if t.id in strip:
            assert not any(isinstance(b, ThinkingBlock | RedactedThinkingBlock) for b in t.content)
