"""Context windows: which limits a model has, and what an overflow error says the real one is.

Owns: the bundled model table, the resolution order (settings -> provider metadata -> table ->
conservative default with a one-time warning), the `context.windows` settings shape, and
parsing the maximum out of context_overflow error texts.
Does not own: reading settings.json or asking a provider for metadata (edges: the CLI and the
adapters pass the results in), nor emitting the warning (the caller prints it).

Pure: no I/O, no clock; inputs are never mutated.

Shapes:
    resolve_limits(model, *, configured=None, provider_reported=None)
        -> (ModelLimits, warning text | None)
    LimitsResolver().resolve(...)            # the same, the warning only once per model
    parse_windows_setting(value) -> dict[str, ModelLimits]     # settings.json context.windows
    parse_overflow_limit(message) -> int | None
    KNOWN_MODELS: Mapping[str, ModelLimits]; DEFAULT_LIMITS: ModelLimits

Table lookup: the lower-cased name, then its part after the last "/" (OpenRouter-style
`vendor/model`), each with "." read as "-" as a second try (`claude-sonnet-4.5`); exact match
first, then the longest table key that is a prefix ending at a non-alphanumeric character
(`claude-sonnet-4-5-20250929` -> `claude-sonnet-4-5`, `llama3.1:8b` -> `llama3.1`, but `gpt-4o`
never matches `gpt-4`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, cast

from tether.compaction.pressure import ModelLimits

SETTINGS_HINT = 'settings.json: {"context": {"windows": {"<model>": {"context_window": N, "max_output_tokens": M}}}}'
"""Where the user sets a model's window."""


def _m(window: int, output: int) -> ModelLimits:
    return ModelLimits(context_window=window, max_output_tokens=output, source="table")


# Figures from the vendors' model pages (Anthropic "Models overview", OpenAI model pages,
# Google "Gemini models", Ollama library `context length`); local output caps are practical.
KNOWN_MODELS: Mapping[str, ModelLimits] = MappingProxyType(
    {
        # Anthropic
        "claude-opus-4-5": _m(200_000, 64_000),
        "claude-opus-4-1": _m(200_000, 32_000),
        "claude-opus-4": _m(200_000, 32_000),
        "claude-sonnet-4-5": _m(200_000, 64_000),
        "claude-sonnet-4": _m(200_000, 64_000),
        "claude-haiku-4-5": _m(200_000, 64_000),
        "claude-3-7-sonnet": _m(200_000, 64_000),
        "claude-3-5-sonnet": _m(200_000, 8_192),
        "claude-3-5-haiku": _m(200_000, 8_192),
        "claude-3-opus": _m(200_000, 4_096),
        "claude-3-haiku": _m(200_000, 4_096),
        "claude": _m(200_000, 8_192),
        # OpenAI
        "gpt-5.1": _m(400_000, 128_000),
        "gpt-5": _m(400_000, 128_000),
        "gpt-5-mini": _m(400_000, 128_000),
        "gpt-5-nano": _m(400_000, 128_000),
        "gpt-5-chat": _m(128_000, 16_384),
        "gpt-5-codex": _m(400_000, 128_000),
        "gpt-4.1": _m(1_047_576, 32_768),
        "gpt-4o": _m(128_000, 16_384),
        "gpt-4-turbo": _m(128_000, 4_096),
        "gpt-4": _m(8_192, 8_192),
        "gpt-3.5-turbo": _m(16_385, 4_096),
        "o1": _m(200_000, 100_000),
        "o1-mini": _m(128_000, 65_536),
        "o3": _m(200_000, 100_000),
        "o3-mini": _m(200_000, 100_000),
        "o4-mini": _m(200_000, 100_000),
        "gpt-oss": _m(131_072, 32_768),
        # Google
        "gemini-3-pro": _m(1_048_576, 65_536),
        "gemini-2.5-pro": _m(1_048_576, 65_536),
        "gemini-2.5-flash": _m(1_048_576, 65_536),
        "gemini-2.0-flash": _m(1_048_576, 8_192),
        "gemini-1.5-pro": _m(2_097_152, 8_192),
        "gemini-1.5-flash": _m(1_048_576, 8_192),
        # DeepSeek API
        "deepseek-chat": _m(128_000, 8_192),
        "deepseek-reasoner": _m(128_000, 64_000),
        # Ollama library (the model's trained context length; Ollama itself runs with its
        # num_ctx setting, which the provider should report or the user configure)
        "llama3.3": _m(131_072, 8_192),
        "llama3.2": _m(131_072, 8_192),
        "llama3.1": _m(131_072, 8_192),
        "llama3": _m(8_192, 4_096),
        "qwen3-coder": _m(262_144, 65_536),
        "qwen3": _m(40_960, 8_192),
        "qwen2.5-coder": _m(32_768, 8_192),
        "qwen2.5": _m(32_768, 8_192),
        "mistral-nemo": _m(131_072, 8_192),
        "mistral": _m(32_768, 8_192),
        "gemma3:270m": _m(32_768, 8_192),
        "gemma3:1b": _m(32_768, 8_192),
        "gemma3": _m(131_072, 8_192),
        "gemma2": _m(8_192, 4_096),
        "phi4": _m(16_384, 4_096),
        "deepseek-r1": _m(131_072, 32_768),
        "smollm2": _m(8_192, 2_048),
    }
)
"""The bundled table: model name (or family prefix) -> limits, in tokens (source "table")."""

