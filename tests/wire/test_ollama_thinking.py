"""Ollama's thinking is local-only: stored in the session, never sent back, neither to Ollama
nor to any other provider (a fallback, a model switch), whatever else the turn holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.messages import (
    TARGETS,
    Provenance,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.ollama_request import to_ollama_messages
from tether.wire import build_view, reasoning_action

OLLAMA = Provenance(provider="ollama", api="ollama", model="qwen3")


def history(thought: str, tagged: bool) -> tuple[Turn, ...]:
    block = ThinkingBlock(text=thought, producer="ollama" if tagged else None)
    return (
        Turn(id="u1", role="user", content=(TextBlock(text="list it"),)),
        Turn(
            id="a1",
            role="assistant",
            provenance=OLLAMA,
            content=(block, ToolCallBlock(id="c1", name="ls", arguments={})),
            stop_reason="tool_use",
        ),
        Turn(
            id="u2",
            role="user",
            content=(ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="a.txt"),)),),
        ),
        Turn(
            id="a2",
            role="assistant",
            provenance=OLLAMA,
            content=(block, TextBlock(text="one file")),
        ),
        Turn(id="u3", role="user", content=(TextBlock(text="thanks"),)),
    )


@given(
    target=st.sampled_from(TARGETS),
    thought=st.text(min_size=1, max_size=20).filter(str.strip),
    tagged=st.booleans(),
    signed=st.booleans(),
)
def test_ollama_thinking_never_reaches_the_wire(
    target: Target, thought: str, tagged: bool, signed: bool
) -> None:
    block = ThinkingBlock(
        text=thought, producer="ollama" if tagged else None, signature="s" if signed else None
    )
    assert reasoning_action(block, target, provenance=OLLAMA) == "drop"
    turns = history(thought, tagged)
    view = build_view(turns, target)
    assert not any(isinstance(b, ThinkingBlock) for t in view for b in t.content)
    assert any(isinstance(b, ThinkingBlock) for b in turns[1].content)  # the stored turns keep it


def test_the_ollama_request_carries_no_thinking_of_any_producer() -> None:
    other = ThinkingBlock(text="openai reasoning", producer="openai")
    turns = (
        Turn(id="u1", role="user", content=(TextBlock(text="hi"),)),
        Turn(id="a1", role="assistant", content=(other, TextBlock(text="hello"))),
        Turn(id="a2", role="assistant", content=(ThinkingBlock(text="only thought"),)),
        Turn(id="u2", role="user", content=(TextBlock(text="again"),)),
    )
    messages = to_ollama_messages(turns)
    assert all("thinking" not in m for m in messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
