"""Resolve a `--model provider/model` string to a provider instance.

Owns: the model-string grammar and the provider defaults. Does not own: credentials storage
(`tether.credentials`, whose lookup order — argument → environment → keyring → credential file —
is applied here) or fallback chains (a later layer).

An entry of type `openai-compatible` / `anthropic-compatible` is an endpoint declared in the
settings alone (`tether.providers.compatible`: its headers, auth scheme and model list).
A name from the settings' `providers` section (`--model work/MODEL` with `providers.work =
{"type": "openai", "base_url": ...}`) picks its adapter by `type` and supplies `base_url`, a
default model, and `api_key_env`; an explicit `base_url` argument wins.

Grammar:
    None / "" / "local"          the embedded SmolLM2-135M-Instruct (no key, no network)
    "local/PATH.gguf"            any other GGUF file, in a supervised child process
    "openai/MODEL"               Chat Completions (OPENAI_API_KEY; `base_url` for any
                                 OpenAI-compatible server: vLLM, llama.cpp server, LM Studio, ...)
    "anthropic/MODEL"            Anthropic Messages (ANTHROPIC_API_KEY)
    "openai-responses/MODEL"     OpenAI Responses, stateless (OPENAI_API_KEY)
    "google/MODEL"               Gemini API (GEMINI_API_KEY, else GOOGLE_API_KEY)
    "ollama/MODEL"               a local Ollama server's native API (no key; OLLAMA_HOST or
                                 `base_url`, default http://127.0.0.1:11434)
The model name is everything after the first `/` (so `ollama/qwen3:8b` and
`openai/meta-llama/Llama-3-8B` keep their own slashes and tags).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path

from tether.credentials import lookup_key
from tether.errors import AuthError, ConfigError
from tether.providers.base import Provider
from tether.providers.fallback import ModelRef
from tether.settings.model import ProviderSettings

PROVIDERS = ("local", "openai", "anthropic", "openai-responses", "google", "ollama")
COMPATIBLE_TYPES = ("openai-compatible", "anthropic-compatible")
"""Types only a settings entry can use (`tether.providers.compatible`: base_url, headers, auth)."""


def resolve_provider(
    model: ModelRef | str | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    providers: Mapping[str, ProviderSettings] | None = None,
) -> Provider:
    """Build the provider for a model string (see the module docstring).

    Args:
        model: a parsed `ModelRef` (a `provider/model` string is parsed by `ModelRef.parse`),
            or None for the embedded default.
        base_url: the endpoint; wins over the settings' `providers.<name>.base_url`.
        api_key: an explicit key; else `tether.credentials.lookup_key` finds one.
        providers: the settings' `providers` section (named endpoints).

    Raises:
        AuthError: (from the adapter) no API key for the official endpoint.
        ConfigError: unknown provider name, empty model name, missing optional extra or file,
            a provider type without an adapter yet, an unsafe credential file.
    """
    ref = model if isinstance(model, ModelRef) else ModelRef.parse(model)
    spec, provider_name, model_name = ref.spec, ref.provider, ref.model
    endpoint = (providers or {}).get(provider_name)
    # a URL the user typed (`--base-url`) for a built-in provider (not an entry with its own
    # `base_url`, whose stored key the user named) gets no stored key: `key_for(stored=False)`
    typed_url = base_url is not None and (endpoint is None or not endpoint.base_url)
    if endpoint is not None:
        base_url = base_url or endpoint.base_url
        model_name = model_name or endpoint.model or ""
        provider_name, name = endpoint.type or provider_name, provider_name
    else:
        name = provider_name
    if endpoint is not None and provider_name in COMPATIBLE_TYPES:  # declared in the settings
        from tether.providers.compatible import compatible_provider

        if not model_name:
            raise ConfigError(f"--model {spec!r} names no model; use {name}/MODEL")
        key = api_key or key_for(spec, providers=providers, stored=not typed_url)
        return compatible_provider(name, model_name, endpoint, key)
    if provider_name == "local":
        from tether.providers.local.provider import LocalProvider

        return LocalProvider(Path(model_name).expanduser() if model_name else None)
    if provider_name not in PROVIDERS:
        raise ConfigError(
            f"unknown provider {provider_name!r} in --model {spec!r}; "
            f"use one of: {', '.join(PROVIDERS)} (as provider/model)"
        )
    if not model_name:
        raise ConfigError(f"--model {spec!r} names no model; use {provider_name}/MODEL")
    if provider_name == "ollama":
        from tether.providers.ollama import OllamaProvider

        return OllamaProvider(model_name, base_url=base_url, name=name)  # no key
    key = api_key or key_for(ref, providers=providers, stored=not typed_url)
    if key is None and endpoint is not None and endpoint.base_url:
        key = no_own_key(name, provider_name, endpoint)
    try:
        if provider_name == "openai":
            from tether.providers.openai_chat import OpenAIChatProvider

            return OpenAIChatProvider(model_name, api_key=key, base_url=base_url, name=name)
        if provider_name == "openai-responses":
            from tether.providers.openai_responses import OpenAIResponsesProvider

            return OpenAIResponsesProvider(model_name, api_key=key, base_url=base_url, name=name)
        if provider_name == "google":
            from tether.providers.google import GoogleProvider

            return GoogleProvider(model_name, api_key=key, base_url=base_url, name=name)
        from tether.providers.anthropic import AnthropicProvider

        return AnthropicProvider(model_name, api_key=key, base_url=base_url, name=name)
    except AuthError as exc:
        raise AuthError(f"{exc}, or store one with `tether login {name}`") from None


def no_own_key(name: str, type_: str, endpoint: ProviderSettings) -> str:
    """What a settings endpoint with its own `base_url` and no key of its own gets: never the
    type's default key (the SDKs read `OPENAI_API_KEY` & co. when handed none, and would send
    the user's OpenAI key to the gateway): a keyless OpenAI-style gateway a placeholder;
    otherwise an `AuthError` naming where its key goes.

    Raises:
        AuthError: `api_key_env` is set but empty, or the type cannot go without a key.
    """
    if endpoint.api_key_env:
        raise AuthError(
            f"no key for {name}: set {endpoint.api_key_env} or store one with `tether login {name}`"
        )
    if type_ in ("openai", "openai-responses"):
        return "not-needed"
    raise AuthError(
        f"no key for {name}: set providers.{name}.api_key_env or store one with "
        f"`tether login {name}`"
    )


_ADAPTERS: dict[str, tuple[str, str]] = {
    "local": ("tether.providers.local.provider", "LocalProvider"),
    "ollama": ("tether.providers.ollama", "OllamaProvider"),
    "google": ("tether.providers.google", "GoogleProvider"),
    "openai": ("tether.providers.openai_chat", "OpenAIChatProvider"),
    "openai-responses": ("tether.providers.openai_responses", "OpenAIResponsesProvider"),
    "anthropic": ("tether.providers.anthropic", "AnthropicProvider"),
}
"""Each built-in provider type's adapter class (module, class name), for `provider_class`."""


