"""Server-side web search: streams built from the vendors' documented shapes
(tests/fixtures/web-search/README.md) served through the real SDK clients, the blocks stored,
sent back verbatim to Anthropic, as text to every other API, and counted in usage and cost."""

from __future__ import annotations

import json
from pathlib import Path

from kit.replay import (
    FIXTURES,
    Recorded,
    Server,
    load_chunks,
    run,
    split_messages,
    sse,
    sse_response,
)
from tether.messages import (
    Provenance,
    SearchHit,
    ServerToolBlock,
    TextBlock,
    Turn,
    Usage,
    text_turn,
    turn_from_json,
    turn_to_json,
)
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest, WebSearch
from tether.providers.catalog import lookup
from tether.providers.openai_responses import OpenAIResponsesProvider
from tether.providers.pricing import cost_usd
from tether.replay import contract as replay_contract
from tether.wire import build_view
from tether.wire.contract import responses_problems

DIR = FIXTURES / "web-search"
CLAUDE = Provenance(provider="anthropic", api="anthropic", model="claude-sonnet-4-5")
SEARCH = WebSearch(max_uses=3, blocked_domains=("pinterest.com",))


def anthropic_parts(name: str) -> list[Recorded]:
    return [sse_response(sse(m, named=True)) for m in split_messages(load_chunks(DIR / name))]


def responses_part(name: str) -> Recorded:
    return sse_response(sse(load_chunks(DIR / name), named=True))


def request(*turns: Turn, model: str = "claude-sonnet-4-5", search: WebSearch | None = SEARCH):
    return ModelRequest(model=model, messages=turns, web_search=search)


async def searched_turn() -> tuple[Turn, Server]:
    server = Server(anthropic_parts("anthropic-web-search.chunks.jsonl"))
    provider = AnthropicProvider("claude-sonnet-4-5", client=server.anthropic())
    result = await run(provider, request(text_turn("u1", "user", "When was Shannon born?")))
    return result.turn, server


async def test_search_turn_is_one_block_with_the_provider_blocks_verbatim() -> None:
    turn, server = await searched_turn()
    kinds = [type(b).__name__ for b in turn.content]
    assert kinds == ["TextBlock", "ServerToolBlock", "TextBlock"]
    block = turn.server_tools[0]
    assert block.query == "claude shannon birth date"
    assert block.producer == "anthropic" and block.error is None
    assert block.results == (
        SearchHit(
            url="https://en.wikipedia.org/wiki/Claude_Shannon", title="Claude Shannon - Wikipedia"
        ),
        SearchHit(
            url="https://www.britannica.com/biography/Claude-Shannon",
            title="Claude Shannon | Biography, Theory, & Facts | Britannica",
        ),
    )
    # raw: the server_tool_use with its streamed input, the result as the fixture sent it
    events = [json.loads(p) for p in load_chunks(DIR / "anthropic-web-search.chunks.jsonl")]
    sent_result = next(
        e["content_block"]
        for e in events
        if e["type"] == "content_block_start"
        and e["content_block"]["type"] == "web_search_tool_result"
    )
    assert block.raw[0] == {
        "type": "server_tool_use",
        "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        "name": "web_search",
        "input": {"query": "claude shannon birth date"},
    }
    assert block.raw[1] == sent_result
    assert turn.text.startswith("I'll search for when Claude Shannon was born.")
    assert turn.usage is not None and turn.usage.web_search_requests == 1
    assert turn.usage.output_tokens == 510
    # the request offered the tool with the settings' cap and deny list
    tools = server.requests[0]["tools"]
    assert tools[-1]["type"] == "web_search_20250305" and tools[-1]["name"] == "web_search"
    assert tools[-1]["max_uses"] == 3 and tools[-1]["blocked_domains"] == ["pinterest.com"]
    # stored whole: the session codec round-trips it
    assert turn_from_json(turn_to_json(turn)) == turn


async def test_next_request_carries_the_blocks_back_verbatim() -> None:
    turn, _ = await searched_turn()
    turn = Turn(
        id="a1", role="assistant", content=turn.content, provenance=CLAUDE, stop_reason="end_turn"
    )
    history = (
        text_turn("u1", "user", "When was Shannon born?"),
        turn,
        text_turn("u2", "user", "Where?"),
    )
    server = Server(anthropic_parts("anthropic-web-search-error.chunks.jsonl"))
    provider = AnthropicProvider("claude-sonnet-4-5", client=server.anthropic())
    await run(provider, request(*history))
    sent = server.requests[0]["messages"][1]
    assert sent["role"] == "assistant"
    block = turn.server_tools[0]
    assert [b for b in sent["content"] if b["type"] != "text"] == list(block.raw)
    assert replay_contract.anthropic_problems(provider, request(*history)) == []


async def test_pause_turn_is_continued_with_the_reply_so_far() -> None:
    server = Server(anthropic_parts("anthropic-pause-turn.chunks.jsonl"))
    provider = AnthropicProvider("claude-sonnet-4-5", client=server.anthropic())
    result = await run(provider, request(text_turn("u1", "user", "Who won the physics Nobel?")))
    assert len(server.requests) == 2
    first, second = server.requests
    assert second["messages"][:-1] == first["messages"]
    resent = second["messages"][-1]
    assert resent["role"] == "assistant"
    assert [b["type"] for b in resent["content"]] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert resent["content"][1]["id"] == "srvtoolu_01PauseA"
    assert second["tools"] == first["tools"]
    # one turn: both parts, one terminal event, usage summed
    done = [e for e in result.events if e.type == "done"]
    assert [d.raw_stop_reason for d in done] == ["end_turn"]
    turn = result.turn
    assert [b.id for b in turn.server_tools] == ["srvtoolu_01PauseA", "srvtoolu_01PauseB"]
    assert turn.text.endswith("macroscopic quantum tunnelling.")
    assert turn.usage == Usage(
        input_tokens=1800 + 3900, output_tokens=120 + 240, web_search_requests=2
    )


