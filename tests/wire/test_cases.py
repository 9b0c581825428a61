"""Cases T01, T02, T03, T04, T05, T07, T08, T10, T12 (wire parts), each with variants of its kind."""

from __future__ import annotations

import pytest

from kit.cases import load_case, neutral_to_turns
from tether.errors import WireError
from tether.messages import (
    TARGETS,
    CompactSummaryBlock,
    ImageBlock,
    Provenance,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    text_turn,
    tool_result,
    turn_from_json,
    turn_to_json,
)
from tether.providers.assemble import Assembler
from tether.providers.base import StreamDone, ToolCallDelta, ToolCallEnd, ToolCallStart
from tether.wire import (
    NO_OUTPUT_TEXT,
    Repair,
    ViewBuilder,
    build_view,
    check_pairing,
    classify_tail,
    drop_earlier_thinking,
    interrupt_results,
    remint_tool_call_ids,
    thinking_must_be_disabled,
    tool_call_ids,
)

from .contract import view_problems

ANTHROPIC_OPUS = Provenance(provider="anthropic", api="anthropic", model="claude-opus-B")


def all_blocks(view: tuple[Turn, ...]) -> list[object]:
    return [b for t in view for b in t.content]


def no_blank_text(view: tuple[Turn, ...]) -> bool:
    for t in view:
        for b in t.content:
            parts = b.content if isinstance(b, ToolResultBlock) else (b,)
            for p in parts:
                if isinstance(p, TextBlock) and not p.text.strip():
                    return False
    return True


# -- T01: interrupt during tool execution ---------------------------------------------------


def test_t01_interrupt_answers_pending_calls_in_the_same_results_turn() -> None:
    case = load_case("T01")
    history = neutral_to_turns(case["input"]["history"])
    assert classify_tail(history) == "interrupted"
    fixed = interrupt_results(history, turn_id="r1")
    assert len(fixed) == len(history) and fixed[-1].id == history[-1].id
    results = fixed[-1].tool_results
    assert [r.tool_call_id for r in results] == ["toolu_A", "toolu_B"]
    assert results[1].is_error and "interrupted" in results[1].text.lower()
    assert "rejected" not in results[1].text.lower()
    assert classify_tail(fixed) == "clean"
    nxt = neutral_to_turns([case["input"]["next_user"]], id_prefix="u")
    session = (*fixed, *nxt)
    view = build_view(session, "anthropic")
    assert [t.role for t in view] == ["user", "assistant", "user"]
    assert [b.type for b in view[1].content] == ["text", "tool_call", "tool_call"]
    last = view[2].content
    assert [type(b).__name__ for b in last] == ["ToolResultBlock", "ToolResultBlock", "TextBlock"]
    assert last[2] == TextBlock(text="Stop. Do Y instead.")
    for target in TARGETS:
        assert view_problems(build_view(session, target), target) == []


def test_t01_interrupt_before_any_result_appends_one_results_turn() -> None:
    history = neutral_to_turns(load_case("T01")["input"]["history"])[:2]
    fixed = interrupt_results(history, turn_id="r1")
    assert fixed[:2] == history and fixed[2].id == "r1"
    assert all(r.is_error for r in fixed[2].tool_results)
    assert interrupt_results(fixed, turn_id="r2") is fixed  # nothing pending any more


@pytest.mark.parametrize("target", TARGETS)
def test_t01_old_broken_session_is_repaired_on_every_request(target: Target) -> None:
    # Persisted broken: B has no result, the user spoke next, and a stray result names a
    # call that never existed.
    history = neutral_to_turns(load_case("T01")["input"]["history"])
    stray = Turn(
        id="x", role="user", content=(tool_result("toolu_Z", "stale"), TextBlock(text="Stop."))
    )
    session = (*history, stray, text_turn("a2", "assistant", "OK."), text_turn("u3", "user", "Go."))
    repairs: list[Repair] = []
    view = build_view(session, target, on_repair=repairs.append)
    assert view_problems(view, target) == []
    assert sorted(r.kind for r in repairs) == ["missing_result", "orphan_result"]
    lost = view[2].tool_results[1]
    assert lost.tool_call_id == "toolu_B" and lost.is_error
    with pytest.raises(WireError) as err:
        build_view(session, target, strict=True)
    assert err.value.kind in ("missing_result", "orphan_result")