def provider_class(
    name: str, *, providers: Mapping[str, ProviderSettings] | None = None
) -> tuple[str, type]:
    """The type of provider `name` (a type, or a `providers.<name>` entry's) and its adapter
    class, without building it (no key needed): what `tether login` and `tether models
    --usage` ask for the optional methods (`login`, `plan_usage`).

    Raises:
        ConfigError: an unknown name.
    """
    endpoint = (providers or {}).get(name)
    type_ = (endpoint.type if endpoint is not None else None) or name
    where = _ADAPTERS.get(type_)
    if where is not None:  # imported only when asked: each adapter pulls in its SDK
        return type_, getattr(importlib.import_module(where[0]), where[1])
    if endpoint is not None and type_ in COMPATIBLE_TYPES:
        from tether.providers.compatible import (
            AnthropicCompatibleProvider,
            OpenAICompatibleProvider,
        )

        if type_ == "openai-compatible":
            return type_, OpenAICompatibleProvider
        return type_, AnthropicCompatibleProvider
    raise ConfigError(
        f"unknown provider {name!r}: use one of {', '.join(PROVIDERS)} or a providers.<name> "
        f"entry of the settings"
    )


def key_for(
    model: ModelRef | str | None,
    *,
    providers: Mapping[str, ProviderSettings] | None = None,
    stored: bool = True,
) -> str | None:
    """The API key `resolve_provider(model, providers=providers)` hands its adapter when no
    explicit key is given (`tether.credentials.lookup_key` for the endpoint's name, type and
    `api_key_env`), or None: none found, or the provider takes none (`local`, `ollama`, an
    unknown name). `stored=False` (a `--base-url` the user typed): `--token` and the
    environment only, never a key `tether login` stored for the provider's own endpoint.

    Raises:
        ConfigError: the credential file is readable by others, or malformed.
    """
    ref = model if isinstance(model, ModelRef) else ModelRef.parse(model)
    provider_name = ref.provider
    endpoint = (providers or {}).get(provider_name)
    name = provider_name
    if endpoint is not None:
        provider_name = endpoint.type or provider_name
    if provider_name in ("local", "ollama"):
        return None
    if provider_name not in PROVIDERS and not (endpoint and provider_name in COMPATIBLE_TYPES):
        return None
    # an endpoint of its own (`base_url`) reads only its own key: its `api_key_env`, else what
    # is stored under its name; never its type's default variables (another service's key)
    own = endpoint is not None and bool(endpoint.base_url) and name != provider_name
    return lookup_key(
        name,
        type_=name if own else provider_name,
        api_key_env=endpoint.api_key_env if endpoint else None,
        stored=stored,
    )
