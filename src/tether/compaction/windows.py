"""Context windows from settings and from errors: the `context.windows` settings shape, and what
an overflow error says the real window is.

Owns: parsing settings.json `context.windows` into `ModelLimits` (source "settings") and parsing
the maximum out of context_overflow error texts.
Does not own: the bundled model table and the resolution order (settings -> provider -> table
-> default), which `tether.providers.catalog` holds: the caller resolves a model's limits there
and injects them (`ContextMonitor(limits, ...)`), so this pure layer never imports a provider
module. Nor reading settings.json (the edges pass the value in).

Pure: no I/O, no clock; inputs are never mutated.

Shapes:
    parse_windows_setting(value) -> dict[str, ModelLimits]     # settings.json context.windows
    parse_overflow_limit(message) -> int | None
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from tether.compaction.pressure import ModelLimits


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
        # tether's Ollama adapter, for a prompt Ollama cut silently (it evaluated what fit its
        # real window): "Ollama evaluated only 16387 of the about 160689 prompt tokens sent"
        r"evaluated only\s*" + _NUM + r"\s*of the about",
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
    with N maximum context length"), TGI ("must be <= N"), tether's Ollama adapter for a prompt
    Ollama cut below `num_ctx` ("evaluated only N of the about M": it evaluated what fit, so N
    is about its real window). Ollama's "the input length exceeds the context length" states
    no number (None). Numbers may carry "," or "_" separators; a
    stated maximum of 0 is not a window (None).
    """
    for pattern in _OVERFLOW_PATTERNS:
        match = pattern.search(message)
        if match is not None:
            digits = match.group(1).replace(",", "").replace("_", "")
            n = int(digits)
            return n if n > 0 else None
    return None
