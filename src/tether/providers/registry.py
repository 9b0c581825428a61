"""Resolve a `--model provider/model` string to a provider instance.

Owns: the model-string grammar and the provider defaults. Does not own: credentials storage or
fallback chains (a later layer).

Grammar:
    None / "" / "local"          the embedded SmolLM2-135M-Instruct (no key, no network)
    "local/PATH.gguf"            any other GGUF file, in process
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

from pathlib import Path

from tether.errors import ConfigError
from tether.providers.base import Provider

PROVIDERS = ("local", "openai", "anthropic", "openai-responses", "google", "ollama")


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
    if provider_name == "openai-responses":
        from tether.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(model_name, base_url=base_url)
    if provider_name == "google":
        from tether.providers.google import GoogleProvider

        return GoogleProvider(model_name, base_url=base_url)
    if provider_name == "ollama":
        from tether.providers.ollama import OllamaProvider

        return OllamaProvider(model_name, base_url=base_url)
    from tether.providers.anthropic import AnthropicProvider

    return AnthropicProvider(model_name, base_url=base_url)
