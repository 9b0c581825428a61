"""The model catalog: one table of what tether knows of each model, one name normaliser.

Owns: `ModelInfo` (context window, max output, price, prefill, window allocation, and which
providers list the model when they cannot be asked), the bundled table `KNOWN_MODELS`, the name
normaliser (`model_keys`) and the lookups on it (`lookup`, `table_limits`, `price_for`,
`listed_models`), a provider's typed capabilities (`info_of`), and the limits resolution order
(settings -> provider -> table -> default with a one-time warning: `resolve_limits`,
`LimitsResolver`). Pure: no I/O, no clock; inputs are never mutated.
Does not own: the compaction policy that uses the limits (`tether.compaction`: its pure
modules never import this one; the caller resolves `ModelLimits` here and injects them into
`ContextMonitor`), live model listings (`tether.providers.models`), costs
(`tether.providers.pricing`).

Figures: limits from the vendors' model pages (Anthropic "Models overview", OpenAI model pages,
Google "Gemini models", Ollama library `context length`; local output caps are practical);
prices in USD per million tokens from the vendors' pricing pages as of `PRICES_AS_OF`
(docs.anthropic.com "Pricing", openai.com/api/pricing, ai.google.dev/gemini-api/docs/pricing).
Base tier only: Anthropic's 5-minute cache-write price; long-context surcharges (Claude Sonnet
past 200k prompt tokens, Gemini 2.5 Pro past 200k) are not applied. OpenAI and Gemini bill no
cache write, so their cache-write price is the input price. A model without a price has no
cost: none is shown rather than a guess.

Name normalisation (`model_keys`), the one rule for every lookup: the name lower-cased and
stripped, then its part after the last "/" (`anthropic/claude-sonnet-4.5`, `models/gemini-2.5-
pro`); each without a snapshot suffix (`-20250929`, `-2024-08-06`, `-latest`); each with "."
read as "-" (`claude-sonnet-4.5`); each through the aliases (`claude-sonnet-4-0` is
`claude-sonnet-4`). Table keys are normalised the same way (so a dashed version finds a dotted
key: `gemini-2-5-pro` is `gemini-2.5-pro`). A lookup takes the first candidate
that is a key (an exact match), else the longest key that is a prefix of a candidate ending at a
non-alphanumeric character (`llama3.1:8b` -> `llama3.1`; `gpt-4o` never matches `gpt-4`).
Limits accept a prefix match (a family's window); a price needs an exact match (`gpt-5-nano` is
not priced as `gpt-5`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, Protocol, runtime_checkable

from tether.effort import Effort
from tether.providers.base import Provider
from tether.tokens import ModelLimits

PRICES_AS_OF = "2025-11"

SETTINGS_HINT = 'settings.json: {"context": {"windows": {"<model>": {"context_window": N, "max_output_tokens": M}}}}'
"""Where the user sets a model's window."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """USD per million tokens of each kind; `per_search`: USD per server-side web search
    (`Usage.web_search_requests`), 0 for a model without one."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    per_search: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """What tether knows of a model, as typed data.

    Attributes:
        context_window: the window, in tokens.
        max_output_tokens: the most it generates per reply, in tokens.
        price: USD per million tokens, or None (no cost is shown).
        supports_prefill: the model accepts a request ending with an assistant turn.
        allocates_window: the server allocates the window per request (Ollama `num_ctx`): the
            provider is told the resolved window (`WindowAllocator.use_context_window`).
        vendor_endpoint: the provider sends to the API vendor's own endpoint (api.openai.com,
            api.anthropic.com, Google's Gemini API), which holds every tool-call id to its
            published rules; False for a compatible server (vLLM, llama.cpp, a gateway), which
            gets the ids it issued back verbatim (`tether.wire.ids`).
        source: `table` (this catalog) or `provider` (the provider's own figure: the local
            model's n_ctx, Ollama's num_ctx).
        compact_prompt: the model takes the system prompt's facts in their compact form
            (`tether.prompt.system.compact_prompt`: the embedded model).
        listed: the providers whose bundled model list (`tether models` when the provider
            cannot be asked) shows this model under its table name.
        image_input: the model takes images: True, False (a prompt with an image is refused
            before anything is sent), or None when unknown (assumed to take them). From the
            vendors' model pages (`TEXT_ONLY`, `WITH_IMAGES`).
        web_search: the model can use its vendor's server-side web search (`WEB_SEARCH`): the
            `web_search_20250305` tool on the Anthropic Messages API, `web_search` on the OpenAI
            Responses API. Set for exact table matches only (a family prefix says nothing of a
            variant: `gpt-4.1-nano` has none).
        reasoning: the model reasons (thinks before answering) and takes a reasoning effort
            (`REASONING`; `tether.effort`).
    """

    context_window: int
    max_output_tokens: int
    price: Price | None = None
    supports_prefill: bool = False
    allocates_window: bool = False
    vendor_endpoint: bool = False
    source: Literal["table", "provider"] = "table"
    listed: tuple[str, ...] = field(default=(), compare=False)
    compact_prompt: bool = False
    image_input: bool | None = None
    web_search: bool = False
    reasoning: bool = False

    @property
    def limits(self) -> ModelLimits:
        """The window and output cap as the compaction monitor takes them."""
        return ModelLimits(
            context_window=self.context_window,
            max_output_tokens=self.max_output_tokens,
            source=self.source,
        )


def _m(window: int, output: int, price: Price | None = None, *listed: str) -> ModelInfo:
    return ModelInfo(context_window=window, max_output_tokens=output, price=price, listed=listed)


def _p(input: float, output: float, cache_read: float, cache_write: float | None = None) -> Price:
    return Price(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=input if cache_write is None else cache_write,
    )


_OPENAI = ("openai", "openai-responses")

_TABLE: dict[str, ModelInfo] = (
    {
        # Anthropic: input, output, cache read (0.1x), cache write 5 min (1.25x)
        "claude-opus-4-5": _m(200_000, 64_000, _p(5.0, 25.0, 0.50, 6.25)),
        "claude-opus-4-1": _m(200_000, 32_000, _p(15.0, 75.0, 1.50, 18.75), "anthropic"),
        "claude-opus-4": _m(200_000, 32_000, _p(15.0, 75.0, 1.50, 18.75)),
        "claude-sonnet-4-5": _m(200_000, 64_000, _p(3.0, 15.0, 0.30, 3.75), "anthropic"),
        "claude-sonnet-4-20250514": _m(200_000, 64_000, _p(3.0, 15.0, 0.30, 3.75), "anthropic"),
        "claude-haiku-4-5": _m(200_000, 64_000, _p(1.0, 5.0, 0.10, 1.25), "anthropic"),
        "claude-3-7-sonnet": _m(200_000, 64_000),
        "claude-3-5-sonnet": _m(200_000, 8_192),
        "claude-3-5-haiku-latest": _m(200_000, 8_192, _p(0.80, 4.0, 0.08, 1.0), "anthropic"),
        "claude-3-opus": _m(200_000, 4_096),
        "claude-3-haiku": _m(200_000, 4_096),
        "claude": _m(200_000, 8_192),
        # OpenAI: input, output, cached input
        "gpt-5.1": _m(400_000, 128_000),
        "gpt-5.1-codex-max": _m(400_000, 128_000, None, "openai-responses"),
        "gpt-5": _m(400_000, 128_000, _p(1.25, 10.0, 0.125), *_OPENAI),
        "gpt-5-mini": _m(400_000, 128_000, _p(0.25, 2.0, 0.025), *_OPENAI),
        "gpt-5-nano": _m(400_000, 128_000, None, *_OPENAI),
        "gpt-5-chat": _m(128_000, 16_384),
        "gpt-5-codex": _m(400_000, 128_000),
        "gpt-4.1": _m(1_047_576, 32_768, _p(2.0, 8.0, 0.50), *_OPENAI),
        "gpt-4.1-mini": _m(1_047_576, 32_768, _p(0.40, 1.60, 0.10), "openai"),
        "gpt-4o": _m(128_000, 16_384, _p(2.50, 10.0, 1.25), *_OPENAI),
        "gpt-4o-mini": _m(128_000, 16_384, _p(0.15, 0.60, 0.075), "openai"),
        "gpt-4-turbo": _m(128_000, 4_096),
        "gpt-4": _m(8_192, 8_192),
        "gpt-3.5-turbo": _m(16_385, 4_096),
        "o1": _m(200_000, 100_000),
        "o1-mini": _m(128_000, 65_536),
        "o3": _m(200_000, 100_000, None, *_OPENAI),
        "o3-mini": _m(200_000, 100_000),
        "o4-mini": _m(200_000, 100_000, None, *_OPENAI),
        "gpt-oss": _m(131_072, 32_768),
        # Google Gemini (prompts up to 200k tokens): input, output, cached input
        "gemini-3-pro": _m(1_048_576, 65_536),
        "gemini-3-pro-preview": _m(1_048_576, 65_536, None, "google"),
        "gemini-2.5-pro": _m(1_048_576, 65_536, _p(1.25, 10.0, 0.125), "google"),
        "gemini-2.5-flash": _m(1_048_576, 65_536, _p(0.30, 2.50, 0.03), "google"),
        "gemini-2.5-flash-lite": _m(1_048_576, 65_536, None, "google"),
        "gemini-2.0-flash": _m(1_048_576, 8_192),
        "gemini-1.5-pro": _m(2_097_152, 8_192),
        "gemini-1.5-flash": _m(1_048_576, 8_192),
        # DeepSeek API
        "deepseek-chat": _m(128_000, 8_192),
        "deepseek-reasoner": _m(128_000, 64_000),
        # Ollama library (the model's trained context length; Ollama itself runs with the
        # num_ctx the provider sends, which it reports as its own figure)
        "llama3.3": _m(131_072, 8_192),
        "llama3.2": _m(131_072, 8_192, None, "ollama"),
        "llama3.1": _m(131_072, 8_192, None, "ollama"),
        "llama3": _m(8_192, 4_096),
        "qwen3-coder": _m(262_144, 65_536),
        "qwen3": _m(40_960, 8_192, None, "ollama"),
        "qwen2.5-coder": _m(32_768, 8_192),
        "qwen2.5": _m(32_768, 8_192),
        "mistral-nemo": _m(131_072, 8_192),
        "mistral": _m(32_768, 8_192, None, "ollama"),
        "gemma3:270m": _m(32_768, 8_192),
        "gemma3:1b": _m(32_768, 8_192),
        "gemma3": _m(131_072, 8_192, None, "ollama"),
        "gemma2": _m(8_192, 4_096),
        "gpt-oss:20b": _m(131_072, 32_768, None, "ollama"),
        "phi4": _m(16_384, 4_096),
        "deepseek-r1": _m(131_072, 32_768),
        "smollm2": _m(8_192, 2_048),
        # The embedded models by name (`local/NAME`; `local` alone is the first)
        "smollm2-135m-instruct": _m(8_192, 2_048, None, "local"),
        "qwen2.5-coder-0.5b": _m(32_768, 8_192, None, "local"),
        # Ollama vision families whose names would otherwise fall to a text-only family
        "llama3.2-vision": _m(131_072, 8_192),
    }
)

WITH_IMAGES = frozenset(
    {
        *(k for k in _TABLE if k.startswith(("claude", "gemini", "gpt-5", "gpt-4.1", "gpt-4o"))),
        "gpt-4-turbo",
        "o1",
        "o3",
        "o4-mini",
        "gemma3",
        "llama3.2-vision",
    }
)
"""Table keys whose models take images (Anthropic "Vision", OpenAI and Gemini model pages,
the Ollama library's `vision` tag)."""

TEXT_ONLY = frozenset(
    {
        "gpt-4",
        "gpt-3.5-turbo",
        "o1-mini",
        "o3-mini",
        "gpt-oss",
        "gpt-oss:20b",
        "deepseek-chat",
        "deepseek-reasoner",
        "llama3.3",
        "llama3.2",
        "llama3.1",
        "llama3",
        "qwen3-coder",
        "qwen3",
        "qwen2.5-coder",
        "qwen2.5",
        "mistral-nemo",
        "mistral",
        "gemma3:270m",
        "gemma3:1b",
        "gemma2",
        "phi4",
        "deepseek-r1",
        "smollm2",
        "smollm2-135m-instruct",
        "qwen2.5-coder-0.5b",
    }
)
"""Table keys whose models take text only (the same pages; the embedded models read text)."""

WEB_SEARCH = frozenset(
    {
        "claude-opus-4-5",
        "claude-opus-4-1",
        "claude-opus-4",
        "claude-sonnet-4-5",
        "claude-sonnet-4-20250514",
        "claude-haiku-4-5",
        "claude-3-7-sonnet",
        "claude-3-5-haiku-latest",
        "gpt-5.1",
        "gpt-5",
        "gpt-5-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4o",
        "gpt-4o-mini",
        "o3",
        "o4-mini",
    }
)
"""Table keys whose models have their vendor's server-side web search (Anthropic "Web search
tool", supported models; OpenAI "Web search" guide: not `gpt-4.1-nano`, not `gpt-5` with
`minimal` reasoning, no chat-only model)."""

REASONING = frozenset(
    {
        *(k for k in _TABLE if k.startswith(("claude-opus-4", "claude-sonnet-4", "gemini-2.5"))),
        "claude-haiku-4-5",
        "claude-3-7-sonnet",
        *(k for k in _TABLE if k.startswith(("gpt-5", "gemini-3")) and k != "gpt-5-chat"),
        "o1",
        "o1-mini",
        "o3",
        "o3-mini",
        "o4-mini",
        "gpt-oss",
        "gpt-oss:20b",
        "deepseek-reasoner",
        "deepseek-r1",
        "qwen3",
    }
)
"""Table keys whose models reason and take a reasoning effort (Anthropic "Extended thinking",
supported models; OpenAI reasoning models; Gemini "Thinking": 2.5 and later; the Ollama
library's `thinking` tag)."""

WEB_SEARCH_USD = 0.01
"""USD per web search: Anthropic $10 per 1,000 searches ("Pricing", server tools); OpenAI $10
per 1,000 `web_search` tool calls (openai.com/api/pricing, built-in tools); as of
`PRICES_AS_OF`. The result pages a search adds to the prompt are billed as input tokens."""


def _known(key: str, info: ModelInfo) -> ModelInfo:
    info = replace(info, reasoning=key in REASONING)
    if key in WITH_IMAGES | TEXT_ONLY:
        info = replace(info, image_input=key in WITH_IMAGES)
    if key in WEB_SEARCH:
        price = info.price and replace(info.price, per_search=WEB_SEARCH_USD)
        info = replace(info, web_search=True, price=price)
    return info


KNOWN_MODELS: Mapping[str, ModelInfo] = MappingProxyType(
    {key: _known(key, info) for key, info in _TABLE.items()}
)
"""The bundled table: model name (or family prefix) -> `ModelInfo` (source `table`)."""

ALIASES: Mapping[str, str] = MappingProxyType(
    {"claude-opus-4-0": "claude-opus-4", "claude-sonnet-4-0": "claude-sonnet-4"}
)
"""Other names of one model (after snapshot suffixes are dropped): name -> the table's."""

DEFAULT_LIMITS = ModelLimits(context_window=32_768, max_output_tokens=4_096, source="default")
"""The conservative default for an unknown model: a 32k window, 4k output (source "default").
Small enough that few real models overflow before compacting; a warning names the setting."""

_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def _plain(name: str) -> str:
    plain = _SNAPSHOT.sub("", name)
    return ALIASES.get(plain, plain)


def model_keys(model: str) -> tuple[str, ...]:
    """The names `model` is looked up under, in order (the rule in the module docstring)."""
    name = model.strip().lower()
    bases = [name, name.rsplit("/", 1)[1]] if "/" in name else [name]
    out: list[str] = []
    for base in bases:
        for plain in (base, _SNAPSHOT.sub("", base)):
            for spelled in (plain, plain.replace(".", "-")):
                out.append(ALIASES.get(spelled, spelled))
    return tuple(dict.fromkeys(out))


_INDEX: Mapping[str, str] = MappingProxyType(
    {_plain(key).replace(".", "-"): key for key in KNOWN_MODELS}
    | {_plain(key): key for key in KNOWN_MODELS}
    | {key: key for key in KNOWN_MODELS}
)
"""Normalised name -> table key: a key is found as written, without a snapshot suffix it
carries, and with "." read as "-" (so `gemini-2-5-pro` finds `gemini-2.5-pro`)."""


def _match(model: str) -> tuple[str, bool] | None:
    """(table key, exact) for `model`, or None."""
    keys = model_keys(model)
    for key in keys:
        if key in _INDEX:
            return _INDEX[key], True
    for key in keys:
        best: str | None = None
        for known in _INDEX:
            if (
                len(key) > len(known)
                and key.startswith(known)
                and not key[len(known)].isalnum()
                and (best is None or len(known) > len(best))
            ):
                best = known
        if best is not None:
            return _INDEX[best], False
    return None


def lookup(model: str) -> ModelInfo | None:
    """The table's entry for `model` (exact, else its family by prefix, without `web_search`),
    or None."""
    hit = _match(model)
    if hit is None:
        return None
    info = KNOWN_MODELS[hit[0]]
    return info if hit[1] or not info.web_search else replace(info, web_search=False)


_REASONING_NAME = re.compile(r"^(o\d|gpt-5|gpt-oss)|codex|gemini-(2\.5|[3-9])", re.IGNORECASE)
"""Names of models that reason when the table does not list them (OpenAI's reasoning
families, Gemini 2.5 and later)."""


def reasons(model: str) -> bool:
    """Whether `model` reasons (takes a reasoning effort): the table's entry (exact or its
    family), else its name (`o3-pro`, `gpt-5.2`, `gemini-3-flash`)."""
    info = lookup(model)
    if info is not None:
        return info.reasoning
    return _REASONING_NAME.search(model.rsplit("/", 1)[-1]) is not None


def effort_note(model: str, effort: Effort | None) -> str | None:
    """The one line said when `effort` is set for a model that does not reason (`reasons`),
    else None."""
    if effort is None or reasons(model):
        return None
    return f"effort {effort}: {model} has no reasoning to set; the effort is not sent"


def table_limits(model: str) -> ModelLimits | None:
    """The table's limits for `model` (source `table`), or None."""
    info = lookup(model)
    return info.limits if info is not None else None


def price_for(model: str) -> Price | None:
    """The price of `model`, or None: an exact match after normalisation (a snapshot suffix,
    a provider prefix, dots for dashes, an alias), never a family's price."""
    hit = _match(model)
    return KNOWN_MODELS[hit[0]].price if hit is not None and hit[1] else None


def listed_models(provider: str) -> tuple[str, ...]:
    """The table names `provider` lists when it cannot be asked, sorted."""
    return tuple(sorted(k for k, info in KNOWN_MODELS.items() if provider in info.listed))


@runtime_checkable
class DescribedProvider(Provider, Protocol):
    """A provider that states its model's `ModelInfo` (every built-in provider does)."""

    @property
    def info(self) -> ModelInfo: ...


@runtime_checkable
class WindowAllocator(Protocol):
    """A provider whose server allocates the window per request (`ModelInfo.allocates_window`)."""

    def use_context_window(self, tokens: int) -> None:
        """Allocate `tokens` from now on."""
        ...


def info_of(provider: Provider) -> ModelInfo | None:
    """What `provider` says of its model (`DescribedProvider.info`), else the table's entry for
    its model (a user's provider object that states nothing), else None."""
    # `getattr` before the protocol check: `isinstance` against a runtime-checkable protocol
    # costs ~20 us, and the request path asks twice per request
    info = getattr(provider, "info", None)
    if isinstance(info, ModelInfo):
        return info
    if isinstance(provider, DescribedProvider):
        return provider.info
    return lookup(provider.model)


def catalog_info(model: str, **overrides: bool) -> ModelInfo:
    """The table's entry for `model` with the provider's own capabilities (`supports_prefill`,
    `allocates_window`, `vendor_endpoint`) set; an unknown model gets `DEFAULT_LIMITS`' figures."""
    info = lookup(model) or ModelInfo(
        context_window=DEFAULT_LIMITS.context_window,
        max_output_tokens=DEFAULT_LIMITS.max_output_tokens,
    )
    return replace(info, **overrides)


def settings_hint(model: str) -> str:
    """`SETTINGS_HINT` with `model` in place of the placeholder: the line can be pasted."""
    return SETTINGS_HINT.replace('"<model>"', json.dumps(model, ensure_ascii=False))


def unknown_window_warning(model: str, limits: ModelLimits = DEFAULT_LIMITS) -> str:
    """The warning for a model whose window tether does not know."""
    return (
        f"tether does not know the context window of model {model!r}; assuming "
        f"{limits.context_window:,} tokens with {limits.max_output_tokens:,} output tokens. "
        f"If the model has a larger (or smaller) window, set it in {settings_hint(model)}"
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
        configured: settings.json `context.windows` (see `compaction.windows.
            parse_windows_setting`); matched by exact name, then case-insensitively, then by
            the part after the last "/" (`openai/glm-5.2` finds a `glm-5.2` entry).
        provider_reported: limits the provider reported (Ollama's num_ctx, the local model's
            n_ctx), or None.

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
        return table, None
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