def test_t01_kind_results_far_away_duplicated_or_out_of_order() -> None:
    a = Turn(
        id="a",
        role="assistant",
        content=(
            ToolCallBlock(id="c1", name="read"),
            ToolCallBlock(id="c2", name="read"),
            ToolCallBlock(id="c3", name="read"),
        ),
    )
    session = (
        text_turn("u0", "user", "go"),
        a,
        Turn(
            id="r",
            role="user",
            content=(TextBlock(text="note"), tool_result("c2", "two"), tool_result("c1", "one")),
        ),
        text_turn("mid", "assistant", "hm"),
        Turn(id="r2", role="user", content=(tool_result("c3", "three"), tool_result("c1", "dup"))),
    )
    repairs: list[Repair] = []
    view = build_view(session, "anthropic", on_repair=repairs.append)
    assert view_problems(view, "anthropic") == []
    assert [r.tool_call_id for r in view[2].tool_results] == ["c1", "c2", "c3"]
    assert view[2].tool_results[0].text == "one"  # the first result is kept
    assert view[2].content[3] == TextBlock(text="note")  # results first, then the text
    assert {r.kind for r in repairs} == {"reordered_results", "moved_result", "duplicate_result"}
    # The emptied turn keeps alternation with a neutral placeholder.
    assert [t.role for t in view] == ["user", "assistant", "user", "assistant", "user"]


# -- T02: empty tool output -----------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("empty", ["", " \n", None])
def test_t02_empty_result_is_kept_and_rendered_non_empty(target: Target, empty: str | None) -> None:
    history = neutral_to_turns(load_case("T02")["input"])
    if empty is None:  # an empty text part beside an image
        parts = (TextBlock(text=""), ImageBlock(media_type="image/png", data="AA=="))
        history = (
            *history[:2],
            Turn(
                id="m2",
                role="user",
                content=(ToolResultBlock(tool_call_id="toolu_A", content=parts),),
            ),
        )
    elif empty:
        history = (
            *history[:2],
            Turn(id="m2", role="user", content=(tool_result("toolu_A", empty),)),
        )
    stored = history[2].tool_results[0]
    view = build_view(history, target)
    results = [b for b in all_blocks(view) if isinstance(b, ToolResultBlock)]
    assert len(results) == 1 and results[0].tool_call_id == "toolu_A"
    assert no_blank_text(view)
    if empty is None:
        assert results[0].content == (ImageBlock(media_type="image/png", data="AA=="),)
    else:
        assert results[0].text == NO_OUTPUT_TEXT
    assert history[2].tool_results[0] is stored  # storage keeps the empty result
    assert view_problems(view, target) == []


def test_t02_kind_no_empty_text_block_anywhere() -> None:
    session = (
        Turn(id="u", role="user", content=(TextBlock(text=""), TextBlock(text="hi"))),
        Turn(
            id="a", role="assistant", content=(TextBlock(text=" "), ToolCallBlock(id="c", name="x"))
        ),
        Turn(id="r", role="user", content=(tool_result("c", ""), TextBlock(text="\n"))),
        Turn(id="a2", role="assistant", content=(TextBlock(text=""),)),
        Turn(id="u2", role="user", content=()),
    )
    view = build_view(session, "anthropic")
    assert no_blank_text(view)
    assert view_problems(view, "anthropic") == []
    assert len([b for b in all_blocks(view) if isinstance(b, ToolResultBlock)]) == 1


# -- T03: trimming splits a call from its result --------------------------------------------


