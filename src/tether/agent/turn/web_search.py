"""Which server-side web search one request offers (`ModelRequest.web_search`).

Owns: `web_search_for`, the one decision per request and provider: the `tools.web.search`
setting, the model's capability (`tether.providers.catalog.ModelInfo.web_search` on a target
that has the tool), safe and plan mode, the permission rules, and the domain lists shared with
`web_fetch` (`tools.web.allowed_domains` / `denied_domains`).
Does not own: how an adapter spells the tool (`tether.providers.anthropic_request`,
`tether.providers.openai_responses_request`), the search itself (the provider's servers).

Rules:
    * off when `tools.web.search` is off, in safe or plan mode (a query carries text out, as a
      `web_fetch` URL does, and `web_fetch` is not a safe tool either), or when a permission
      rule denies or asks for `web_search` (the search runs on the provider's servers: tether
      cannot ask before it runs, so `ask` removes it too);
    * offered only on `anthropic` and `openai-responses` to a model whose catalog entry has it
      (Chat Completions, Gemini, Ollama and the embedded model: never);
    * the allow list goes as is, the deny list as `blocked_domains`; a denied host inside an
      allowed one (allow `example.com`, deny `private.example.com`) cannot be said to a
      provider that takes one list only, so the tool is not offered then.
"""

from __future__ import annotations

from tether.messages import Target
from tether.permissions.rules import Rules
from tether.providers.base import Provider, WebSearch
from tether.providers.catalog import info_of
from tether.settings.model import AgentConfig

SEARCH_TARGETS: frozenset[Target] = frozenset({"anthropic", "openai-responses"})
"""The wire APIs with a server-side web search tool tether offers."""

WEB_SEARCH = "web_search"
"""The tool's name, as permission rules name it."""


def _host(domain: str) -> str:
    return domain.strip().lower().rstrip(".")


def _within(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def web_search_for(config: AgentConfig, provider: Provider, *, safe_mode: bool) -> WebSearch | None:
    """The web search to offer with the next request to `provider`, or None (module rules)."""
    web = config.tools.web
    if not web.search or safe_mode or provider.target not in SEARCH_TARGETS:
        return None
    info = info_of(provider)
    if info is None or not info.web_search:
        return None
    perms = config.permissions
    if Rules.of(perms.allow, perms.ask, perms.deny).decide(WEB_SEARCH, {}).action in (
        "deny",
        "ask",
    ):
        return None
    denied = tuple(dict.fromkeys(_host(d) for d in web.denied_domains if d.strip()))
    allowed = tuple(
        a
        for a in dict.fromkeys(_host(d) for d in web.allowed_domains if d.strip())
        if not any(_within(a, d) for d in denied)
    )
    if web.allowed_domains and not allowed:
        return None  # every allowed host is denied: nothing may be searched
    if allowed and any(_within(d, a) for d in denied for a in allowed):
        return None  # not expressible with one list (module rules)
    return WebSearch(
        max_uses=web.search_max_uses,
        allowed_domains=allowed,
        blocked_domains=() if allowed else denied,
    )
