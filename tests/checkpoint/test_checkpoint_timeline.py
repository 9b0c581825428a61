"""Which snapshot each user message rewinds to (`tether.checkpoint.timeline`, pure): a table of
the cases, and a property over simulated sessions (each message's point is the tree as it was
when the message was sent)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.checkpoint.timeline import Record, UserTurn, point_for, user_turns
from tether.messages import Turn, text_turn, tool_result


def test_user_turns_skip_tool_results_markers_and_synthetic_messages() -> None:
    turns = [
        text_turn("u1", "user", "do it"),
        text_turn("a1", "assistant", "ok"),
        Turn(id="r1", role="user", content=(tool_result("c", "x"),)),
        text_turn("c1", "user", "Please continue."),
        text_turn("u2", "user", "more"),
    ]
    found = user_turns(turns, lambda t: t.text == "Please continue.")
    assert [(t.number, t.index, t.turn_id) for t in found] == [(1, 0, "u1"), (2, 4, "u2")]


@st.composite
def session(draw: st.DrawFn) -> tuple[list[UserTurn], list[Record], list[int], int]:
    """A simulated session: runs of user messages (steering included), each message changing
    files or not; the records the agent writes; the tree (a version number) at each message."""
    tree = 0
    index = 0
    turns: list[UserTurn] = []
    recs: list[Record] = []
    at_turn: list[int] = []
    commits: dict[int, str] = {}

    def commit() -> str:
        return commits.setdefault(tree, f"c{tree}")

    any_record = False
    for _run in range(draw(st.integers(1, 4))):
        if draw(st.booleans()) and any_record:  # the user edits files between runs
            tree += 1
        taken = False
        for _msg in range(draw(st.integers(1, 3))):
            turns.append(UserTurn(number=len(turns) + 1, index=index, turn_id=f"u{index}", text="x"))
            at_turn.append(tree)
            index += 1
            if draw(st.booleans()):  # this message runs a call that changes files
                recs.append(Record(commit=commit(), at="before", turn_id=f"u{index - 1}", position=index))
                any_record = taken = True
                tree += 1
                index += draw(st.integers(1, 3))
            else:
                index += draw(st.integers(0, 2))
        if taken or any_record:
            recs.append(Record(commit=commit(), at="after", position=index))
    return turns, recs, at_turn, tree


@given(session())
def test_each_message_rewinds_to_the_tree_it_was_sent_on(s: tuple[list[UserTurn], list[Record], list[int], int]) -> None:
    turns, recs, at_turn, _ = s
    for turn, tree in zip(turns, at_turn, strict=True):
        point = point_for(turn, recs)
        if not recs:  # a session in which nothing changed files has no checkpoint
            assert point is None
            continue
        assert point is not None
        assert point.commit == f"c{tree}"
