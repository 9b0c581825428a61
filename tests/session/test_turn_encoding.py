"""`tether.messages.turn_to_json` writes the codec's bytes through orjson: the same bytes as
`TURN_CODEC.dump_json` for any turn (Hypothesis, with texts of every kind, JSON-ish arguments
with floats, NaN, huge integers, non-string keys and bytes), or the codec's own error; and a
session run encodes no ordinary turn through the pydantic codec (counted)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import AgentConfig, messages
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import (
    TURN_CODEC,
    CompactSummaryBlock,
    ImageBlock,
    Provenance,
    RedactedThinkingBlock,
    SearchHit,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
    turn_to_json,
)
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call
from tether.tools.base import tool

texts = st.text()  # control characters, any plane, lone surrogates
small = st.text(max_size=8)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # beyond 64 bits too
    st.floats(),  # NaN and infinities too
    texts,
    st.binary(max_size=4),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(small, small, st.integers()), inner, max_size=3),
    ),
    max_leaves=8,
)
arguments = st.dictionaries(small, values, max_size=4)
maybe = st.one_of(st.none(), small)

blocks = st.one_of(
    st.builds(TextBlock, text=texts),
    st.builds(
        ThinkingBlock,
        text=texts,
        signature=maybe,
        producer=maybe,
        model=maybe,
        item_id=maybe,
        encrypted_content=maybe,
        summary=st.lists(small, max_size=2).map(tuple),
    ),
    st.builds(RedactedThinkingBlock, data=small, producer=maybe),
    st.builds(
        ToolCallBlock,
        id=small,
        name=small,
        arguments=arguments,
        raw_arguments=maybe,
        invalid=maybe,
        provider_meta=st.one_of(st.none(), arguments),
    ),
    st.builds(
        ToolResultBlock,
        tool_call_id=small,
        content=st.lists(
            st.one_of(
                st.builds(TextBlock, text=texts),
                st.builds(ImageBlock, media_type=small, data=small, file=maybe),
            ),
            max_size=2,
        ).map(tuple),
        is_error=st.booleans(),
    ),
    st.builds(
        CompactSummaryBlock,
        summary=texts,
        replaces_turn_ids=st.lists(small, max_size=2).map(tuple),
        generation=st.integers(),
    ),
    st.builds(
        ServerToolBlock,
        name=small,
        producer=small,
        id=small,
        query=texts,
        results=st.lists(st.builds(SearchHit, url=small, title=small), max_size=2).map(tuple),
        error=maybe,
        raw=st.lists(arguments, max_size=2).map(tuple),
    ),
)
turns = st.builds(
    Turn,
    id=small,
    role=st.sampled_from(["user", "assistant", "system"]),
    content=st.lists(blocks, max_size=4).map(tuple),
    usage=st.one_of(
        st.none(),
        st.builds(
            Usage,
            input_tokens=st.integers(min_value=0, max_value=2**70),
            output_tokens=st.integers(min_value=0),
            cache_read_tokens=st.integers(min_value=0),
            cache_write_tokens=st.integers(min_value=0),
            web_search_requests=st.integers(min_value=0),
        ),
    ),
    provenance=st.one_of(st.none(), st.builds(Provenance, provider=small, api=small, model=small)),
    stop_reason=st.sampled_from([None, "end_turn", "tool_use", "max_tokens", "interrupted"]),
)


def _codec(turn: Turn) -> bytes | type[BaseException]:
    try:
        return TURN_CODEC.dump_json(turn)
    except Exception as e:  # the codec's own refusal (a lone surrogate)
        return type(e)


@settings(max_examples=400, deadline=None)
@given(turns)
def test_the_bytes_are_the_codecs_for_any_turn(turn: Turn) -> None:
    want = _codec(turn)
    try:
        got: bytes | type[BaseException] = turn_to_json(turn)
    except Exception as e:
        got = type(e)
    assert got == want


class _CountingCodec:
    """`TURN_CODEC` with its `dump_json` calls counted."""

    def __init__(self) -> None:
        self.dumps = 0

    def dump_json(self, turn: Turn) -> bytes:
        self.dumps += 1
        return TURN_CODEC.dump_json(turn)

    def __getattr__(self, name: str) -> Any:
        return getattr(TURN_CODEC, name)


def test_a_session_run_encodes_no_turn_through_the_pydantic_codec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 tool turns written to a session file: 0 `TURN_CODEC.dump_json` calls (2 a turn
    before), and the file reads back as the turns the agent holds."""
    counting = _CountingCodec()
    monkeypatch.setattr(messages, "TURN_CODEC", counting)

    def echo(text: str) -> str:
        """Echo."""
        return "é\n" + text * 3

    script: list[Any] = [call("echo", id=f"call_{k}", text=f"turn {k}") for k in range(50)]
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(cwd=str(tmp_path))
    agent = Agent(
        ScriptedProvider([*script, "done"]),
        tools=[tool(echo, inline=True)],
        root=str(tmp_path),
        session=AgentSession(sink=writer),
        config=AgentConfig.model_validate({"run": {"max_turns": 60}}),
        compaction=False,
    )
    asyncio.run(agent.run("go"))
    writer.close()
    assert counting.dumps == 0
    loaded = store.load(writer.id)
    assert [TURN_CODEC.dump_json(t) for t in loaded.turns] == [
        TURN_CODEC.dump_json(t) for t in agent.history
    ]
