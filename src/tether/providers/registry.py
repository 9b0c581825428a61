"""Resolve a `--model provider/model` string to a provider instance.

Owns: the model-string grammar and the provider defaults. Does not own: credentials storage or
fallback chains (a later layer).

Grammar:
    None / "" / "local"          the embedded SmolLM2-135M-Instruct (no key, no network)
    "local/PATH.gguf"            any other GGUF file, in process
    "openai/MODEL"               Chat Completions (OPENAI_API_KEY; `base_url` for any
                                 OpenAI-compatible server: vLLM, llama.cpp server, LM Studio, ...)
    "anthropic/MODEL"            Anthropic Messages (ANTHROPIC_API_KEY)
"""

from __future__ import annotations

from pathlib import Path

from tether.errors import ConfigError
from tether.providers.base import Provider

PROVIDERS = ("local", "openai", "anthropic")


def resolve_provider(model: str | None, *, base_url: str | None = None) -> Provider:
    """Build the provider for a model string (see the module docstring).

    Raises:
        AuthError: (from the adapter) no API key for the official endpoint.
        ConfigError: unknown provider name, empty model name, missing optional extra or file.
    """
    spec = (model or "local").strip()
    provider_name, _, model_name = spec.partition("/")
    if provider_name == "local":
        from tether.providers.local import LocalProvider

        return LocalProvider(Path(model_name).expanduser() if model_name else None)
    if provider_name not in PROVIDERS:
        raise ConfigError(
            f"unknown provider {provider_name!r} in --model {spec!r}; "
            f"use one of: {', '.join(PROVIDERS)} (as provider/model)"
        )
    if not model_name:
        raise ConfigError(f"--model {spec!r} names no model; use {provider_name}/MODEL")
    if provider_name == "openai":
        from tether.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(model_name, base_url=base_url)
    from tether.providers.anthropic import AnthropicProvider

    return AnthropicProvider(model_name, base_url=base_url)
