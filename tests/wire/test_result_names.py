"""Every tool result names the call it answers, whatever ids repeat across turns (issue 39).

Local models often number their calls `call_0`, `call_1`, ... afresh in every turn, and a
route's own ids go back to it verbatim (`tether.wire.ids`), so one id can stand for two calls
of different tools in one request. Targets that match a result to its call by name (Ollama's
`tool_name`, Gemini's `functionResponse.name`) must take the name from the call the result
answers (the assistant turn right before it), not from the last call holding that id anywhere
in the history. The property runs every target of the vendor contract test over tool loops
whose ids come from a pool of three, and checks the request against the providers' rules
(`tether.wire.contract`: the k-th Ollama `tool` message carries the k-th call's name, a Gemini
response names its call) and, independently here, every result's name against the stored call.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.messages import Provenance, TextBlock, ToolCallBlock, ToolResultBlock, Turn
from tether.providers.base import ModelRequest
from tether.providers.google import GoogleProvider
from tether.providers.ollama import OllamaProvider
from tether.replay import contract as replay_contract
from tether.wire import ViewBuilder
from tether.wire import contract as rules

from .corrupt import GOOGLE, OLLAMA, PROVENANCES
from .test_vendor_contract import TARGET_NAMES, VARIANTS, check_view

NAMES = ["f", "grep", "read"]
IDS = ["call_0", "call_1", "a_b"]


@st.composite
def reused_ids(draw: st.DrawFn) -> tuple[Turn, ...]:
    """A user prompt, then 1..5 tool loops whose call ids come from `IDS` (unique within a
    turn, repeated across turns), each answered in order, from any provenance."""
    turns = [Turn(id="u0", role="user", content=(TextBlock(text="go"),))]
    for k in range(draw(st.integers(1, 5))):
        ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
        calls = tuple(
            ToolCallBlock(id=i, name=draw(st.sampled_from(NAMES)), arguments={}) for i in ids
        )
        prov = draw(st.sampled_from(PROVENANCES))
        turns.append(Turn(id=f"a{k}", role="assistant", content=calls, provenance=prov))
        results = tuple(
            ToolResultBlock(tool_call_id=c.id, content=(TextBlock(text=f"out of {c.name}"),))
            for c in calls
        )
        turns.append(Turn(id=f"r{k}", role="user", content=results))
    return tuple(turns)


def _expected(turns: tuple[Turn, ...]) -> list[str]:
    """The name of the call each result answers, in order, from the stored history."""
    return [c.name for t in turns if t.role == "assistant" for c in t.tool_calls]


def _ollama_names(turns: tuple[Turn, ...], via_loop: bool) -> list[Any]:
    provider = OllamaProvider(OLLAMA.model, base_url="http://127.0.0.1:9")
    req = _request(provider, "ollama", OLLAMA, turns, via_loop)
    params = provider.request_params(req)
    assert rules.ollama_problems(params) == []
    return [m.get("tool_name") for m in params["messages"] if m["role"] == "tool"]


def _google_names(turns: tuple[Turn, ...], via_loop: bool) -> list[Any]:
    provider = GoogleProvider(GOOGLE.model, api_key="test-key")
    req = _request(provider, "google", GOOGLE, turns, via_loop)
    contents = replay_contract.gemini_contents(provider, req)
    assert rules.gemini_problems(contents) == []
    return [
        p["functionResponse"]["name"]
        for c in contents
        for p in c.get("parts") or ()
        if "functionResponse" in p
    ]


def _request(
    provider: Any, target: Any, route: Provenance, turns: tuple[Turn, ...], via_loop: bool
) -> ModelRequest:
    if via_loop:
        view = ViewBuilder(target, route=route).view(turns)
        return ModelRequest(model=route.model, messages=view, is_wire_view=True)
    return ModelRequest(model=route.model, messages=turns)


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(reused_ids(), st.booleans())
def test_every_ollama_tool_message_names_its_call(turns: tuple[Turn, ...], via_loop: bool) -> None:
    assert _ollama_names(turns, via_loop) == _expected(turns)


@_SETTINGS
@given(reused_ids(), st.booleans())
def test_every_gemini_response_names_its_call(turns: tuple[Turn, ...], via_loop: bool) -> None:
    assert _google_names(turns, via_loop) == _expected(turns)


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_every_target_accepts_reused_ids(target: str) -> None:
    """The same histories through every target's variants and the providers' rules."""

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        turns = data.draw(reused_ids(), label="history")
        variant = data.draw(st.sampled_from(VARIANTS[target]), label="variant")
        check_view(target, turns, variant, data.draw(st.booleans(), label="via_loop"), None)

    run()


def test_the_audited_history() -> None:
    """The fuzzer's minimal case: a later Ollama turn reuses `a_b` for `grep`; the result of
    the first call (`f`) went out as `tool_name='grep'`."""
    turns = (
        Turn(id="u", role="user", content=(TextBlock(text="go"),)),
        Turn(id="a1", role="assistant", content=(ToolCallBlock(id="a_b", name="f"),)),
        Turn(id="r1", role="user", content=(ToolResultBlock(tool_call_id="a_b"),)),
        Turn(
            id="a2",
            role="assistant",
            content=(ToolCallBlock(id="a_b", name="grep"),),
            provenance=OLLAMA,
        ),
        Turn(id="r2", role="user", content=(ToolResultBlock(tool_call_id="a_b"),)),
    )
    for via_loop in (False, True):
        assert _ollama_names(turns, via_loop) == ["f", "grep"]
        assert _google_names(turns, via_loop) == ["f", "grep"]
