"""Unit tests: markers, reasoning actions, resume helpers, ViewBuilder fallbacks."""

from __future__ import annotations

import pytest

from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    RedactedThinkingBlock,
    StopReason,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    text_turn,
    tool_result,
)
from tether.wire import (
    SUMMARY_HEADER,
    ViewBuilder,
    build_view,
    classify_tail,
    elide_markers,
    filter_unresolved_tool_uses,
    interrupted_results_turn,
    pending_tool_calls,
    reasoning_action,
    sanitize_history_for_provider,
    sanitize_id,
)


def marker(mid: str, *ids: str, summary: str = "S") -> Turn:
    return Turn(
        id=mid, role="user", content=(CompactSummaryBlock(summary=summary, replaces_turn_ids=ids),)
    )


def ids(view: tuple[Turn, ...]) -> list[str]:
    return [t.id for t in view]


# -- markers ------------------------------------------------------------------------------------


def test_no_marker_returns_the_input() -> None:
    turns = (text_turn("a", "user", "x"), text_turn("b", "assistant", "y"))
    assert elide_markers(turns) is turns


def test_active_marker_renders_at_first_surviving_replaced_turn() -> None:
    turns = (
        text_turn("u0", "user", "task"),
        text_turn("a1", "assistant", "x"),
        text_turn("u2", "user", "y"),
        marker("m", "a1", "u2", "gone"),
        text_turn("a3", "assistant", "z"),
    )
    out = elide_markers(turns)
    assert ids(out) == ["u0", "m", "a3"]
    assert out[0] is turns[0] and out[2] is turns[4]
    assert (
        out[1].role == "user"
        and out[1].text.startswith(SUMMARY_HEADER)
        and "<summary>\nS\n</summary>" in out[1].text
    )


def test_marker_without_surviving_turns_renders_at_its_own_place() -> None:
    turns = (
        text_turn("u0", "user", "task"),
        marker("m", "deleted"),
        text_turn("a", "assistant", "z"),
    )
    assert ids(elide_markers(turns)) == ["u0", "m", "a"]


def test_subsumed_marker_only_elides_and_elision_is_monotone() -> None:
    turns = (
        text_turn("u0", "user", "task"),
        text_turn("a1", "assistant", "x"),
        marker("m1", "a1", summary="first"),
        text_turn("u2", "user", "y"),
        text_turn("a3", "assistant", "z"),
        marker("m2", "m1", "u2", summary="second"),  # does not list a1: still elided by m1
        text_turn("u4", "user", "w"),
    )
    out = elide_markers(turns)
    assert ids(out) == ["u0", "m2", "a3", "u4"]
    assert "second" in out[1].text and "first" not in out[1].text
    view = build_view(turns, "anthropic")
    assert not any(isinstance(b, CompactSummaryBlock) for t in view for b in t.content)


# -- reasoning ----------------------------------------------------------------------------------

ANT = Provenance(provider="anthropic", api="anthropic", model="claude-a")
GEM = Provenance(provider="google", api="google", model="gemini-z")


@pytest.mark.parametrize(
    ("block", "prov", "target", "route", "expected"),
    [
        (RedactedThinkingBlock(data="D"), ANT, "anthropic", None, "keep"),
        (RedactedThinkingBlock(data="D"), ANT, "openai-chat", None, "drop"),
        (
            ThinkingBlock(text="t", signature="S", producer="openai"),
            None,
            "anthropic",
            None,
            "drop",
        ),
        (
            ThinkingBlock(text="t", signature="S", producer="google"),
            None,
            "anthropic",
            None,
            "drop",
        ),
        (ThinkingBlock(text="t", producer="anthropic"), None, "anthropic", None, "drop"),
        (ThinkingBlock(text="t", signature="S"), None, "anthropic", None, "keep"),
        (
            ThinkingBlock(text="t", signature="S", producer="anthropic", model="claude-a"),
            ANT,
            "anthropic",
            ANT,
            "keep",
        ),
        (
            ThinkingBlock(text="t", signature="S", producer="anthropic", model="claude-b"),
            ANT,
            "anthropic",
            ANT,
            "drop",
        ),
        (ThinkingBlock(text="t", signature="S", producer="anthropic"), ANT, "google", None, "drop"),
        (ThinkingBlock(text="t", signature="S"), None, "openai-chat", None, "strip_signature"),
        (ThinkingBlock(text="", signature="S"), None, "openai-chat", None, "drop"),
        (ThinkingBlock(text="t", signature="G", producer="google"), GEM, "google", GEM, "keep"),
        (
            ThinkingBlock(text="t", signature="G", producer="google"),
            GEM,
            "google",
            ANT,
            "strip_signature",
        ),
        (
            ThinkingBlock(text="t", signature="G", producer="google"),
            GEM,
            "ollama",
            None,
            "strip_signature",
        ),
        (ThinkingBlock(text="t"), None, "ollama", None, "keep"),
    ],
)
def test_reasoning_action_table(
    block: ThinkingBlock | RedactedThinkingBlock,
    prov: Provenance | None,
    target: Target,
    route: Provenance | None,
    expected: str,
) -> None:
    assert reasoning_action(block, target, provenance=prov, route=route) == expected