DEFAULT_LIMITS = ModelLimits(context_window=32_768, max_output_tokens=4_096, source="default")
"""The conservative default for an unknown model: a 32k window, 4k output (source "default").
Small enough that few real models overflow before compacting; a warning names the setting."""


def _prefix_match(name: str) -> ModelLimits | None:
    hit = KNOWN_MODELS.get(name)
    if hit is not None:
        return hit
    best: str | None = None
    for key in KNOWN_MODELS:
        if (
            len(name) > len(key)
            and name.startswith(key)
            and not name[len(key)].isalnum()
            and (best is None or len(key) > len(best))
        ):
            best = key
    return KNOWN_MODELS[best] if best is not None else None


def table_limits(model: str) -> ModelLimits | None:
    """The bundled table's limits for `model` (lookup rules in the module docstring), or None."""
    name = model.strip().lower()
    candidates = [name]
    if "/" in name:
        candidates.append(name.rsplit("/", 1)[1])
    for candidate in list(candidates):
        if "." in candidate:
            candidates.append(candidate.replace(".", "-"))
    for candidate in candidates:
        hit = _prefix_match(candidate)
        if hit is not None:
            return hit
    return None


def unknown_window_warning(model: str, limits: ModelLimits = DEFAULT_LIMITS) -> str:
    """The warning for a model whose window tether does not know."""
    return (
        f"tether does not know the context window of model {model!r}; assuming "
        f"{limits.context_window:,} tokens with {limits.max_output_tokens:,} output tokens. "
        f"If the model has a larger (or smaller) window, set it in {SETTINGS_HINT}"
    )


def resolve_limits(
    model: str,
    *,
    configured: Mapping[str, ModelLimits] | None = None,
    provider_reported: ModelLimits | None = None,
) -> tuple[ModelLimits, str | None]:
    """A model's limits, in order: explicit settings -> provider-reported metadata -> the
    bundled table -> `DEFAULT_LIMITS` with a warning (a custom model's window is unknown).

    Args:
        model: the model name as sent to the provider.
        configured: settings.json `context.windows` (see `parse_windows_setting`); matched by
            exact name, then case-insensitively, then by the part after the last "/"
            (`openai/glm-5.2` finds a `glm-5.2` entry).
        provider_reported: limits the provider reported (Ollama `/api/show` context length,
            llama.cpp `/props` n_ctx, OpenRouter's model list), or None.

    Returns:
        (limits with their `source` set, warning text or None). The warning is set only for
        the default; emit it once (`LimitsResolver` does the bookkeeping).
    """
    if configured:
        lowered = {k.lower(): v for k, v in configured.items()}
        bare = model.rsplit("/", 1)[-1]
        hit = (
            configured.get(model)
            or lowered.get(model.lower())
            or configured.get(bare)
            or lowered.get(bare.lower())
        )
        if hit is not None:
            return replace(hit, source="settings"), None
    if provider_reported is not None and provider_reported.context_window > 0:
        return replace(provider_reported, source="provider"), None
    table = table_limits(model)
    if table is not None:
        return replace(table, source="table"), None
    return DEFAULT_LIMITS, unknown_window_warning(model)


@dataclass(slots=True)
class LimitsResolver:
    """`resolve_limits` with the warning returned only the first time per model (one session's
    or one process's bookkeeping; state is explicit, no I/O)."""

    warned: set[str] = field(default_factory=lambda: set[str]())

    def resolve(
        self,
        model: str,
        *,
        configured: Mapping[str, ModelLimits] | None = None,
        provider_reported: ModelLimits | None = None,
    ) -> tuple[ModelLimits, str | None]:
        """Like `resolve_limits`; the warning is None after the first time for `model`."""
        limits, warning = resolve_limits(
            model, configured=configured, provider_reported=provider_reported
        )
        if warning is None or model in self.warned:
            return limits, None
        self.warned.add(model)
        return limits, warning


