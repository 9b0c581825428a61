"""Issue 18, items 1-7: requests a provider would reject, one test per kind of fault.

Each test builds the request with the adapter's own request-building method (no network) and
checks it against the provider's documented rule (`tether.wire.contract`) or the exact
field the rule is about.
"""

from __future__ import annotations

import base64
from typing import Any, cast

from tether.messages import (
    TARGETS,
    ImageBlock,
    Provenance,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest
from tether.providers.google import GoogleProvider
from tether.providers.google_request import SKIP_SIGNATURE, decode_signature
from tether.providers.ollama import OllamaProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_responses import OpenAIResponsesProvider
from tether.replay import contract as replay_contract
from tether.wire import Repair, build_view, thinking_must_be_disabled
from tether.wire import contract as rules

CLAUDE = Provenance(provider="anthropic", api="anthropic", model="claude-a")
GEMINI = Provenance(provider="google", api="google", model="gemini-3-pro")
GPT = Provenance(provider="openai", api="openai-responses", model="gpt-x")
KIMI = Provenance(provider="vllm", api="openai-chat", model="kimi-k2")

SIG = base64.b64encode(b"signature-bytes").decode()
SIG2 = base64.b64encode(b"other-signature").decode()


def user(tid: str, text: str = "go") -> Turn:
    return Turn(id=tid, role="user", content=(TextBlock(text=text),))


def system(tid: str, text: str = "note") -> Turn:
    return Turn(id=tid, role="system", content=(TextBlock(text=text),))


def calls(tid: str, *blocks: Any, prov: Provenance | None = None) -> Turn:
    return Turn(id=tid, role="assistant", content=tuple(blocks), provenance=prov)


def call(cid: str, **meta: Any) -> ToolCallBlock:
    return ToolCallBlock(id=cid, name="read", arguments={"p": 1}, provider_meta=meta or None)


def results(tid: str, *cids: str) -> Turn:
    return Turn(
        id=tid,
        role="user",
        content=tuple(
            ToolResultBlock(tool_call_id=c, content=(TextBlock(text="ok"),)) for c in cids
        ),
    )


def request(*turns: Turn, model: str = "m") -> ModelRequest:
    return ModelRequest(model=model, messages=turns)


def anthropic_problems(provider: AnthropicProvider, *turns: Turn) -> list[str]:
    return replay_contract.anthropic_problems(provider, request(*turns, model=CLAUDE.model))


def gemini_contents(*turns: Turn) -> list[dict[str, Any]]:
    provider = GoogleProvider(GEMINI.model, api_key="k")
    return replay_contract.gemini_contents(provider, request(*turns, model=GEMINI.model))


# -- 1. Anthropic, thinking on: the whole trailing tool loop decides ------------------------------


def test_1_thinking_is_disabled_for_a_tool_loop_hidden_behind_system_turns() -> None:
    thinking = AnthropicProvider(CLAUDE.model, api_key="k", thinking_budget=2048)
    signed = ThinkingBlock(text="t", signature="s", producer="anthropic", model="claude-a")
    # A loop whose assistant turn lost its thinking (model switch), then a system turn.
    loop = (user("u"), calls("a", call("c1"), prov=CLAUDE), results("r", "c1"), system("s"))
    assert thinking_must_be_disabled(loop)
    assert thinking.request_params(request(*loop)).thinking is None
    assert anthropic_problems(thinking, *loop) == []
    # Two steps: the first lacks thinking, the last has it; a system turn between them.
    two = (
        user("u"),
        calls("a1", call("c1"), prov=CLAUDE),
        results("r1", "c1"),
        system("s"),
        calls("a2", signed, call("c2"), prov=CLAUDE),
        results("r2", "c2"),
    )
    assert thinking_must_be_disabled(two)
    assert anthropic_problems(thinking, *two) == []
    # A complete loop keeps thinking on.
    ok = (user("u"), calls("a", signed, call("c1"), prov=CLAUDE), results("r", "c1"), system("s"))
    assert not thinking_must_be_disabled(ok)
    assert thinking.request_params(request(*ok)).thinking is not None


# -- 2. Gemini: roles alternate after system turns are lifted -------------------------------------


def test_2_gemini_roles_alternate_after_system_turns_move() -> None:
    turns = (
        user("u"),
        calls("a1", TextBlock(text="let me look"), prov=GEMINI),
        system("s"),
        calls("a2", call("c1", thought_signature=SIG), prov=GEMINI),
        results("r", "c1"),
    )
    contents = gemini_contents(*turns)
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert rules.gemini_problems(contents) == []
    # Anthropic combines consecutive same-role messages; tether sends them combined.
    p = AnthropicProvider(CLAUDE.model, api_key="k").request_params(request(*turns))
    assert [m["role"] for m in p.messages] == ["user", "assistant", "user"]


# -- 3. Gemini signatures --------------------------------------------------------------------------


def test_3a_an_undecodable_signature_is_dropped_and_reported() -> None:
    turns = (
        user("u"),
        calls("a", call("c1", thought_signature="!!x"), prov=GEMINI),
        results("r", "c1"),
    )
    repairs: list[Repair] = []
    build_view(turns, "google", route=GEMINI, on_repair=repairs.append)
    assert [r.kind for r in repairs] == ["invalid_signature"]
    contents = gemini_contents(*turns)  # raised binascii.Error before
    part = contents[1]["parts"][0]
    assert decode_signature(part["thoughtSignature"]) == decode_signature(SKIP_SIGNATURE)
    assert rules.gemini_problems(contents) == []
    # A signed thinking block whose signature does not decode: dropped, not sent.
    bad = ThinkingBlock(text="t", signature="!!", producer="google")
    contents = gemini_contents(
        user("u"), calls("a", bad, TextBlock(text="hi"), prov=GEMINI), user("v")
    )
    assert contents[1]["parts"] == [{"text": "hi"}]


def test_3b_parallel_calls_each_unsigned_call_gets_the_placeholder() -> None:
    turns = (
        user("u"),
        calls("a", call("c1"), call("c2", thought_signature=SIG), prov=GEMINI),
        results("r", "c1", "c2"),
    )
    contents = gemini_contents(*turns)
    first, second = contents[1]["parts"]
    assert decode_signature(first["thoughtSignature"]) == decode_signature(SKIP_SIGNATURE)
    assert decode_signature(second["thoughtSignature"]) == base64.b64decode(SIG)
    assert rules.gemini_problems(contents) == []


def test_3c_a_signature_before_a_call_goes_on_the_call_part() -> None:
    sig_only = ThinkingBlock(text="", signature=SIG, producer="google")
    turns = (user("u"), calls("a", sig_only, call("c1"), prov=GEMINI), results("r", "c1"))
    parts = gemini_contents(*turns)[1]["parts"]
    assert len(parts) == 1  # no trailing empty text part
    assert decode_signature(parts[0]["thoughtSignature"]) == base64.b64decode(SIG)
    # A signed thought part right before an unsigned call: the signature moves to the call.
    thought = ThinkingBlock(text="plan", signature=SIG2, producer="google")
    turns = (user("u"), calls("a", thought, call("c1"), prov=GEMINI), results("r", "c1"))
    parts = gemini_contents(*turns)[1]["parts"]
    assert parts[0].get("thought") is True and "thoughtSignature" not in parts[0]
    assert decode_signature(parts[1]["thoughtSignature"]) == base64.b64decode(SIG2)
    # Sequential steps keep their own signatures.
    turns = (
        user("u"),
        calls("a1", call("c1", thought_signature=SIG), prov=GEMINI),
        results("r1", "c1"),
        calls("a2", call("c2", thought_signature=SIG2), prov=GEMINI),
        results("r2", "c2"),
    )
    contents = gemini_contents(*turns)
    assert decode_signature(contents[1]["parts"][0]["thoughtSignature"]) == base64.b64decode(SIG)
    assert decode_signature(contents[3]["parts"][0]["thoughtSignature"]) == base64.b64decode(SIG2)


# -- 4. Prefill ending in whitespace ----------------------------------------------------------------


def test_4_prefill_is_stripped_as_sent() -> None:
    prefill = AnthropicProvider(CLAUDE.model, api_key="k", supports_prefill=True)
    img = ImageBlock(media_type="image/png", data="iVBORw0KGgo=")
    for tail in ((), (system("s"),)):
        turns = (user("u"), calls("a", TextBlock(text="Sure, "), img, prov=CLAUDE), *tail)
        p = prefill.request_params(request(*turns))
        last = p.messages[-1]
        assert last["role"] == "assistant"
        final = dict(cast("list[dict[str, Any]]", list(last["content"]))[-1])
        assert (final["type"], final["text"]) == ("text", "Sure,")
        assert anthropic_problems(prefill, *turns) == []


# -- 5. Responses: item ids are unique ---------------------------------------------------------------


def test_5_responses_item_ids_are_never_repeated() -> None:
    rs = ThinkingBlock(text="", item_id="rs_1", encrypted_content="ENC", producer="openai")
    step = calls("a1", rs, call("c1", item_id="fc_1"), prov=GPT)
    again = calls("a2", rs, call("c2", item_id="fc_1"), prov=GPT)
    turns = (user("u"), step, results("r1", "c1"), again, results("r2", "c2"))
    provider = OpenAIResponsesProvider(GPT.model, api_key="k", name=GPT.provider, reasoning=True)
    params = provider.request_params(request(*turns, model=GPT.model))
    ids = [it["id"] for it in params["input"] if "id" in it]
    assert ids == ["rs_1", "fc_1"]
    assert rules.responses_problems(params) == []


# -- 6. Empty requests ---------------------------------------------------------------------------


def _all_payload_problems(*turns: Turn) -> dict[str, list[str]]:
    chat = OpenAIChatProvider(KIMI.model, api_key="k", name=KIMI.provider)
    resp = OpenAIResponsesProvider(GPT.model, api_key="k", name=GPT.provider)
    return {
        "anthropic": anthropic_problems(AnthropicProvider(CLAUDE.model, api_key="k"), *turns),
        "openai-chat": rules.chat_problems(chat.request_messages(request(*turns))),
        "openai-responses": rules.responses_problems(resp.request_params(request(*turns))),
        "google": rules.gemini_problems(gemini_contents(*turns)),
        "ollama": rules.ollama_problems(
            OllamaProvider("llama", base_url="http://127.0.0.1:9").request_params(request(*turns))
        ),
    }


def test_6_no_history_yields_an_empty_or_assistant_bounded_request() -> None:
    thinking = ThinkingBlock(text="hmm", signature="s", producer="anthropic")
    cases = [
        (system("s", ""),),
        (),
        (Turn(id="u", role="user", content=(thinking,)),),
        (Turn(id="u", role="user", content=(thinking,)), calls("a", TextBlock(text="hi"))),
        (
            user("u"),
            calls("a", TextBlock(text="hi")),
            Turn(id="v", role="user", content=(thinking,)),
        ),
    ]
    for turns in cases:
        assert _all_payload_problems(*turns) == {key: [] for key in TARGETS}, turns


# -- 7. Provider-issued ids ----------------------------------------------------------------------


def test_7_ids_are_sanitized_only_where_the_target_requires_it() -> None:
    kimi_ids = ("functions.list_dir:0", "functions.read:1")
    turns = (
        user("u"),
        calls("a", *(call(c) for c in kimi_ids), prov=KIMI),
        results("r", *kimi_ids),
    )
    chat = OpenAIChatProvider(KIMI.model, api_key="k", name=KIMI.provider)
    messages = chat.request_messages(request(*turns))
    sent = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]  # type: ignore[union-attr]
    assert sent == list(kimi_ids)  # echoed exactly: Chat Completions accepts any string id
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == list(kimi_ids)  # type: ignore[typeddict-item]
    # Anthropic's pattern requires sanitizing; collisions with an existing id are resolved.
    clash = (
        user("u"),
        calls("a", call("functions.list_dir:0"), call("functions_list_dir_0"), prov=KIMI),
        results("r", "functions.list_dir:0", "functions_list_dir_0"),
    )
    view = build_view(clash, "anthropic")
    assert [c.id for c in view[1].tool_calls] == ["functions_list_dir_0", "functions_list_dir_0_2"]
    assert anthropic_problems(AnthropicProvider(CLAUDE.model, api_key="k"), *clash) == []
    # A 45-character id: too long for openai-chat from another route, kept for its issuer.
    long_id = "call_" + "x" * 40
    foreign = (user("u"), calls("a", call(long_id), prov=GPT), results("r", long_id))
    native = (user("u"), calls("a", call(long_id), prov=KIMI), results("r", long_id))
    route = KIMI
    assert len(build_view(foreign, "openai-chat", route=route)[1].tool_calls[0].id) <= 40
    assert build_view(native, "openai-chat", route=route)[1].tool_calls[0].id == long_id