def test_t03_every_trimmed_window_passes_the_validator() -> None:
    history = neutral_to_turns(load_case("T03")["input"]["history"])
    for k in range(len(history) + 1):
        window = history[len(history) - k :]
        for target in TARGETS:
            view = build_view(window, target)
            assert view_problems(view, target) == [], (k, target)
            assert check_pairing(view) == []
            assert not (view and view[0].tool_results)  # never starts at a tool message
    last4 = build_view(history[-3:], "openai-chat")
    assert [t.text for t in last4][-2:] == ["It's sunny and 30C.", "And tomorrow?"]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_t03_compaction_cutting_inside_a_group_still_pairs(cut: int) -> None:
    history = neutral_to_turns(load_case("T03")["input"]["history"])
    marker = Turn(
        id="mk",
        role="user",
        content=(
            CompactSummaryBlock(
                summary="Asked about Florida weather.",
                replaces_turn_ids=tuple(t.id for t in history[:cut]),
            ),
        ),
    )
    session = (*history, marker)
    for target in TARGETS:
        view = build_view(session, target)
        assert view_problems(view, target) == []
        assert view[0].role == "user" and "summary" in view[0].text.lower()
        assert "written by the assistant model, not by the user" in view[0].text


# -- T04: missing tool-call ids -------------------------------------------------------------


def test_t04_missing_stream_id_is_minted_once_and_used_everywhere() -> None:
    asm = Assembler("turn7")
    for ev in (
        ToolCallStart(index=0, id=None, name="get_weather"),
        ToolCallDelta(index=0, arguments_delta='{"city": "Paris"}'),
        ToolCallEnd(index=0),
        StreamDone(stop_reason="tool_use"),
    ):
        asm.feed(ev)
    turn = asm.turn()
    call = turn.tool_calls[0]
    assert call.id and call.arguments == {"city": "Paris"}
    session = (
        text_turn("u", "user", "weather?"),
        turn,
        Turn(id="r", role="user", content=(tool_result(call.id, "sunny"),)),
    )
    for target in TARGETS:
        view = build_view(session, target)
        assert view[1].tool_calls[0].id == view[2].tool_results[0].tool_call_id
        assert view[2].tool_results[0].tool_call_id not in ("", None)
        assert view_problems(view, target) == []


@pytest.mark.parametrize("target", TARGETS)
def test_t04_kind_empty_or_invalid_stored_ids_never_reach_the_wire(target: Target) -> None:
    calls = (
        ToolCallBlock(id="", name="a"),
        ToolCallBlock(id="call.1/x", name="b"),
        ToolCallBlock(id="y" * 90, name="c"),
    )
    session = (
        text_turn("u", "user", "go"),
        Turn(id="a", role="assistant", content=calls),
        Turn(id="r", role="user", content=tuple(tool_result(c.id, c.name) for c in calls)),
    )
    view = build_view(session, target)
    assert view_problems(view, target) == []
    assert [r.text for r in view[2].tool_results] == ["a", "b", "c"]  # each result kept its call
    assert all(c.id for c in view[1].tool_calls)


# -- T05: parallel calls sharing one id -----------------------------------------------------


def test_t05_duplicate_ids_in_one_turn_are_reminted_before_persisting() -> None:
    asm = Assembler("t1")
    for ev in (
        ToolCallStart(index=0, id="call_X", name="read"),
        ToolCallDelta(index=0, arguments_delta='{"path": "a.md"}'),
        ToolCallStart(index=1, id="call_X", name="read"),
        ToolCallDelta(index=1, arguments_delta='{"path": "b.md"}'),
        ToolCallEnd(index=0),
        ToolCallEnd(index=1),
        StreamDone(stop_reason="tool_use"),
    ):
        asm.feed(ev)
    raw = asm.turn()
    turn = remint_tool_call_ids(raw, set())
    calls = turn.tool_calls
    assert len(calls) == 2 and len({c.id for c in calls}) == 2
    assert [c.arguments["path"] for c in calls] == ["a.md", "b.md"]
    assert calls[0].id == "call_X" and calls[1].id == "call_X_r1"
    assert (calls[1].provider_meta or {})["original_id"] == "call_X"
    assert remint_tool_call_ids(turn, set()) is turn  # nothing left to re-mint
    results = Turn(
        id="r", role="user", content=tuple(tool_result(c.id, c.arguments["path"]) for c in calls)
    )
    session = (text_turn("u", "user", "read both"), turn, results)
    view = build_view(session, "anthropic")
    assert [r.text for r in view[2].tool_results] == ["a.md", "b.md"]
    assert view_problems(view, "anthropic") == []


