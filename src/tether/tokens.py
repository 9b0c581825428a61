"""Token estimates and a model's limits, on the bottom floor (pure: imports only
`tether.messages`).

Owns: `CHARS_PER_TOKEN` (the estimate heuristic), `IMAGE_TOKENS` / `DOCUMENT_TOKENS`,
`text_tokens`, `message_tokens`, `estimate_tokens`, `Tokenizer`, and `ModelLimits` (a model's
window and output cap, with where they came from).
Does not own: the pressure rules built on them (`tether.compaction.pressure`), the model table
(`tether.providers.catalog`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from tether.messages import (
    CompactSummaryBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)

LimitsSource = Literal["settings", "provider", "table", "learned", "default"]
"""Where a ModelLimits came from: settings.json, the provider's metadata, the bundled table, an
overflow error that stated the real maximum, or the conservative default."""

Tokenizer = Callable[[str], int]
"""An exact token counter for one text (e.g. a local model's tokenizer), in tokens."""

CHARS_PER_TOKEN = 4
"""The estimate heuristic: one token per 4 characters, rounded up per message. English text and
code average 3.5 to 4.5 characters per token on current BPE tokenizers; the calibration offset
(measured - estimated) corrects the systematic part once a provider usage arrives."""

IMAGE_TOKENS = 1_600
"""Fixed estimate for one image, in tokens (Anthropic prices an image at about
width x height / 750 tokens, capped near 1,600 for the 1.15 megapixel limit it resizes to)."""

DOCUMENT_TOKENS = 3_000
"""Fixed estimate for one document block (e.g. a PDF), in tokens; the measured usage of the
first request that carries it replaces the guess."""

@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLimits:
    """A model's context limits, in tokens.

    Attributes:
        context_window: the raw window (prompt + output) in tokens. Values below 1 are read as 1
            by every function here; no exception is raised.
        max_output_tokens: the most output one reply can take, in tokens (the provider's
            documented maximum; for local models a practical cap). Values below 0 read as 0.
        source: where the figures came from (see `LimitsSource`).
    """

    context_window: int
    max_output_tokens: int
    source: LimitsSource = "table"


_ARGUMENTS_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps(arguments, ensure_ascii=False, default=str)`'s encoder, built once (`json.dumps`
with options builds one per call: one a tool call)."""


def _json_chars(call: ToolCallBlock) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return _ARGUMENTS_JSON.encode(call.arguments)


def _block_parts(block: ContentBlock) -> tuple[list[str], int]:
    """(texts the model reads, fixed token cost) of one block."""
    if isinstance(block, TextBlock):
        return [block.text], 0
    if isinstance(block, ThinkingBlock):
        return [block.text, *block.summary], 0
    if isinstance(block, ToolCallBlock):
        return [block.name, _json_chars(block)], 0
    if isinstance(block, ToolResultBlock):
        texts = [p.text for p in block.content if isinstance(p, TextBlock)]
        images = sum(1 for p in block.content if isinstance(p, ImageBlock))
        return texts, images * IMAGE_TOKENS
    if isinstance(block, CompactSummaryBlock):
        return [block.summary], 0
    if isinstance(block, ServerToolBlock):
        # The provider's blocks as sent back (the result pages' encrypted content is what
        # they cost in the prompt); the text form when there are none.
        return [json.dumps(block.raw, ensure_ascii=False) if block.raw else block.summary], 0
    if isinstance(block, ImageBlock):
        return [], IMAGE_TOKENS
    if isinstance(block, DocumentBlock):
        return [], DOCUMENT_TOKENS
    return [], 0  # redacted_thinking: an opaque payload; the measured usage covers it


def text_tokens(text: str, *, tokenizer: Tokenizer | None = None) -> int:
    """Estimated tokens of one text (e.g. the system prompt, or the tools' JSON schemas for
    `ContextMonitor(system_tokens=...)`): ceil(chars / 4), or `tokenizer(text)`."""
    if tokenizer is not None:
        return max(0, tokenizer(text))
    return -(-len(text) // CHARS_PER_TOKEN)


def message_tokens(turn: Turn, *, tokenizer: Tokenizer | None = None) -> int:
    """Estimated tokens of one message.

    Counted: text, thinking text (and reasoning summaries), tool-call name + arguments JSON,
    tool_result text, compact-summary text; ceil(chars / 4) over the message, or
    `tokenizer(text)` over its texts joined by newlines when one is given. Images cost
    `IMAGE_TOKENS` and documents `DOCUMENT_TOKENS` each. Not counted: signatures, redacted or
    encrypted reasoning payloads, per-message framing (the calibration offset absorbs them).
    """
    texts: list[str] = []
    fixed = 0
    for block in turn.content:
        parts, cost = _block_parts(block)
        texts.extend(parts)
        fixed += cost
    if tokenizer is not None:
        return fixed + max(0, tokenizer("\n".join(texts)))
    chars = sum(len(t) for t in texts)
    return fixed + -(-chars // CHARS_PER_TOKEN)


def estimate_tokens(turns: Iterable[Turn], *, tokenizer: Tokenizer | None = None) -> int:
    """Estimated tokens of a message list: the sum of `message_tokens` (so additive over
    concatenation: estimate(a + b) == estimate(a) + estimate(b))."""
    return sum(message_tokens(t, tokenizer=tokenizer) for t in turns)
