"""Issue 18 item 8: user messages sent after the task stay verbatim after compaction (newest
first, within a budget); past the budget they are folded in and the summary says so."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.compaction.rounds import Scope, is_user_message, select
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.summarize import compact_with
from tether.messages import TextBlock, Turn, text_turn
from tether.wire import build_view

from .helpers import TASK, round_turns


def _compactor(turns: Sequence[Turn], previous_summary: str | None, focus: str | None) -> str:
    return "the summary"


def _history(user_texts: list[str]) -> list[Turn]:
    turns: list[Turn] = [text_turn("task", "user", TASK)]
    for k, text in enumerate(user_texts):
        turns += round_turns(k)
        turns.append(text_turn(f"user{k}", "user", text))
        turns += round_turns(100 + k)
    return turns


def _wire_texts(turns: list[Turn]) -> str:
    view = build_view(tuple(turns), "anthropic")
    return "\n".join(b.text for t in view for b in t.content if isinstance(b, TextBlock))


def test_a_later_correction_survives_compaction_verbatim() -> None:
    turns = _history(["Correction: use tabs, not spaces.  \n(exact)"])
    result = asyncio.run(compact_with(_compactor, CompactionSnapshot.of(turns), Scope.full()))
    assert "user1" not in result.replaced_ids and "user0" not in result.replaced_ids
    assert "a0" in result.replaced_ids
    after = [*turns, result.marker_turn]
    assert "Correction: use tabs, not spaces.  \n(exact)" in _wire_texts(after)
    assert "folded" not in result.summary


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(min_size=1, max_size=400).filter(lambda s: s.strip()), min_size=1, max_size=6),
    st.integers(0, 300),
)
def test_newest_user_messages_kept_within_budget_rest_announced(
    texts: list[str], budget: int
) -> None:
    turns = _history(texts)
    sel = select(CompactionSnapshot.of(turns), Scope.full(), keep_user_tokens=budget)
    users = [t for t in turns[1:] if is_user_message(t)]
    kept_ids = {t.id for t in sel.kept_user}
    replaced = {t.id for t in sel.turns}
    # every user message is either kept or replaced, never both
    assert kept_ids | {u.id for u in users if u.id in replaced} == {u.id for u in users}
    assert not kept_ids & replaced
    # the kept ones are the newest ones, and the newest always is, whatever the budget
    order = [u.id for u in users]
    assert order[-1] in kept_ids
    assert set(order[len(order) - len(kept_ids) :]) == kept_ids
    assert sel.folded_user == len(users) - len(kept_ids)
    result = asyncio.run(compact_with(_compactor, CompactionSnapshot.of(turns), Scope.full()))
    wire = _wire_texts([*turns, result.marker_turn])
    for u in users:
        if u.id not in result.replaced_ids:
            assert u.text in wire
    if any(u.id in result.replaced_ids for u in users):
        assert "folded into this summary" in result.summary


def test_past_the_budget_the_summary_says_so() -> None:
    turns = _history(["first " * 50, "second " * 50, "third"])
    sel = select(CompactionSnapshot.of(turns), Scope.full(), keep_user_tokens=120)
    assert [t.id for t in sel.kept_user] == ["user2", "user1"][::-1] or {
        t.id for t in sel.kept_user
    } == {"user2", "user1"}
    assert sel.folded_user == 1
    assert "user0" in {t.id for t in sel.turns}


def test_the_message_to_answer_is_never_folded_whatever_its_size() -> None:
    """The third trial: a pasted log past the budget, sent as the second message and pushing
    the context over the threshold, was folded into the summary before the model answered
    it; the request held the first prompt and a summary, not the question."""
    pasted = "pasted line\n" * 4000 + "QUESTION: what is the last line above?"
    turns = [*_history(["use tabs"]), text_turn("paste", "user", pasted)]
    result = asyncio.run(compact_with(_compactor, CompactionSnapshot.of(turns), Scope.full()))
    assert "paste" not in result.replaced_ids and "a0" in result.replaced_ids
    assert "QUESTION: what is the last line above?" in _wire_texts([*turns, result.marker_turn])


def test_a_bang_context_note_is_no_user_message_and_is_compacted() -> None:
    """trial4: a `!cmd`'s output (a `CONTEXT_LEAD` user turn) was kept verbatim through every
    compaction as if the user had written it, so two large ones filled the window for good.
    It is context, not the user's words: a compaction replaces it (`recall` still has it)."""
    from tether.compaction.rounds import is_context_note, original_task
    from tether.tui.bang import bang_context

    note = text_turn("bang1", "user", bang_context("seq 1 300000", "1\n2\n" * 5000, 50_000))
    turns = [
        text_turn("task", "user", TASK),
        *round_turns(0),
        note,
        text_turn("user1", "user", "what was that"),
        *round_turns(1),
    ]
    assert is_context_note(note) and not is_user_message(note)
    assert original_task([note, *turns]) is turns[0]  # a first `!cmd` is not the task
    result = asyncio.run(compact_with(_compactor, CompactionSnapshot.of(turns), Scope.full()))
    assert "bang1" in result.replaced_ids and "user1" not in result.replaced_ids
