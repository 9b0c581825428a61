"""Hypothesis strategies: corrupted stored histories for the vendor contract test (issue 18).

Beyond `strategies.transcripts` (orphans, duplicates, foreign thinking, markers), these
histories hold what real sessions were found to hold: system turns anywhere (between two
assistant turns, at the end of a tool loop), reasoning blocks in user turns and images in
assistant turns, provider-issued ids (`functions.list_dir:0`), repeated Responses item ids,
Gemini signatures that do not decode, signatures on thought parts before a call, parallel calls
with only a later one signed, prefills ending in whitespace, and histories with nothing but
system turns.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

from tether.messages import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Provenance,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)

# The routes of the providers the contract test builds (their provenance makes turns native).
ANTHROPIC = Provenance(provider="anthropic", api="anthropic", model="claude-a")
CHAT = Provenance(provider="vllm", api="openai-chat", model="kimi-k2")
RESPONSES = Provenance(provider="openai", api="openai-responses", model="gpt-x")
GOOGLE = Provenance(provider="google", api="google", model="gemini-3-pro")
OLLAMA = Provenance(provider="ollama", api="ollama", model="llama")
PROVENANCES = [
    None,
    ANTHROPIC,
    Provenance(provider="anthropic", api="anthropic", model="claude-b"),
    CHAT,
    RESPONSES,
    GOOGLE,
    OLLAMA,
]

ID_POOL = [
    "a",
    "b",
    "a.b",
    "a_b",
    "",
    "functions.list_dir:0",
    "functions.list_dir_0",
    "toolu_01ABC",
    "call_" + "x" * 38,  # 43 chars: too long for openai-chat only
    "y" * 70,
]
SIGNATURES = ["c2lnbmF0dXJl", "c2ln", "!!not base64!!", "a", "", "SIG", "c2ln-_w"]
ITEM_IDS = ["rs_1", "rs_2"]
CALL_ITEM_IDS = ["fc_1", "fc_2"]

texts = st.sampled_from(["", " ", "\n", "hello", "  padded  ", "ok", "done  ", "trailing\n"])
text_blocks = st.builds(TextBlock, text=texts)
image = ImageBlock(media_type="image/png", data="iVBORw0KGgo=")
document = DocumentBlock(media_type="text/plain", data="aGVsbG8=", title="notes")
meta = st.one_of(
    st.none(),
    st.fixed_dictionaries({"thought_signature": st.sampled_from(SIGNATURES)}),
    st.fixed_dictionaries({"item_id": st.sampled_from(CALL_ITEM_IDS)}),
    st.fixed_dictionaries({"original_id": st.sampled_from(ID_POOL)}),
)
call_blocks = st.builds(
    ToolCallBlock,
    id=st.sampled_from(ID_POOL),
    name=st.sampled_from(["read", "list_dir"]),
    arguments=st.sampled_from([{}, {"path": "."}]),
    provider_meta=meta,
)
result_blocks = st.builds(
    ToolResultBlock,
    tool_call_id=st.sampled_from(ID_POOL),
    content=st.lists(st.one_of(text_blocks, st.just(image)), max_size=2).map(tuple),
    is_error=st.booleans(),
)
thinking_blocks = st.builds(
    ThinkingBlock,
    text=st.sampled_from(["", "thinking", " "]),
    signature=st.sampled_from([None, *SIGNATURES]),
    producer=st.sampled_from([None, "anthropic", "openai", "google", "ollama"]),
    model=st.sampled_from([None, "claude-a", "claude-b", "gpt-x", "gemini-3-pro"]),
    item_id=st.sampled_from([None, None, *ITEM_IDS]),
    encrypted_content=st.sampled_from([None, "ENC"]),
    summary=st.sampled_from([(), ("sum",)]),
)
redacted_blocks = st.builds(
    RedactedThinkingBlock, data=st.just("DATA"), producer=st.sampled_from(["anthropic", None])
)
any_block = st.one_of(
    text_blocks,
    call_blocks,
    result_blocks,
    thinking_blocks,
    redacted_blocks,
    st.just(image),
    st.just(document),
)

user_content = st.lists(st.one_of(text_blocks, result_blocks, result_blocks, any_block), max_size=4)
assistant_content = st.lists(
    st.one_of(text_blocks, call_blocks, call_blocks, thinking_blocks, any_block), max_size=5
)
system_content = st.lists(st.one_of(text_blocks, any_block), max_size=2)


@st.composite
def tool_loop(draw: st.DrawFn, k: int) -> list[Turn]:
    """A well-formed tool step of one provider: [thinking?] calls, then their results, with
    system turns possibly in between or after."""
    prov = draw(st.sampled_from(PROVENANCES))
    n = draw(st.integers(1, 3))
    ids = draw(st.lists(st.sampled_from(ID_POOL), min_size=n, max_size=n))
    blocks: list[ContentBlock] = []
    if draw(st.booleans()):
        blocks.append(draw(thinking_blocks))
    calls = [ToolCallBlock(id=i, name="read", provider_meta=draw(meta)) for i in ids]
    blocks.extend(calls)
    turns = [Turn(id=f"l{k}a", role="assistant", content=tuple(blocks), provenance=prov)]
    if draw(st.booleans()):
        turns.append(Turn(id=f"l{k}s", role="system", content=(TextBlock(text="note"),)))
    results = tuple(ToolResultBlock(tool_call_id=i, content=(TextBlock(text="r"),)) for i in ids)
    turns.append(Turn(id=f"l{k}r", role="user", content=results))
    return turns


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 10) -> tuple[Turn, ...]:
    """A corrupted stored history with unique turn ids."""
    n = draw(st.integers(0, max_turns))
    turns: list[Turn] = []
    for k in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "assistant", "system", "loop"]))
        tid = f"t{k}"
        if kind == "loop":
            turns.extend(draw(tool_loop(k)))
        elif kind == "system":
            turns.append(Turn(id=tid, role="system", content=tuple(draw(system_content))))
        elif kind == "user":
            turns.append(Turn(id=tid, role="user", content=tuple(draw(user_content))))
        else:
            turns.append(
                Turn(
                    id=tid,
                    role="assistant",
                    content=tuple(draw(assistant_content)),
                    provenance=draw(st.sampled_from(PROVENANCES)),
                )
            )
    return tuple(turns)


# -- a fast twin for many examples ---------------------------------------------------------------
# Hypothesis' own generation costs ~10 ms per history; the scale test draws a seed instead and
# builds the history with `random.Random(seed)` from the same pools (no shrinking, but a failing
# seed reproduces exactly).

_TEXTS = ["", " ", "\n", "hello", "  padded  ", "ok", "done  ", "trailing\n"]
_METAS: list[dict[str, Any] | None] = [
    None,
    None,
    *({"thought_signature": s} for s in SIGNATURES),
    *({"item_id": i} for i in CALL_ITEM_IDS),
    {"original_id": "functions.list_dir:0"},
]


def _r_text(rng: random.Random) -> TextBlock:
    return TextBlock(text=rng.choice(_TEXTS))


def _r_call(rng: random.Random, cid: str | None = None) -> ToolCallBlock:
    return ToolCallBlock(
        id=rng.choice(ID_POOL) if cid is None else cid,
        name=rng.choice(["read", "list_dir"]),
        arguments=rng.choice([{}, {"path": "."}]),
        provider_meta=rng.choice(_METAS),
    )


def _r_result(rng: random.Random) -> ToolResultBlock:
    parts = [rng.choice([_r_text(rng), image]) for _ in range(rng.randint(0, 2))]
    return ToolResultBlock(
        tool_call_id=rng.choice(ID_POOL), content=tuple(parts), is_error=rng.random() < 0.3
    )


def _r_thinking(rng: random.Random) -> ThinkingBlock:
    return ThinkingBlock(
        text=rng.choice(["", "thinking", " "]),
        signature=rng.choice([None, *SIGNATURES]),
        producer=rng.choice([None, "anthropic", "openai", "google", "ollama"]),
        model=rng.choice([None, "claude-a", "claude-b", "gpt-x", "gemini-3-pro"]),
        item_id=rng.choice([None, None, *ITEM_IDS]),
        encrypted_content=rng.choice([None, "ENC"]),
        summary=rng.choice([(), ("sum",)]),
    )


def _r_any(rng: random.Random) -> ContentBlock:
    k = rng.randrange(7)
    if k == 0:
        return _r_text(rng)
    if k == 1:
        return _r_call(rng)
    if k == 2:
        return _r_result(rng)
    if k == 3:
        return _r_thinking(rng)
    if k == 4:
        return RedactedThinkingBlock(data="DATA", producer=rng.choice(["anthropic", None]))
    return image if k == 5 else document


def _r_blocks(rng: random.Random, n: int, *makers: Any) -> tuple[ContentBlock, ...]:
    return tuple(rng.choice(makers)(rng) for _ in range(rng.randint(0, n)))


def random_history(rng: random.Random, max_turns: int = 10) -> tuple[Turn, ...]:
    """A corrupted stored history drawn like `histories` (same pools, same kinds of turns)."""
    turns: list[Turn] = []
    for k in range(rng.randint(0, max_turns)):
        kind = rng.choice(["user", "assistant", "assistant", "system", "loop"])
        tid = f"t{k}"
        if kind == "loop":
            prov = rng.choice(PROVENANCES)
            ids = [rng.choice(ID_POOL) for _ in range(rng.randint(1, 3))]
            blocks: list[ContentBlock] = [_r_thinking(rng)] if rng.random() < 0.5 else []
            blocks.extend(_r_call(rng, cid) for cid in ids)
            turns.append(
                Turn(id=f"l{k}a", role="assistant", content=tuple(blocks), provenance=prov)
            )
            if rng.random() < 0.5:
                turns.append(Turn(id=f"l{k}s", role="system", content=(TextBlock(text="note"),)))
            results = tuple(
                ToolResultBlock(tool_call_id=i, content=(TextBlock(text="r"),)) for i in ids
            )
            turns.append(Turn(id=f"l{k}r", role="user", content=results))
        elif kind == "system":
            turns.append(Turn(id=tid, role="system", content=_r_blocks(rng, 2, _r_text, _r_any)))
        elif kind == "user":
            content = _r_blocks(rng, 4, _r_text, _r_result, _r_result, _r_any)
            turns.append(Turn(id=tid, role="user", content=content))
        else:
            content = _r_blocks(rng, 5, _r_text, _r_call, _r_call, _r_thinking, _r_any)
            prov = rng.choice(PROVENANCES)
            turns.append(Turn(id=tid, role="assistant", content=content, provenance=prov))
    return tuple(turns)
