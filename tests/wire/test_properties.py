"""Property tests: the wire-view contract, idempotence, purity, incremental == full."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import WireError
from tether.messages import Provenance, Target, TextBlock, Turn
from tether.wire import (
    Repair,
    ViewBuilder,
    build_view,
    elide_markers,
    ensure_user_tail,
    repair_pairing,
    sanitize_history_for_provider,
    sanitize_tool_ids,
)
from tether.wire.interrupts import (
    INTERRUPTED_REQUEST_TEXT,
    cancelled_reply,
    cut_reply,
    is_cancelled_reply,
    render_interrupts,
)

from .contract import view_problems
from .strategies import routes, targets, transcripts


class _Opts(TypedDict):
    """`build_view`'s options the properties vary."""

    supports_prefill: bool
    route: Provenance | None
    vendor_endpoint: bool


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(transcripts(), targets, st.booleans(), routes, st.booleans())
def test_view_satisfies_contract(
    turns: tuple[Turn, ...], target: Target, prefill: bool, route: Provenance | None, vendor: bool
) -> None:
    before = copy.deepcopy(turns)
    repairs: list[Repair] = []
    opts: _Opts = {"supports_prefill": prefill, "route": route, "vendor_endpoint": vendor}
    view = build_view(turns, target, on_repair=repairs.append, **opts)
    assert turns == before, "the input was mutated"
    assert view_problems(view, target, **opts) == []
    again = build_view(view, target, **opts)
    assert again == view
    assert again is view, "a built view must come back as the same object"
    assert build_view(turns, target, **opts) == view  # deterministic


@SETTINGS
@given(transcripts(), targets, routes)
def test_each_pass_is_pure_and_idempotent(
    turns: tuple[Turn, ...], target: Target, route: Provenance | None
) -> None:
    passes: list[Callable[[tuple[Turn, ...]], tuple[Turn, ...]]] = [
        elide_markers,
        render_interrupts,
        lambda v: sanitize_history_for_provider(v, target, route=route),
        lambda v: sanitize_tool_ids(v, target),
        repair_pairing,
        ensure_user_tail,
    ]
    v = turns
    for p in passes:
        before = copy.deepcopy(v)
        out = p(v)
        assert v == before
        assert p(out) == out
        assert p(out) is out
        v = out


@SETTINGS
@given(transcripts(), targets)
def test_strict_raises_iff_repairs(turns: tuple[Turn, ...], target: Target) -> None:
    repairs: list[Repair] = []
    build_view(turns, target, on_repair=repairs.append)
    try:
        build_view(turns, target, strict=True)
    except WireError as exc:
        assert repairs and exc.kind == repairs[0].kind
    else:
        assert not repairs


@st.composite
def growth(draw: st.DrawFn) -> list[tuple[Turn, ...]]:
    """A sequence of histories, mostly each extending the previous, sometimes edited."""
    full = draw(transcripts(max_turns=24))
    steps: list[tuple[Turn, ...]] = []
    n = 0
    while n < len(full):
        n = min(len(full), n + draw(st.integers(0, 4)))
        seq = full[:n]
        edit = draw(st.sampled_from(["none"] * 6 + ["truncate", "replace"]))
        if edit == "truncate" and n:
            seq = seq[: draw(st.integers(0, n - 1))]
        elif edit == "replace" and n:
            k = draw(st.integers(0, n - 1))
            seq = (*seq[:k], Turn(id=f"e{k}", role="user", content=()), *seq[k + 1 :])
        steps.append(seq)
    return steps


@SETTINGS
@given(growth(), targets, st.booleans(), routes, st.booleans())
def test_view_builder_equals_build_view(
    steps: list[tuple[Turn, ...]],
    target: Target,
    prefill: bool,
    route: Provenance | None,
    vendor: bool,
) -> None:
    opts: _Opts = {"supports_prefill": prefill, "route": route, "vendor_endpoint": vendor}
    vb = ViewBuilder(target, **opts)
    for seq in steps:
        assert vb.view(seq) == build_view(seq, target, **opts)


@settings(max_examples=60, deadline=None)
@given(transcripts(max_turns=30, markers=False), targets)
def test_view_builder_is_incremental_without_markers(
    turns: tuple[Turn, ...], target: Target
) -> None:
    vb = ViewBuilder(target)
    for n in range(len(turns) + 1):
        assert vb.view(turns[:n]) == build_view(turns[:n], target)
    assert vb.full_builds <= 1


@SETTINGS
@given(transcripts(markers=False), targets, st.booleans(), st.data())
def test_a_cancelled_prompt_reaches_the_wire_followed_by_the_interruption_note(
    turns: tuple[Turn, ...], target: Target, prefill: bool, data: st.DataObject
) -> None:
    """A user prompt, the stored cancel, a new prompt, anywhere in a history: the view keeps
    the contract and carries the cancelled prompt, the note and the new prompt in that order."""
    at = data.draw(st.integers(0, len(turns)))
    cancelled = Turn(id="c1", role="user", content=(TextBlock(text="CANCELLED-PROMPT"),))
    new = Turn(id="c3", role="user", content=(TextBlock(text="NEW-PROMPT"),))
    history = (*turns[:at], cancelled, cancelled_reply("c2"), new, *turns[at:])
    view = build_view(history, target, supports_prefill=prefill)
    assert view_problems(view, target, supports_prefill=prefill) == []
    assert not any(is_cancelled_reply(t) for t in view)
    texts = [b.text for t in view for b in t.content if isinstance(b, TextBlock)]
    i = texts.index("CANCELLED-PROMPT")
    assert texts[i : i + 3] == ["CANCELLED-PROMPT", INTERRUPTED_REQUEST_TEXT, "NEW-PROMPT"]
    assert ViewBuilder(target, supports_prefill=prefill).view(history) == view


@SETTINGS
@given(transcripts(markers=False), targets, st.booleans(), st.data())
def test_a_cut_reply_reaches_the_wire_followed_by_the_interruption_note(
    turns: tuple[Turn, ...], target: Target, prefill: bool, data: st.DataObject
) -> None:
    """A prompt, the part of its reply a cancel cut, the stored cancel, a new prompt, anywhere
    in a history: the view keeps the contract, the cut reply stays the assistant's, and the note
    comes right after it, before the new prompt (incrementally the same)."""
    at = data.draw(st.integers(0, len(turns)))
    asked = Turn(id="c0", role="user", content=(TextBlock(text="ASKED"),))
    cut = Turn(
        id="c1", role="assistant", content=(TextBlock(text="CUT-REPLY"),), stop_reason="interrupted"
    )
    new = Turn(id="c3", role="user", content=(TextBlock(text="NEW-PROMPT"),))
    history = (*turns[:at], asked, cut, cancelled_reply("c2"), new, *turns[at:])
    assert cut_reply(history[: at + 2]) and not cut_reply(history[: at + 1])
    view = build_view(history, target, supports_prefill=prefill)
    assert view_problems(view, target, supports_prefill=prefill) == []
    texts = [(t.role, b.text) for t in view for b in t.content if isinstance(b, TextBlock)]
    i = texts.index(("assistant", "CUT-REPLY"))
    assert texts[i : i + 3] == [
        ("assistant", "CUT-REPLY"),
        ("user", INTERRUPTED_REQUEST_TEXT),
        ("user", "NEW-PROMPT"),
    ]
    assert ViewBuilder(target, supports_prefill=prefill).view(history) == view
