"""The server-tool wire action: a web search goes back verbatim only to the API that ran it,
whole; as text everywhere else (`tether.wire.server_tools`)."""

from __future__ import annotations

from hypothesis import given, settings

from tether.messages import (
    TARGETS,
    Provenance,
    SearchHit,
    ServerToolBlock,
    Target,
    TextBlock,
    Turn,
    text_turn,
)
from tether.wire import build_view, server_tool_action

from .strategies import targets, transcripts

USE: dict[str, object] = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
RESULT: dict[str, object] = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
CLAUDE = Provenance(provider="anthropic", api="anthropic", model="claude-a")


def block(producer: str = "anthropic", raw: tuple[dict[str, object], ...] = (USE, RESULT)):
    return ServerToolBlock(
        name="web_search",
        producer=producer,
        id="srvtoolu_1",
        query="q",
        results=(SearchHit(url="https://a.example", title="A"),),
        raw=raw,
    )


def history(b: ServerToolBlock, prov: Provenance | None = CLAUDE) -> tuple[Turn, ...]:
    answer = Turn(id="a", role="assistant", content=(b, TextBlock(text="ok")), provenance=prov)
    return (text_turn("u", "user", "q"), answer, text_turn("u2", "user", "more"))


def test_kept_only_for_anthropic_whole_and_its_own() -> None:
    assert server_tool_action(block(), "anthropic", provenance=CLAUDE) == "keep"
    assert server_tool_action(block(raw=(USE,)), "anthropic", provenance=CLAUDE) == "text"
    assert server_tool_action(block(raw=()), "anthropic", provenance=CLAUDE) == "text"
    assert server_tool_action(block("openai-responses"), "anthropic", provenance=None) == "text"
    untagged = block("")
    assert server_tool_action(untagged, "anthropic", provenance=CLAUDE) == "keep"
    assert server_tool_action(untagged, "anthropic", provenance=None) == "text"
    for target in TARGETS:
        if target != "anthropic":
            assert server_tool_action(block(), target, provenance=CLAUDE) == "text"


def test_the_view_holds_the_block_or_its_text() -> None:
    b = block()
    assert build_view(history(b), "anthropic")[1].content[0] is b  # the stored object
    text = TextBlock(text="[web search: q → https://a.example]")
    for target in ("openai-chat", "openai-responses", "google", "ollama"):
        assert build_view(history(b), target)[1].content[0] == text
    cut = block(raw=(USE,))
    assert build_view(history(cut), "anthropic")[1].content[0] == text


@settings(max_examples=150, deadline=None)
@given(transcripts(), targets)
def test_no_server_block_reaches_another_api_and_the_pass_is_idempotent(
    turns: tuple[Turn, ...], target: Target
) -> None:
    view = build_view(turns, target)
    for t in view:
        for b in t.content:
            if isinstance(b, ServerToolBlock):
                assert target == "anthropic" and t.role == "assistant"
                assert server_tool_action(b, target, provenance=t.provenance) == "keep"
    assert build_view(view, target) == view
