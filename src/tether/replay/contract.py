"""A built request checked against one target's wire contract, offline.

Owns: `Checker` (per target: the real provider's request builder, constructed with a
placeholder key and never connected, then the target's published rules from
`tether.wire.contract`).
Does not own: the rules themselves (`tether.wire.contract`), the payloads (the providers'
request builders: `AnthropicProvider.request_params`, `OpenAIChatProvider.request_messages`,
`OpenAIResponsesProvider.request_params`, `GoogleProvider.request_config`,
`OllamaProvider.request_params`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.messages import TARGETS, Provenance, Target
from tether.providers.base import ModelRequest
from tether.wire import contract

if TYPE_CHECKING:
    from tether.providers.anthropic import AnthropicProvider
    from tether.providers.google import GoogleProvider

OFFLINE_KEY = "replay-offline"
"""The placeholder credential the offline providers are built with (no request is sent)."""
OFFLINE_URL = "http://127.0.0.1:9"
"""The placeholder endpoint of the offline Ollama provider (discard port; never contacted)."""
MODELS: dict[Target, str] = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-4o",
    "openai-responses": "gpt-5",
    "google": "gemini-2.5-pro",
    "ollama": "llama3.1",
}
"""The model each target's offline provider names (rules do not depend on it)."""


@dataclass(frozen=True, slots=True)
class Checker:
    """One target's offline request builder and rules.

    Attributes:
        target: the wire target.
        route: the provider/api/model the requests are built for (as the loop records it).
        supports_prefill: whether an assistant-final request is allowed.
        vendor_endpoint: the offline provider stands for the API vendor's own endpoint
            (every id held to the published rules; all but Ollama's).
        check: a request (`is_wire_view=True`, as the loop sends it) → the problems the
            provider would reject it for (empty: accepted).
    """

    target: Target
    route: Provenance
    supports_prefill: bool
    check: Callable[[ModelRequest], list[str]]
    vendor_endpoint: bool = True


def checker(target: Target) -> Checker:
    """The offline checker for `target`.

    Raises:
        ValueError: an unknown target.
    """
    model = MODELS.get(target, "")
    if target == "anthropic":
        from tether.providers.anthropic import AnthropicProvider

        anthropic = AnthropicProvider(model, api_key=OFFLINE_KEY)

        def check_anthropic(request: ModelRequest) -> list[str]:
            return anthropic_problems(anthropic, request)

        return Checker(target, _route(anthropic.name, target, model), False, check_anthropic)
    if target == "openai-chat":
        from tether.providers.openai_chat import OpenAIChatProvider

        chat = OpenAIChatProvider(model, api_key=OFFLINE_KEY)
        route = _route(chat.name, target, model)

        def check_chat(request: ModelRequest) -> list[str]:
            own = frozenset(
                c.id
                for t in request.messages
                if t.role == "assistant" and t.provenance == route
                for c in t.tool_calls
            )
            return contract.chat_problems(chat.request_messages(request), own_ids=own)

        return Checker(target, route, False, check_chat)
    if target == "openai-responses":
        from tether.providers.openai_responses import OpenAIResponsesProvider

        responses = OpenAIResponsesProvider(model, api_key=OFFLINE_KEY, reasoning=True)

        def check_responses(request: ModelRequest) -> list[str]:
            return contract.responses_problems(responses.request_params(request))

        return Checker(target, _route(responses.name, target, model), False, check_responses)
    if target == "google":
        from tether.providers.google import GoogleProvider

        google = GoogleProvider(model, api_key=OFFLINE_KEY)

        def check_google(request: ModelRequest) -> list[str]:
            return contract.gemini_problems(gemini_contents(google, request))

        return Checker(target, _route(google.name, target, model), False, check_google)
    if target == "ollama":
        from tether.providers.ollama import OllamaProvider

        ollama = OllamaProvider(model, base_url=OFFLINE_URL)

        def check_ollama(request: ModelRequest) -> list[str]:
            return contract.ollama_problems(ollama.request_params(request))

        return Checker(
            target, _route(ollama.name, target, model), False, check_ollama, vendor_endpoint=False
        )
    raise ValueError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")


def anthropic_problems(provider: AnthropicProvider, request: ModelRequest) -> list[str]:
    """The Messages API rules `provider`'s request for `request` breaks (`[]`: none)."""
    p = provider.request_params(request)
    return contract.anthropic_problems(
        p.messages,
        system=p.system,
        tools=p.tools,
        thinking=dict(p.thinking) if p.thinking is not None else None,
        temperature=p.temperature,
        max_tokens=p.max_tokens,
        prefill_allowed=provider.info.supports_prefill,
    )


def gemini_contents(provider: GoogleProvider, request: ModelRequest) -> list[dict[str, Any]]:
    """`provider`'s `contents` for `request`, as the JSON the Gemini API receives."""
    contents, _config = provider.request_config(request)
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents]


def _route(name: str, target: Target, model: str) -> Provenance:
    return Provenance(provider=name, api=target, model=model)
