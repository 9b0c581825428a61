"""Token prices: a small bundled table, and the cost of a run or a session in US dollars.

Owns: `PRICES` (USD per million tokens, by model name), `price_for`, `cost_usd`, and the usage /
cost of a list of stored turns (`turns_usage`, `turns_cost_usd`). Pure: no I/O, no network.
Does not own: usage normalization (the adapters: `tether.messages.Usage` keeps input, cache read
and cache write apart, which is what pricing needs, case T19).

Source: the vendors' pricing pages as of `PRICES_AS_OF` (docs.anthropic.com "Pricing",
openai.com/api/pricing, ai.google.dev/gemini-api/docs/pricing). Base tier only: Anthropic's
5-minute cache-write price; long-context surcharges (Claude Sonnet past 200k prompt tokens,
Gemini 2.5 Pro past 200k) are not applied. OpenAI and Gemini bill no cache write, so their
cache-write price is the input price. A model not in the table has no price: no cost is shown
rather than a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tether.messages import Turn, Usage

PRICES_AS_OF = "2025-11"


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def _p(input: float, output: float, cache_read: float, cache_write: float | None = None) -> Price:
    return Price(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=input if cache_write is None else cache_write,
    )


PRICES: dict[str, Price] = {
    # Anthropic: input, output, cache read (0.1x), cache write 5 min (1.25x)
    "claude-opus-4-5": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": _p(15.0, 75.0, 1.50, 18.75),
    "claude-opus-4-0": _p(15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4-5": _p(3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4-0": _p(3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": _p(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.0, 0.08, 1.0),
    # OpenAI: input, output, cached input
    "gpt-5": _p(1.25, 10.0, 0.125),
    "gpt-5-mini": _p(0.25, 2.0, 0.025),
    "gpt-4.1": _p(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "gpt-4o": _p(2.50, 10.0, 1.25),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075),
    # Google Gemini (prompts up to 200k tokens): input, output, cached input
    "gemini-2.5-pro": _p(1.25, 10.0, 0.125),
    "gemini-2.5-flash": _p(0.30, 2.50, 0.03),
}

_ALIASES = {"claude-opus-4": "claude-opus-4-0", "claude-sonnet-4": "claude-sonnet-4-0"}
_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def price_for(model: str) -> Price | None:
    """The price of `model`, or None when unknown.

    A model matches its table name exactly, or as that name plus a snapshot suffix
    (`-20250929`, `-2024-08-06`, `-latest`); a provider prefix (`anthropic/`) is ignored.
    Nothing else matches: `gpt-5-nano` is not priced as `gpt-5`.
    """
    name = model.rsplit("/", 1)[-1].strip().lower()
    name = _SNAPSHOT.sub("", name)
    name = _ALIASES.get(name, name)
    return PRICES.get(name)


def cost_usd(usage: Usage, model: str) -> float | None:
    """The cost of `usage` on `model` in US dollars, or None when the model has no price.

    Each field is priced separately (input, output, cache read, cache write; case T19).
    """
    price = price_for(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000


def turns_usage(turns: Iterable[Turn]) -> Usage:
    """The summed usage of the turns (a session's: each assistant turn stores its request's)."""
    total = Usage()
    for turn in turns:
        if turn.usage is not None:
            total = total + turn.usage
    return total


def turns_cost_usd(turns: Iterable[Turn]) -> float | None:
    """The summed cost of the turns' usage, each priced by its own model (provenance); None
    when any turn with usage has no known price (a partial sum would mislead), or when no turn
    has usage (nothing was priced, so "$0" would mislead too)."""
    total: float | None = None
    for turn in turns:
        if turn.usage is None:
            continue
        cost = cost_usd(turn.usage, turn.provenance.model) if turn.provenance else None
        if cost is None:
            return None
        total = (total or 0.0) + cost
    return total


def usage_line(usage: Usage, cost: float | None = None) -> str:
    """`in 52413 (cache 50000) / 4075 out`, plus ` · $0.1234` when the cost is known."""
    line = usage.summary_line()
    return f"{line} · ${cost:.4f}" if cost is not None else line