def test_sanitize_history_returns_input_when_nothing_changes() -> None:
    turns = (
        text_turn("u", "user", "x"),
        Turn(
            id="a",
            role="assistant",
            provenance=ANT,
            content=(
                ThinkingBlock(text="t", signature="S", producer="anthropic"),
                TextBlock(text="y"),
            ),
        ),
    )
    assert sanitize_history_for_provider(turns, "anthropic") is turns
    stripped = sanitize_history_for_provider(turns, "openai-chat")
    assert stripped[0] is turns[0] and [b.type for b in stripped[1].content] == ["text"]


# -- ids ------------------------------------------------------------------------------------------


def test_sanitize_id_rules() -> None:
    assert sanitize_id("toolu_01-AB", 64) == "toolu_01-AB"
    assert sanitize_id("a.b/c", 64) == "a_b_c"
    assert sanitize_id("", 64) == "call"
    long = sanitize_id("x" * 100, 40)
    assert (
        len(long) == 40
        and long == sanitize_id("x" * 100, 40)
        and long != sanitize_id("x" * 101, 40)
    )


# -- resume ---------------------------------------------------------------------------------------


def call_turn(tid: str, *cids: str, stop: StopReason | None = "tool_use") -> Turn:
    return Turn(
        id=tid,
        role="assistant",
        content=tuple(ToolCallBlock(id=c, name="f") for c in cids),
        stop_reason=stop,
    )


def results(tid: str, *cids: str) -> Turn:
    return Turn(id=tid, role="user", content=tuple(tool_result(c, "ok") for c in cids))


def test_classify_tail() -> None:
    u = text_turn("u", "user", "hi")
    assert classify_tail(()) == "clean"
    assert classify_tail((u,)) == "clean"
    assert classify_tail((u, call_turn("a", "c1"))) == "interrupted"
    assert classify_tail((u, call_turn("a", "c1", "c2"), results("r", "c1"))) == "interrupted"
    assert classify_tail((u, call_turn("a", "c1"), results("r", "c1"))) == "clean"
    done = Turn(
        id="a2", role="assistant", content=(TextBlock(text="done"),), stop_reason="end_turn"
    )
    assert classify_tail((u, done)) == "completed"
    assert (
        classify_tail((u, done, Turn(id="s", role="system", content=(TextBlock(text="n"),))))
        == "completed"
    )
    partial = Turn(
        id="a3", role="assistant", content=(TextBlock(text="half"),), stop_reason="interrupted"
    )
    assert classify_tail((u, partial)) == "interrupted"


def test_filter_unresolved_tool_uses_keeps_partly_answered_turns() -> None:
    u = text_turn("u", "user", "hi")
    turns = (
        u,
        call_turn("a1", "c1"),
        text_turn("u2", "user", "stop"),
        call_turn("a2", "c2", "c3"),
        results("r", "c2"),
    )
    out = filter_unresolved_tool_uses(turns)
    assert ids(out) == ["u", "u2", "a2", "r"]
    assert filter_unresolved_tool_uses(out) is out


def test_interrupted_results_turn_orders_by_call() -> None:
    a = call_turn("a", "c1", "c2", "c3")
    turn = interrupted_results_turn(
        a, [tool_result("c3", "three"), tool_result("c1", "one")], turn_id="r"
    )
    assert [(r.tool_call_id, r.is_error) for r in turn.tool_results] == [
        ("c1", False),
        ("c2", True),
        ("c3", False),
    ]
    assert pending_tool_calls((a, turn)) == ()


# -- ViewBuilder ----------------------------------------------------------------------------------


def test_view_builder_falls_back_on_markers_and_edits_only() -> None:
    turns: list[Turn] = [text_turn("u0", "user", "go")]
    for k in range(1, 30):
        turns.append(call_turn(f"a{k}", f"c{k}"))
        turns.append(results(f"r{k}", f"c{k}"))
    seq = tuple(turns)
    vb = ViewBuilder("anthropic")
    for n in range(1, len(seq) + 1):
        assert vb.view(seq[:n]) == build_view(seq[:n], "anthropic")
    assert vb.full_builds == 1
    with_marker = (*seq, marker("m", "a1", "r1"))
    assert vb.view(with_marker) == build_view(with_marker, "anthropic")
    assert vb.full_builds == 2
    edited = (text_turn("u0", "user", "other"), *seq[1:])
    assert vb.view(edited) == build_view(edited, "anthropic")
    assert vb.full_builds == 3


def test_view_builder_reports_repairs() -> None:
    seen: list[str] = []
    vb = ViewBuilder("anthropic", on_repair=lambda r: seen.append(r.kind))
    vb.view((text_turn("u", "user", "x"), call_turn("a", "c1"), text_turn("u2", "user", "y")))
    assert seen == ["missing_result"]


def test_the_summary_label_makes_no_claim_on_where_the_users_messages_are() -> None:
    """trial5: the label said the user's messages "follow" the summary while the kept ones
    are stored (and sent) before it; it now says only that they are kept outside it."""
    assert "follow" not in SUMMARY_HEADER and "precede" not in SUMMARY_HEADER
    assert "kept word for word outside it" in SUMMARY_HEADER