def test_t05_kind_collision_with_earlier_session_ids() -> None:
    earlier = (
        Turn(
            id="a0",
            role="assistant",
            content=(ToolCallBlock(id="call_X", name="r"), ToolCallBlock(id="call_X_r1", name="r")),
        ),
    )
    used = tool_call_ids(earlier)
    new = Turn(
        id="a1",
        role="assistant",
        content=(
            ToolCallBlock(id="call_X", name="r"),
            ToolCallBlock(id="z", name="r"),
            ToolCallBlock(id="z", name="r"),
        ),
    )
    out = remint_tool_call_ids(new, used)
    assert [c.id for c in out.tool_calls] == ["call_X_r2", "z", "z_r1"]
    assert used == {"call_X", "call_X_r1"}  # the caller's set is not modified


@pytest.mark.parametrize("target", TARGETS)
def test_t05_kind_legacy_history_with_repeated_ids_gets_unique_wire_ids(target: Target) -> None:
    def pair(k: int, cid: str) -> tuple[Turn, Turn]:
        return (
            Turn(
                id=f"a{k}",
                role="assistant",
                content=(ToolCallBlock(id=cid, name="read"), ToolCallBlock(id=cid, name="read")),
            ),
            Turn(
                id=f"r{k}",
                role="user",
                content=(tool_result(cid, f"{k}-first"), tool_result(cid, f"{k}-second")),
            ),
        )

    session = (text_turn("u", "user", "go"), *pair(1, "call_X"), *pair(2, "call_X"))
    view = build_view(session, target)
    assert view_problems(view, target) == []
    ids = [c.id for t in view for c in t.tool_calls]
    assert len(ids) == 4 and len(set(ids)) == 4
    assert view[2].tool_results[0].text == "1-first" and view[4].tool_results[0].text == "2-first"


@pytest.mark.parametrize("target", TARGETS)
def test_t05_kind_an_issued_id_repeated_in_its_turn_is_echoed_once_and_stays_so(
    target: Target,
) -> None:
    """A route's own turn where one call's issued id (its `original_id`) is a sibling's stored
    id, or two siblings issued one id: the first call gets the id back, the others unique
    names that no later sibling's echo takes (before: two calls went out as `q`), and the pass
    gives the same view on its own output (found by Hypothesis: the first pass renamed the
    sibling, the second then echoed)."""
    route = Provenance(provider="p", api=target, model="m")
    kimi = "functions.read:0"
    turn = Turn(
        id="a",
        role="assistant",
        content=(
            ToolCallBlock(id="a", name="read", provider_meta={"original_id": kimi}),
            ToolCallBlock(id=kimi, name="read"),
            ToolCallBlock(id="q", name="read", provider_meta={"original_id": kimi}),
            ToolCallBlock(id="q", name="read"),
        ),
        provenance=route,
    )
    results = Turn(
        id="r", role="user", content=tuple(tool_result(c, c) for c in ("a", kimi, "q", "q"))
    )
    session = (text_turn("u", "user", "go"), turn, results)
    view = build_view(session, target, route=route)
    ids = [c.id for c in view[1].tool_calls]
    assert len(set(ids)) == 4, ids
    assert build_view(view, target, route=route) == view
    assert build_view(session, target) == build_view(build_view(session, target), target)
    assert ids[0] == kimi and ids[3] == "q"  # echoed to the route that issued them
    assert [r.tool_call_id for r in view[2].tool_results] == ids


# -- T07: thinking replay must be byte-exact ------------------------------------------------


def t07_turn() -> Turn:
    stored = load_case("T07")["input"]["stored_turn"]
    return neutral_to_turns([stored], id_prefix="a")[0]


def test_t07_thinking_round_trips_and_replays_byte_exact() -> None:
    turn = t07_turn()
    assert turn_from_json(turn_to_json(turn)) == turn
    session = (
        text_turn("u", "user", "check"),
        turn,
        Turn(id="r", role="user", content=(tool_result("toolu_A", "cfg"),)),
    )
    view = build_view(
        session,
        "anthropic",
        route=Provenance(provider="anthropic", api="anthropic", model="claude-A"),
    )
    assert view[1] is turn  # the stored object itself: same text, signature, order, count
    thinking = [b for b in view[1].content if isinstance(b, ThinkingBlock)]
    assert [(b.text, b.signature) for b in thinking] == [
        ("Check the config first.\n", "SIG1"),
        ("Then run tests.", "SIG2"),
    ]


