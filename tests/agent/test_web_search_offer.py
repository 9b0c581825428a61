"""The provider's web search through the agent: when a request offers it (settings, model,
safe mode, permission rules, domains), and what the run emits and stores for a search."""

from __future__ import annotations

from pathlib import Path

from kit.agents import make_agent
from kit.replay import FIXTURES, Server, load_chunks, split_messages, sse, sse_response
from tether import AgentConfig
from tether.agent.events import AgentEvent, ServerToolEvent, event_to_dict
from tether.agent.turn.web_search import web_search_for
from tether.messages import SearchHit, ServerToolBlock
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import WebSearch
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_responses import OpenAIResponsesProvider

FIXTURE = FIXTURES / "web-search" / "anthropic-web-search.chunks.jsonl"


def claude(server: Server | None = None) -> AnthropicProvider:
    return AnthropicProvider("claude-sonnet-4-5", client=(server or Server([])).anthropic())


def config(**web: object) -> AgentConfig:
    return AgentConfig.model_validate({"tools": {"web": web}})


def test_offered_by_default_where_the_model_has_it() -> None:
    assert web_search_for(config(), claude(), safe_mode=False) == WebSearch(max_uses=5)
    gpt = OpenAIResponsesProvider("gpt-5", client=Server([]).openai())
    assert web_search_for(config(), gpt, safe_mode=False) == WebSearch(max_uses=5)


def test_not_offered_without_the_tool_or_permission() -> None:
    chat = OpenAIChatProvider("gpt-4o", client=Server([]).openai())
    assert web_search_for(config(), chat, safe_mode=False) is None  # Chat Completions: none
    old = AnthropicProvider("claude-3-haiku", client=Server([]).anthropic())
    assert web_search_for(config(), old, safe_mode=False) is None  # the model has none
    assert web_search_for(config(search=False), claude(), safe_mode=False) is None
    assert web_search_for(config(), claude(), safe_mode=True) is None  # safe and plan mode
    for action in ("deny", "ask"):
        cfg = AgentConfig.model_validate({"permissions": {action: ["web_search"]}})
        assert web_search_for(cfg, claude(), safe_mode=False) is None, action
    allowed = AgentConfig.model_validate({"permissions": {"allow": ["web_search"]}})
    assert web_search_for(allowed, claude(), safe_mode=False) is not None


def test_domains_shared_with_web_fetch() -> None:
    got = web_search_for(config(denied_domains=["Spam.example."]), claude(), safe_mode=False)
    assert got == WebSearch(max_uses=5, blocked_domains=("spam.example",))
    got = web_search_for(
        config(allowed_domains=["docs.python.org", "x.example"], denied_domains=["x.example"]),
        claude(),
        safe_mode=False,
    )
    assert got == WebSearch(max_uses=5, allowed_domains=("docs.python.org",))
    # a denied host inside an allowed one cannot be said with one list: not offered
    inside = config(allowed_domains=["example.com"], denied_domains=["private.example.com"])
    assert web_search_for(inside, claude(), safe_mode=False) is None
    # every allowed host denied: nothing may be searched
    none = config(allowed_domains=["a.example"], denied_domains=["a.example"])
    assert web_search_for(none, claude(), safe_mode=False) is None
    uncapped = config(search_max_uses=None)
    assert web_search_for(uncapped, claude(), safe_mode=False) == WebSearch()


async def test_a_search_turn_is_emitted_and_stored(tmp_path: Path) -> None:
    chunks = split_messages(load_chunks(FIXTURE))
    server = Server([sse_response(sse(m, named=True)) for m in chunks])
    events: list[AgentEvent] = []
    agent = make_agent(claude(server), tmp_path, sandbox="any", approval="auto", events=events)
    result = await agent.run("When was Shannon born?")
    assert server.requests[0]["tools"][-1]["type"] == "web_search_20250305"
    searches = [e for e in events if isinstance(e, ServerToolEvent)]
    assert len(searches) == 1
    assert event_to_dict(searches[0])["query"] == "claude shannon birth date"
    assert searches[0].results[0] == SearchHit(
        url="https://en.wikipedia.org/wiki/Claude_Shannon", title="Claude Shannon - Wikipedia"
    )
    stored = [b for t in agent.history for b in t.content if isinstance(b, ServerToolBlock)]
    assert len(stored) == 1 and len(stored[0].raw) == 2
    assert result.usage.web_search_requests == 1
