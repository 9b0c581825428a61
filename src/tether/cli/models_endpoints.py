"""`tether models NAME` of a settings entry (`providers.NAME`, any type): its endpoint's
models asked with its own key, cached where the TUI's `/model` picker reads them.

Owns: `list_endpoint` (live, else cached, else the entry's configured model) and
`endpoint_models` (the live list; `tether models --test` of a built-in type).
Does not own: the built-in providers' listings and the cache format (`tether.providers.models`),
keys (`tether.providers.registry.key_for`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tether.errors import ConfigError
from tether.providers.compatible import AnthropicCompatibleProvider, OpenAICompatibleProvider
from tether.providers.models import MODEL_PROVIDERS, ModelList, fetch_models, live_or_cached
from tether.providers.registry import COMPATIBLE_TYPES, key_for, no_own_key, resolve_provider
from tether.settings.model import ProviderSettings


async def list_endpoint(
    name: str,
    providers: Mapping[str, ProviderSettings],
    *,
    cache_dir: Path | None = None,
    timeout_s: float = 10.0,
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> ModelList:
    """The models of the settings entry `providers[name]` (any type: `openai` with its own
    `base_url` as well as `openai-compatible`): live from its endpoint with its own key (never
    its type's default key: `registry.key_for`, `registry.no_own_key`) and headers, cached
    under its type and base URL (what the TUI's `/model` picker reads), else that cache, else
    its configured model (source `settings`).

    Raises:
        ConfigError: (AuthError included) `name` is no entry; its key cannot be had.
    """
    endpoint = providers.get(name)
    if endpoint is None:
        raise ConfigError(f"no providers.{name} entry in the settings")
    own = (endpoint.model,) if endpoint.model else ()
    return await live_or_cached(
        name,
        endpoint.type or name,
        endpoint.base_url,
        endpoint_models(name, endpoint, providers, timeout_s),
        (own, "settings"),
        cache_dir=cache_dir,
        clock_ms=clock_ms,
        raised=(ConfigError,),
    )


async def endpoint_models(
    name: str, endpoint: ProviderSettings, providers: Mapping[str, ProviderSettings],
    timeout_s: float,
) -> list[str]:
    """The models the endpoint of `providers[name]` lists now, asked with its own key.

    Raises:
        ConfigError: (AuthError included) a type with no listing; no key of its own.
        Exception: whatever the SDK or HTTP client raises (unreachable, refused).
    """
    kind = endpoint.type or name
    if kind in COMPATIBLE_TYPES:
        provider = resolve_provider(f"{name}/{endpoint.model or 'default'}", providers=providers)
        assert isinstance(provider, OpenAICompatibleProvider | AnthropicCompatibleProvider)
        return await provider.list_models(timeout_s)
    if kind not in MODEL_PROVIDERS or kind == "local":
        raise ConfigError(f"providers.{name} (type {kind}) has no model listing")
    key = key_for(f"{name}/x", providers=providers)
    if key is None and endpoint.base_url and kind != "ollama":
        key = no_own_key(name, kind, endpoint)
    return await fetch_models(kind, endpoint.base_url, timeout_s, key=key)