def test_t07_recovery_keeps_the_current_tool_turn_intact() -> None:
    old = Turn(
        id="a0",
        role="assistant",
        content=(
            ThinkingBlock(text="old", signature="S0", producer="anthropic"),
            TextBlock(text="done"),
        ),
    )
    cur = t07_turn()
    session = (
        text_turn("u", "user", "x"),
        old,
        text_turn("u2", "user", "y"),
        cur,
        Turn(id="r", role="user", content=(tool_result("toolu_A", "cfg"),)),
    )
    rec = drop_earlier_thinking(session)
    assert rec[3] is cur and [b.type for b in rec[3].content] == [
        "thinking",
        "thinking",
        "tool_call",
    ]
    assert [b.type for b in rec[1].content] == ["text"]


@pytest.mark.parametrize("signature", [None, ""])
def test_t07_kind_unsigned_thinking_is_never_replayed_to_anthropic(signature: str | None) -> None:
    cut = Turn(
        id="a",
        role="assistant",
        content=(
            ThinkingBlock(text="partial", signature=signature, producer="anthropic"),
            TextBlock(text="hi"),
        ),
    )
    view = build_view((text_turn("u", "user", "x"), cut), "anthropic")
    assert not any(isinstance(b, ThinkingBlock) for b in all_blocks(view))


# -- T08: model switch ----------------------------------------------------------------------


def test_t08_thinking_of_another_model_is_omitted() -> None:
    case = load_case("T08")
    session = neutral_to_turns(case["input"]["history"])
    view = build_view(session, "anthropic", route=ANTHROPIC_OPUS)
    assert view[1].content == (TextBlock(text="Plan: 1) ... 2) ..."),)
    assert view_problems(view, "anthropic", route=ANTHROPIC_OPUS) == []
    same = Provenance(provider="anthropic", api="anthropic", model="claude-sonnet-A")
    assert build_view(session, "anthropic", route=same)[1] is session[1]


@pytest.mark.parametrize("target", ["openai-chat", "openai-responses", "google", "ollama"])
def test_t08_kind_signed_anthropic_thinking_never_goes_to_other_providers(target: Target) -> None:
    session = neutral_to_turns(load_case("T08")["input"]["history"])
    view = build_view(session, target)
    assert not any(isinstance(b, ThinkingBlock) for b in all_blocks(view))
    assert view_problems(view, target) == []


def test_t08_kind_switch_mid_tool_loop_asks_to_disable_thinking() -> None:
    turn = t07_turn()  # claude-A thinking + tool call
    session = (
        text_turn("u", "user", "x"),
        turn,
        Turn(id="r", role="user", content=(tool_result("toolu_A", "cfg"),)),
    )
    view = build_view(session, "anthropic", route=ANTHROPIC_OPUS)
    assert [b.type for b in view[1].content] == ["tool_call"]
    assert thinking_must_be_disabled(view)
    same = build_view(
        session,
        "anthropic",
        route=Provenance(provider="anthropic", api="anthropic", model="claude-A"),
    )
    assert not thinking_must_be_disabled(same)


def test_t08_kind_gemini_signature_only_for_its_route() -> None:
    gem = Provenance(provider="google", api="google", model="gemini-z")
    turn = Turn(
        id="a",
        role="assistant",
        provenance=gem,
        content=(
            ThinkingBlock(text="think", signature="GSIG", producer="google"),
            ToolCallBlock(id="c", name="f", provider_meta={"thoughtSignature": "GSIG2"}),
        ),
    )
    session = (
        text_turn("u", "user", "x"),
        turn,
        Turn(id="r", role="user", content=(tool_result("c", "ok"),)),
    )
    assert build_view(session, "google", route=gem)[1] is turn
    other = build_view(
        session, "google", route=Provenance(provider="google", api="google", model="gemini-other")
    )
    thinking = other[1].content[0]
    assert (
        isinstance(thinking, ThinkingBlock)
        and thinking.signature is None
        and thinking.text == "think"
    )
    assert other[1].tool_calls[0].provider_meta is None
    to_anthropic = build_view(session, "anthropic")
    assert [b.type for b in to_anthropic[1].content] == ["tool_call"]