async def test_pause_turn_is_bounded() -> None:
    paused = anthropic_parts("anthropic-pause-turn.chunks.jsonl")[0]
    server = Server([paused] * 5)
    provider = AnthropicProvider("claude-sonnet-4-5", client=server.anthropic())
    result = await run(provider, request(text_turn("u1", "user", "q")))
    assert len(server.requests) == 5  # the first and MAX_PAUSE_CONTINUATIONS (4) more
    assert result.turn.stop_reason == "other"
    assert [e.raw_stop_reason for e in result.events if e.type == "done"] == ["pause_turn"]


async def test_search_error_is_kept() -> None:
    server = Server(anthropic_parts("anthropic-web-search-error.chunks.jsonl"))
    provider = AnthropicProvider("claude-sonnet-4-5", client=server.anthropic())
    result = await run(provider, request(text_turn("u1", "user", "q")))
    block = result.turn.server_tools[0]
    assert block.error == "max_uses_exceeded" and block.results == ()
    assert block.summary == "[web search: tether agent harness → error max_uses_exceeded]"


async def test_switch_to_openai_sends_the_search_as_text() -> None:
    turn, _ = await searched_turn()
    turn = Turn(
        id="a1", role="assistant", content=turn.content, provenance=CLAUDE, stop_reason="end_turn"
    )
    history = (
        text_turn("u1", "user", "When was Shannon born?"),
        turn,
        text_turn("u2", "user", "Where?"),
    )
    text = (
        "[web search: claude shannon birth date → https://en.wikipedia.org/wiki/Claude_Shannon, "
        "https://www.britannica.com/biography/Claude-Shannon]"
    )
    for target in ("openai-chat", "openai-responses", "google", "ollama"):
        view = build_view(history, target)
        assert not any(isinstance(b, ServerToolBlock) for t in view for b in t.content), target
        assert TextBlock(text=text) in view[1].content
    server = Server([responses_part("openai-responses-web-search.chunks.jsonl")])
    gpt = OpenAIResponsesProvider("gpt-5", client=server.openai())
    await run(gpt, request(*history, model="gpt-5"))
    body = json.dumps(server.requests[0], ensure_ascii=False)
    assert "server_tool_use" not in body and 'encrypted_content": "Eq' not in body
    assert text in body
    assert responses_problems(server.requests[0]) == []
    assert "web_search" not in json.dumps(server.requests[0].get("tools", []))


async def test_openai_responses_web_search_call() -> None:
    server = Server([responses_part("openai-responses-web-search.chunks.jsonl")])
    provider = OpenAIResponsesProvider("gpt-5", client=server.openai())
    search = WebSearch(max_uses=3, allowed_domains=("goodnewsnetwork.org",))
    result = await run(
        provider, request(text_turn("u1", "user", "good news?"), model="gpt-5", search=search)
    )
    block = result.turn.server_tools[0]
    assert block.producer == "openai-responses" and block.id == "ws_68c1a"
    assert block.query == "positive news story today"
    assert [h.url for h in block.results] == [
        "https://www.goodnewsnetwork.org/",
        "https://apnews.com/hub/good-news",
    ]
    assert block.raw[0]["type"] == "web_search_call"
    assert result.turn.text.startswith("A heartwarming story today")
    assert result.turn.stop_reason == "end_turn"
    assert result.turn.usage is not None and result.turn.usage.web_search_requests == 1
    sent = server.requests[0]
    assert {"type": "web_search", "filters": {"allowed_domains": ["goodnewsnetwork.org"]}} in sent[
        "tools"
    ]
    assert "web_search_call.action.sources" in sent["include"]


def test_openai_responses_without_a_deny_list_option_does_not_search() -> None:
    provider = OpenAIResponsesProvider("gpt-5", client=Server([]).openai())
    params = provider.request_params(request(text_turn("u", "user", "q"), model="gpt-5"))
    assert "tools" not in params  # SEARCH has blocked domains only: not expressible
    params = provider.request_params(
        request(text_turn("u", "user", "q"), model="gpt-5", search=WebSearch())
    )
    assert params["tools"] == [{"type": "web_search"}]


def test_catalog_and_cost() -> None:
    sonnet = lookup("claude-sonnet-4-5-20250929")
    assert sonnet is not None and sonnet.web_search
    nano = lookup("gpt-4.1-nano")  # a family prefix match says nothing of a variant
    assert nano is not None and not nano.web_search
    local = lookup("llama3.1:8b")
    assert local is not None and not local.web_search
    base = cost_usd(Usage(input_tokens=1000, output_tokens=100), "claude-sonnet-4-5")
    with_searches = cost_usd(
        Usage(input_tokens=1000, output_tokens=100, web_search_requests=3), "claude-sonnet-4-5"
    )
    assert base is not None and with_searches is not None
    assert abs((with_searches - base) - 0.03) < 1e-9  # $10 per 1,000 searches
    assert Usage(web_search_requests=2).summary_line() == "in 0 / 0 out · 2 searches"


def test_fixture_readme_names_every_fixture() -> None:
    readme = (DIR / "README.md").read_text()
    for path in Path(DIR).iterdir():
        if path.name != "README.md":
            assert f"`{path.name}`" in readme
