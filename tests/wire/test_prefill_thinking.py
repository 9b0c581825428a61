"""A prefill never ends in a thinking block (issue 39, reported by an outside fuzzer).

With prefill allowed, a history ending in an assistant turn that holds only `redacted_thinking`
(or ends with thinking) went out as an assistant-final request whose last block is thinking;
Anthropic answers that with HTTP 400 "The final block in an assistant message cannot be
`thinking`". The tail pass now ends such a view with the `Continue` turn instead.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.messages import RedactedThinkingBlock, TextBlock, ThinkingBlock, Turn
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest
from tether.replay import contract as replay_contract
from tether.wire import ViewBuilder, build_view
from tether.wire.pairing import CONTINUE_TEXT

from .corrupt import ANTHROPIC

PROVIDER = AnthropicProvider(
    ANTHROPIC.model, api_key="test-key", max_output_tokens=8192, supports_prefill=True
)

_reasoning = st.one_of(
    st.builds(RedactedThinkingBlock, data=st.sampled_from(["ZGF0YQ==", "opaque"])),
    st.builds(ThinkingBlock, text=st.just("hmm"), signature=st.just("c2ln")),
)


@settings(max_examples=40, deadline=None)
@given(
    head=st.lists(st.sampled_from(["Sure, ", "ok"]), max_size=1),
    tail=st.lists(_reasoning, min_size=1, max_size=2),
    via_loop=st.booleans(),
)
def test_a_prefill_ending_in_thinking_is_not_sent_as_one(
    head: list[str], tail: list[RedactedThinkingBlock | ThinkingBlock], via_loop: bool
) -> None:
    content = (*(TextBlock(text=t) for t in head), *tail)
    turns = (
        Turn(id="u", role="user", content=(TextBlock(text="q"),)),
        Turn(id="a", role="assistant", content=content, provenance=ANTHROPIC),
    )
    if via_loop:
        view = ViewBuilder("anthropic", route=ANTHROPIC, supports_prefill=True).view(turns)
        req = ModelRequest(model=ANTHROPIC.model, messages=view, is_wire_view=True)
    else:
        req = ModelRequest(model=ANTHROPIC.model, messages=turns)
    assert replay_contract.anthropic_problems(PROVIDER, req) == []
    last = PROVIDER.request_params(req).messages[-1]
    assert last["role"] == "user"


def test_the_reported_history() -> None:
    turns = (
        Turn(id="u", role="user", content=(TextBlock(text="q"),)),
        Turn(
            id="a",
            role="assistant",
            content=(RedactedThinkingBlock(data="ZGF0YQ=="),),
            provenance=ANTHROPIC,
        ),
    )
    view = build_view(turns, "anthropic", supports_prefill=True, route=ANTHROPIC)
    assert view[-1].role == "user" and view[-1].text == CONTINUE_TEXT
    assert view[1] is turns[1]  # the reasoning stays in the history sent
    assert build_view(view, "anthropic", supports_prefill=True, route=ANTHROPIC) is view