# -- T10: OpenAI Responses reasoning item and its follower ----------------------------------

RESPONSES = Provenance(provider="openai", api="openai-responses", model="gpt-5-mini")


def t10_session() -> tuple[Turn, ...]:
    return neutral_to_turns(load_case("T10")["input"]["history"])


def test_t10_reasoning_item_stays_before_its_call() -> None:
    session = t10_session()
    view = build_view(session, "openai-responses", route=RESPONSES)
    assert view[1] is session[1]
    first, second = view[1].content
    assert (
        isinstance(first, ThinkingBlock)
        and first.item_id == "rs_1"
        and first.encrypted_content == "ENC1"
    )
    assert first.summary == ()
    assert isinstance(second, ToolCallBlock) and second.provider_meta == {"item_id": "fc_1"}
    assert view_problems(view, "openai-responses", route=RESPONSES) == []


def _call_meta(view: tuple[Turn, ...]) -> object:
    return view[1].tool_calls[0].provider_meta


def test_t10_kind_reasoning_dropped_in_storage_strips_server_ids() -> None:
    session = t10_session()
    a = session[1]
    edited = (
        session[0],
        Turn(id=a.id, role="assistant", provenance=a.provenance, content=a.content[1:]),
        session[2],
    )
    view = build_view(edited, "openai-responses", route=RESPONSES)
    assert _call_meta(view) is None and view[1].tool_calls[0].id == "call_1"
    assert view_problems(view, "openai-responses") == []


def test_t10_kind_reordered_blocks_drop_the_orphan_reasoning_item() -> None:
    session = t10_session()
    a = session[1]
    edited = (
        session[0],
        Turn(id=a.id, role="assistant", provenance=a.provenance, content=a.content[::-1]),
        session[2],
    )
    view = build_view(edited, "openai-responses", route=RESPONSES)
    assert [b.type for b in view[1].content] == ["tool_call"] and _call_meta(view) is None


@pytest.mark.parametrize(
    "route", [Provenance(provider="openai", api="openai-responses", model="gpt-5"), None]
)
def test_t10_kind_unreplayable_reasoning_is_omitted_with_ids(route: Provenance | None) -> None:
    session = t10_session()
    a = session[1]
    if route is None:  # same route, but the encrypted content is missing
        thinking = a.content[0]
        assert isinstance(thinking, ThinkingBlock)
        no_enc = ThinkingBlock(text="", producer="openai", item_id="rs_1", encrypted_content=None)
        session = (
            session[0],
            Turn(
                id=a.id, role="assistant", provenance=a.provenance, content=(no_enc, a.content[1])
            ),
            session[2],
        )
    view = build_view(session, "openai-responses", route=route)
    assert [b.type for b in view[1].content] == ["tool_call"] and _call_meta(view) is None
    assert view_problems(view, "openai-responses") == []


# -- T12: prefill -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "which", ["case_a_structured_output", "case_b_resume_after_interrupted_reply"]
)
@pytest.mark.parametrize("target", TARGETS)
def test_t12_no_assistant_final_view_without_prefill(which: str, target: Target) -> None:
    session = neutral_to_turns(load_case("T12")["input"][which])
    view = build_view(session, target, supports_prefill=False)
    assert view[-1].role == "user"
    assert view[1] is session[1]  # the partial assistant text stays in history
    allowed = build_view(session, target, supports_prefill=True)
    assert allowed[-1].role == "assistant"


def test_t12_kind_internal_calls_and_incremental_views_follow_the_same_rule() -> None:
    session = neutral_to_turns(load_case("T12")["input"]["case_b_resume_after_interrupted_reply"])
    session = (*session, Turn(id="s", role="system", content=(TextBlock(text="note"),)))
    assert build_view(session, "anthropic")[-1].role == "user"
    vb = ViewBuilder("anthropic")
    for n in range(len(session) + 1):
        view = vb.view(session[:n])
        assert not view or [t for t in view if t.role != "system"][-1].role == "user"
    trailing = (text_turn("u", "user", "x"), text_turn("a", "assistant", "{\n  "))
    kept = build_view(trailing, "anthropic", supports_prefill=True)
    assert kept[-1].text == "{"
