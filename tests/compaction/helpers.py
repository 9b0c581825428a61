"""Builders for compaction tests: histories of rounds, a summarizer that records requests."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from tether.messages import (
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    Turn,
    text_turn,
    tool_result,
)
from tether.providers.base import ModelRequest
from tether.testing import ScriptedProvider

TASK = "Refactor the parser in src/parse.py and keep every test green.  \n(exact bytes)"


def round_turns(
    k: int, *, calls: int = 1, result_chars: int = 40, text: str | None = None
) -> list[Turn]:
    """Round k: an assistant turn with `calls` tool calls, then one results turn."""
    cs = tuple(
        ToolCallBlock(id=f"c{k}_{j}", name="read", arguments={"path": f"f{k}_{j}.py"})
        for j in range(calls)
    )
    body = (TextBlock(text=text),) if text else ()
    a = Turn(id=f"a{k}", role="assistant", content=(*body, *cs), stop_reason="tool_use")
    u = Turn(
        id=f"u{k}",
        role="user",
        content=tuple(tool_result(c.id, f"result {k}/{c.id} " + "x" * result_chars) for c in cs),
    )
    return [a, u]


def history(n_rounds: int, *, result_chars: int = 40, task: str = TASK) -> tuple[Turn, ...]:
    """The original task, then `n_rounds` tool rounds."""
    turns: list[Turn] = [text_turn("task", "user", task)]
    for k in range(n_rounds):
        turns += round_turns(k, result_chars=result_chars)
    return tuple(turns)


@st.composite
def histories(draw: st.DrawFn, max_rounds: int = 8) -> tuple[Turn, ...]:
    """A task followed by a random mix of tool rounds, user text turns and assistant replies."""
    turns: list[Turn] = []
    if draw(st.booleans()):
        turns.append(text_turn("sys", "system", "be brief"))
    turns.append(text_turn("task", "user", TASK))
    for k in range(draw(st.integers(0, max_rounds))):
        kind = draw(st.sampled_from(["tool", "tool", "user", "reply", "image"]))
        if kind == "tool":
            turns += round_turns(k, calls=draw(st.integers(1, 3)))
        elif kind == "user":
            turns.append(text_turn(f"q{k}", "user", f"follow-up {k}"))
        elif kind == "image":
            turns.append(
                Turn(
                    id=f"i{k}",
                    role="user",
                    content=(
                        TextBlock(text="see"),
                        ImageBlock(media_type="image/png", data="AA=="),
                    ),
                )
            )
        else:
            turns.append(text_turn(f"r{k}", "assistant", f"reply {k}"))
    return tuple(turns)


def summarizer(texts: Sequence[str] | None = None) -> ScriptedProvider:
    """A provider answering every summary call with a numbered summary."""
    counter = iter(range(1, 10_000))

    def answer(request: ModelRequest) -> str:
        n = next(counter)
        return texts[n - 1] if texts is not None else f"## Goal\nsummary #{n}"

    return ScriptedProvider(answer)


def request_text(request: ModelRequest) -> str:
    """The summary call's user message text."""
    return "".join(t.text for t in request.messages)
