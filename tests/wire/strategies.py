"""Hypothesis strategies: messy transcripts (orphans, duplicates, foreign thinking, markers)."""

from __future__ import annotations

from hypothesis import strategies as st

from tether.messages import (
    TARGETS,
    CompactSummaryBlock,
    ContentBlock,
    ImageBlock,
    Provenance,
    RedactedThinkingBlock,
    Role,
    SearchHit,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)

ID_POOL = [
    "a",
    "b",
    "c",
    "call_1",
    "a.b",
    "a_b",
    "",
    "x" * 70,
    "toolu_01ABC",
    "b_2",
    "a_2",
    "functions.read:0",
]
PROVENANCES = [
    None,
    Provenance(provider="anthropic", api="anthropic", model="claude-a"),
    Provenance(provider="anthropic", api="anthropic", model="claude-b"),
    Provenance(provider="openai", api="openai-responses", model="gpt-x"),
    Provenance(provider="openai", api="openai-chat", model="gpt-y"),
    Provenance(provider="google", api="google", model="gemini-z"),
    Provenance(provider="ollama", api="ollama", model="llama"),
]
ROUTES = PROVENANCES

texts = st.sampled_from(["", " ", "\n", "hello", "  padded  ", "ok"])
call_ids = st.sampled_from(ID_POOL)

text_blocks = st.builds(TextBlock, text=texts)
call_blocks = st.builds(
    ToolCallBlock,
    id=call_ids,
    name=st.sampled_from(["read", "bash"]),
    arguments=st.just({"x": 1}),
    provider_meta=st.sampled_from(
        [
            None,
            {"item_id": "fc_1"},
            {"thoughtSignature": "g"},
            {"original_id": "functions.read:0"},  # re-minted at persist time
            {"original_id": "y" * 50},
        ]
    ),
)
result_blocks = st.builds(
    ToolResultBlock,
    tool_call_id=call_ids,
    content=st.lists(
        st.one_of(text_blocks, st.just(ImageBlock(media_type="image/png", data="AA=="))),
        max_size=2,
    ).map(tuple),
    is_error=st.booleans(),
)
thinking_blocks = st.builds(
    ThinkingBlock,
    text=texts,
    signature=st.sampled_from([None, "", "SIG"]),
    producer=st.sampled_from([None, "anthropic", "openai", "google", "ollama"]),
    model=st.sampled_from([None, "claude-a", "claude-b", "gpt-x", "gemini-z"]),
    item_id=st.sampled_from([None, None, "rs_1"]),
    encrypted_content=st.sampled_from([None, "ENC"]),
    summary=st.sampled_from([(), ("sum",)]),
)
redacted_blocks = st.builds(
    RedactedThinkingBlock,
    data=st.just("DATA"),
    producer=st.sampled_from(["anthropic", None, "openai"]),
)

_USE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": 1}}
_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://a.example",
            "title": "A",
            "encrypted_content": "E",
        }
    ],
}
_ERROR = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
}
_CALL = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search"},
}
server_blocks = st.builds(
    ServerToolBlock,
    name=st.just("web_search"),
    producer=st.sampled_from(["anthropic", "openai-responses", ""]),
    id=st.sampled_from(["srvtoolu_1", "ws_1", ""]),
    query=texts,
    results=st.sampled_from([(), (SearchHit(url="https://a.example", title="A"),)]),
    error=st.sampled_from([None, None, "max_uses_exceeded"]),
    raw=st.sampled_from([(), (_USE,), (_USE, _RESULT), (_USE, _ERROR), (_CALL,), (_RESULT,)]),
)
"""Web searches the provider ran: complete, cut (a call without its result), an error result,
another vendor's item, untagged, or a result without its call."""

user_content = st.lists(
    st.one_of(text_blocks, result_blocks, result_blocks, server_blocks), max_size=4
)
assistant_content = st.lists(
    st.one_of(
        text_blocks,
        call_blocks,
        call_blocks,
        thinking_blocks,
        redacted_blocks,
        result_blocks,
        server_blocks,
    ),
    max_size=5,
)


@st.composite
def transcripts(draw: st.DrawFn, max_turns: int = 14, markers: bool = True) -> tuple[Turn, ...]:
    """A random stored history with unique turn ids `t<k>`."""
    n = draw(st.integers(0, max_turns))
    turns: list[Turn] = []
    for k in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "assistant", "user", "system", "marker"]))
        tid = f"t{k}"
        if kind == "marker" and markers:
            pool = [f"t{j}" for j in range(n)]  # may name earlier, later or marker turns
            replaced = (
                draw(st.lists(st.sampled_from(pool), max_size=5, unique=True)) if pool else []
            )
            block = CompactSummaryBlock(summary=draw(texts), replaces_turn_ids=tuple(replaced))
            marker_roles: list[Role] = ["user", "system", "assistant"]
            role = draw(st.sampled_from(marker_roles))
            content: list[ContentBlock] = [block]
            if draw(st.booleans()):
                content.append(TextBlock(text="extra"))
            turns.append(Turn(id=tid, role=role, content=tuple(content)))
        elif kind == "system":
            turns.append(
                Turn(id=tid, role="system", content=tuple(draw(st.lists(text_blocks, max_size=1))))
            )
        elif kind == "user" or kind == "marker":
            turns.append(Turn(id=tid, role="user", content=tuple(draw(user_content))))
        else:
            turns.append(
                Turn(
                    id=tid,
                    role="assistant",
                    content=tuple(draw(assistant_content)),
                    provenance=draw(st.sampled_from(PROVENANCES)),
                    stop_reason=draw(
                        st.sampled_from([None, "end_turn", "tool_use", "interrupted"])
                    ),
                )
            )
    return tuple(turns)


targets = st.sampled_from(TARGETS)
routes = st.sampled_from(ROUTES)
