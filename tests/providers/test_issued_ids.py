"""Tool-call ids from real bug reports: the endpoint that issued an id gets it back verbatim
(Kimi K2's `functions.<name>:<k>`, repeated across turns, behind an OpenAI-compatible route),
the official OpenAI endpoint never gets an id over 40 chars (also its own route's, after the
route's base URL changed), and Gemini parallel calls carry a placeholder on the first call of a
step only.

Requests are built with the adapters' own request builders (no network) and checked against
`tether.wire.contract`.
"""

from __future__ import annotations

import base64
from typing import Any

from tether.messages import Provenance, TextBlock, ToolCallBlock, ToolResultBlock, Turn
from tether.providers.base import ModelRequest
from tether.providers.google import GoogleProvider
from tether.providers.google_request import SKIP_SIGNATURE, decode_signature
from tether.providers.openai_chat import OpenAIChatProvider
from tether.wire import build_view, remint_tool_call_ids
from tether.wire import contract as rules

KIMI = Provenance(provider="moonshot", api="openai-chat", model="kimi-k2")
OTHER = Provenance(provider="anthropic", api="anthropic", model="claude-a")
GEMINI = Provenance(provider="google", api="google", model="gemini-3-pro")
COMPAT = "http://127.0.0.1:9/v1"


def user(tid: str) -> Turn:
    return Turn(id=tid, role="user", content=(TextBlock(text="go"),))


def reply(tid: str, *cids: str, prov: Provenance = KIMI, used: set[str] | None = None) -> Turn:
    """An assistant turn as the loop persists it: colliding ids re-minted."""
    calls = tuple(ToolCallBlock(id=c, name="read", arguments={"k": i}) for i, c in enumerate(cids))
    turn = Turn(id=tid, role="assistant", content=calls, provenance=prov)
    if used is None:
        return turn
    turn = remint_tool_call_ids(turn, used)
    used.update(c.id for c in turn.tool_calls)
    return turn


def results(tid: str, turn: Turn) -> Turn:
    return Turn(
        id=tid,
        role="user",
        content=tuple(
            ToolResultBlock(tool_call_id=c.id, content=(TextBlock(text="ok"),))
            for c in turn.tool_calls
        ),
    )


def kimi_session() -> tuple[Turn, ...]:
    """Kimi repeats `functions.read:0` in every turn; the store keeps ids unique."""
    used: set[str] = set()
    a1 = reply("a1", "functions.read:0", used=used)
    a2 = reply("a2", "functions.read:0", "functions.read:1", used=used)
    a3 = reply("a3", "functions.read:0", used=used)
    return (user("u1"), a1, results("r1", a1), a2, results("r2", a2), a3, results("r3", a3))


def sent_ids(messages: list[Any]) -> tuple[list[str], list[str]]:
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return calls, answers


def chat(base_url: str | None) -> OpenAIChatProvider:
    return OpenAIChatProvider(KIMI.model, api_key="k", base_url=base_url, name=KIMI.provider)


def test_kimi_gets_its_repeated_ids_back_verbatim() -> None:
    turns = kimi_session()
    stored = [c.id for t in turns for c in t.tool_calls]
    assert stored == [  # unique in the session file
        "functions.read:0",
        "functions.read:0_r1",
        "functions.read:1",
        "functions.read:0_r2",
    ]
    provider = chat(COMPAT)
    messages = provider.request_messages(ModelRequest(model=KIMI.model, messages=turns))
    calls, answers = sent_ids(messages)
    expected = ["functions.read:0", "functions.read:0", "functions.read:1", "functions.read:0"]
    assert calls == expected and answers == expected
    own = frozenset(expected)
    assert rules.chat_problems(messages, own_ids=own) == []


def test_the_loop_view_echoes_the_ids_too() -> None:
    view = build_view(kimi_session(), "openai-chat", route=KIMI)
    assert [c.id for t in view for c in t.tool_calls] == [
        "functions.read:0",
        "functions.read:0",
        "functions.read:1",
        "functions.read:0",
    ]


def test_another_routes_repeated_ids_are_made_unique() -> None:
    # the same turns issued by another route: a stranger's ids, unique on the wire
    used: set[str] = set()
    a1 = reply("a1", "functions.read:0", prov=OTHER, used=used)
    a2 = reply("a2", "functions.read:0", prov=OTHER, used=used)
    view = build_view((user("u"), a1, results("r1", a1), a2, results("r2", a2)), "openai-chat", route=KIMI)
    ids = [c.id for t in view for c in t.tool_calls]
    assert len(set(ids)) == 2


def test_siblings_with_one_id_are_not_echoed_twice() -> None:
    used: set[str] = set()
    a1 = reply("a1", "functions.read:0", "functions.read:0", used=used)
    view = build_view((user("u"), a1, results("r1", a1)), "openai-chat", route=KIMI)
    ids = [c.id for c in view[1].tool_calls]
    assert len(set(ids)) == 2 and ids[0] == "functions.read:0"
    assert [r.tool_call_id for r in view[2].tool_results] == ids


def test_the_official_openai_endpoint_never_gets_an_id_over_40_chars() -> None:
    long_id = "call_" + "x" * 60
    a1 = reply("a1", long_id)
    turns = (user("u"), a1, results("r1", a1))
    # the same provider name and model: the route stored the id under a compatible base URL
    compat = chat(COMPAT).request_messages(ModelRequest(model=KIMI.model, messages=turns))
    assert sent_ids(compat)[0] == [long_id]
    official = chat(None).request_messages(ModelRequest(model=KIMI.model, messages=turns))
    calls, answers = sent_ids(official)
    assert len(calls[0]) <= 40 and answers == calls
    assert rules.chat_problems(official) == []
    explicit = chat("https://api.openai.com/v1")
    assert explicit.info.vendor_endpoint and not chat(COMPAT).info.vendor_endpoint
    again = explicit.request_messages(ModelRequest(model=KIMI.model, messages=turns))
    assert sent_ids(again)[0] == calls


def test_gemini_parallel_siblings_get_no_placeholder() -> None:
    sig = base64.b64encode(b"signature-bytes").decode()
    calls = (
        ToolCallBlock(id="c1", name="read", arguments={}, provider_meta={"thought_signature": sig}),
        ToolCallBlock(id="c2", name="read", arguments={}),
        ToolCallBlock(id="c3", name="read", arguments={}),
    )
    signed = Turn(id="a", role="assistant", content=calls, provenance=GEMINI)
    unsigned = Turn(
        id="b",
        role="assistant",
        content=tuple(ToolCallBlock(id=f"d{k}", name="read", arguments={}) for k in range(2)),
        provenance=OTHER,
    )
    turns = (user("u"), signed, results("r", signed), unsigned, results("s", unsigned))
    provider = GoogleProvider(GEMINI.model, api_key="k")
    contents, _ = provider.request_config(ModelRequest(model=GEMINI.model, messages=turns))
    dumped = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents]
    first, *siblings = dumped[1]["parts"]
    assert decode_signature(first["thoughtSignature"]) == base64.b64decode(sig)
    assert all("thoughtSignature" not in p for p in siblings)
    other_first, other_sibling = dumped[3]["parts"]  # another model's step: the first only
    assert decode_signature(other_first["thoughtSignature"]) == decode_signature(SKIP_SIGNATURE)
    assert "thoughtSignature" not in other_sibling
    assert rules.gemini_problems(dumped) == []