def parse_windows_setting(value: Any) -> dict[str, ModelLimits]:
    """settings.json `context.windows` -> {model: ModelLimits(source="settings")}.

    Accepted per model: an integer window (output defaults to a quarter of it, at most 32,768)
    or an object `{"context_window": N, "max_output_tokens": M}` (M optional).

    Raises:
        ValueError: the value is not an object, or an entry is not a positive integer window
            (the message names the model and the expected shape).
    """
    if not isinstance(value, Mapping):
        raise ValueError(
            f"context.windows must be an object of model -> window, got {type(value).__name__}"
        )
    out: dict[str, ModelLimits] = {}
    items = cast("Mapping[Any, Any]", value)
    for model, entry in items.items():
        if not isinstance(model, str):
            raise ValueError(f"context.windows: model names must be strings, got {model!r}")
        window: Any = entry
        output: Any = None
        if isinstance(entry, Mapping):
            fields = cast("Mapping[str, Any]", entry)
            window = fields.get("context_window")
            output = fields.get("max_output_tokens")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(
                f"context.windows[{model!r}]: context_window must be a positive integer "
                f"(tokens), got {window!r}; expected N or "
                '{"context_window": N, "max_output_tokens": M}'
            )
        if output is None:
            output = min(window // 4, 32_768)
        if isinstance(output, bool) or not isinstance(output, int) or output < 0:
            raise ValueError(
                f"context.windows[{model!r}]: max_output_tokens must be a non-negative "
                f"integer (tokens), got {output!r}"
            )
        out[model] = ModelLimits(
            context_window=window, max_output_tokens=min(output, window), source="settings"
        )
    return out


_NUM = r"(\d[\d,_]*)"
_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # Anthropic: "prompt is too long: 207547 tokens > 200000 maximum"
        r"too long:\s*[\d,_]+\s*tokens?\s*>\s*" + _NUM,
        # Anthropic: "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000"
        r"exceed context limit:\s*[\d,_]+\s*\+\s*[\d,_]+\s*>\s*" + _NUM,
        # OpenAI, vLLM, DeepSeek, OpenRouter: "maximum context length is 131072 tokens"
        r"maximum context length is\s*" + _NUM,
        # xAI: "This model's maximum prompt length is 131072 but ..."
        r"maximum prompt length is\s*" + _NUM,
        # Gemini: "exceeds the maximum number of tokens allowed (1048576)"
        r"maximum number of tokens allowed\s*\(?\s*" + _NUM,
        # llama.cpp server: "exceeds the available context size (4096 tokens)"
        r"available context size\s*\(\s*" + _NUM,
        # llama.cpp server error body: "n_ctx": 4096
        r"\"?n_ctx\"?\s*[:=]\s*" + _NUM,
        # llama-cpp-python: "Requested tokens (5000) exceed context window of 4096"
        r"exceed(?:s|ed)? (?:the )?context window of\s*" + _NUM,
        # vLLM: "is too long to fit into the model (context length 4096)"
        r"\(context length\s*" + _NUM,
        # LM Studio: "the model is loaded with context length of only 4096 tokens"
        r"context length of (?:only )?" + _NUM,
        # Mistral: "too large for model with 32768 maximum context length"
        r"model with\s*" + _NUM + r"\s*maximum context length",
        # TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096"
        r"must be <=\s*" + _NUM,
    )
)


def parse_overflow_limit(message: str) -> int | None:
    """The real maximum a context_overflow error text states, in tokens, or None.

    Recognized wordings: Anthropic ("prompt is too long: 207547 tokens > 200000 maximum",
    "exceed context limit: A + B > N"), OpenAI / vLLM / DeepSeek / OpenRouter ("maximum context
    length is N tokens"), xAI ("maximum prompt length is N"), Gemini ("exceeds the maximum
    number of tokens allowed (N)"), llama.cpp server ("available context size (N tokens)",
    `"n_ctx": N` in its error body), llama-cpp-python ("exceed context window of N"), vLLM
    ("(context length N)"), LM Studio ("context length of only N tokens"), Mistral ("model
    with N maximum context length"), TGI ("must be <= N"). Ollama's "the input length exceeds
    the context length" states no number (None). Numbers may carry "," or "_" separators; a
    stated maximum of 0 is not a window (None).
    """
    for pattern in _OVERFLOW_PATTERNS:
        match = pattern.search(message)
        if match is not None:
            digits = match.group(1).replace(",", "").replace("_", "")
            n = int(digits)
            return n if n > 0 else None
    return None
