"""The host-facing sanitizer keeps role boundaries: a turn it empties (an assistant turn that held
only reasoning the target cannot read) becomes the neutral `(no content)` marker the pairing
repair uses, never an empty turn; unchanged turns pass by reference; `build_view` is unchanged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.messages import (
    TARGETS,
    Provenance,
    RedactedThinkingBlock,
    Target,
    TextBlock,
    ThinkingBlock,
    Turn,
)
from tether.wire import build_view, sanitize_history_for_provider
from tether.wire.pairing import PLACEHOLDER_TEXT

ANT = Provenance(provider="anthropic", api="anthropic", model="claude-a")


def only_reasoning(redacted: bool) -> Turn:
    block = (
        RedactedThinkingBlock(data="opaque")
        if redacted
        else ThinkingBlock(text="t", signature="S", producer="anthropic")
    )
    return Turn(id="a1", role="assistant", provenance=ANT, content=(block,))


def _history(redacted: bool, with_text: bool) -> tuple[Turn, ...]:
    """A user turn, then an assistant turn of reasoning (and, `with_text`, a text block)."""
    turn = only_reasoning(redacted)
    if with_text:
        turn = Turn(
            id="a1", role="assistant", provenance=ANT, content=(*turn.content, TextBlock(text="x"))
        )
    return (Turn(id="u1", role="user", content=(TextBlock(text="hi"),)), turn)


def test_an_emptied_turn_gets_the_placeholder() -> None:
    turns = (
        Turn(id="u1", role="user", content=(TextBlock(text="hi"),)),
        only_reasoning(redacted=True),
        Turn(id="u2", role="user", content=(TextBlock(text="again"),)),
    )
    out = sanitize_history_for_provider(turns, "openai-chat")
    assert out[0] is turns[0] and out[2] is turns[2]
    assert out[1].id == "a1" and out[1].role == "assistant"
    assert out[1].content == (TextBlock(text=PLACEHOLDER_TEXT),)
    assert sanitize_history_for_provider(turns, "anthropic") is turns


@given(target=st.sampled_from(TARGETS), redacted=st.booleans(), with_text=st.booleans())
def test_no_turn_comes_back_empty(target: Target, redacted: bool, with_text: bool) -> None:
    turns = _history(redacted, with_text)
    out = sanitize_history_for_provider(turns, target)
    assert [t.id for t in out] == ["u1", "a1"] and all(t.content for t in out)
    if with_text:
        assert TextBlock(text=PLACEHOLDER_TEXT) not in out[1].content


def test_build_view_still_repairs_the_emptied_turn_itself() -> None:
    turns = (
        Turn(id="u1", role="user", content=(TextBlock(text="hi"),)),
        only_reasoning(redacted=True),
        Turn(id="u2", role="user", content=(TextBlock(text="again"),)),
    )
    view = build_view(turns, "openai-chat")
    assert view[-1].role == "user" and all(t.content for t in view)


@given(target=st.sampled_from(TARGETS), redacted=st.booleans(), with_text=st.booleans())
def test_without_the_placeholder_only_the_emptied_turn_differs(
    target: Target, redacted: bool, with_text: bool
) -> None:
    """`placeholder=False` (`build_view`'s second pass, whose pairing pass repairs an empty
    turn) is the same pass: the one difference is an emptied turn left empty."""
    turns = _history(redacted, with_text)
    filled = sanitize_history_for_provider(turns, target)
    bare = sanitize_history_for_provider(turns, target, placeholder=False)
    assert bare[0] is turns[0] and [t.id for t in bare] == ["u1", "a1"]
    if bare[1].content:
        assert bare == filled
    else:
        assert filled[1].content == (TextBlock(text=PLACEHOLDER_TEXT),)
