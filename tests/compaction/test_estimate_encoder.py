"""The token estimate of a tool call counts its arguments' JSON (`tether.tokens`): through one
encoder built once, not one built per call by `json.dumps` with options (issue 38: one a tool
turn; counted), with the same count for any arguments (Hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.messages import ToolCallBlock, Turn
from tether.tokens import CHARS_PER_TOKEN, message_tokens

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _call_turn(arguments: dict[str, Any]) -> Turn:
    return Turn(
        id="t", role="assistant", content=(ToolCallBlock(id="c", name="echo", arguments=arguments),)
    )


@given(st.dictionaries(st.text(max_size=5), values, max_size=4))
def test_the_estimate_counts_json_dumps_characters(arguments: dict[str, Any]) -> None:
    chars = len("echo") + len(json.dumps(arguments, ensure_ascii=False, default=str))
    assert message_tokens(_call_turn(arguments)) == -(-chars // CHARS_PER_TOKEN)


def test_no_encoder_is_built_per_tool_call(monkeypatch: pytest.MonkeyPatch) -> None:
    built = [0]

    class Counting(json.JSONEncoder):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built[0] += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(json, "JSONEncoder", Counting)
    for k in range(100):
        message_tokens(_call_turn({"text": f"turn {k}", "n": k}))
    assert built[0] == 0  # 100 before
