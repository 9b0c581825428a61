"""The cost of a run or a session in US dollars.

Owns: `cost_usd`, and the usage / cost of a list of stored turns (`turns_usage`,
`turns_cost_usd`), which replies reported usage at all (`reported`), and the usage line the
hosts print (`turns_usage_line`: "not reported" when no reply carried any, never a measured-
looking `in 0 / 0 out`). Pure: no I/O, no network.
Does not own: the prices (`tether.providers.catalog`: `ModelInfo.price`, `price_for`, their
source and date), nor usage normalization (the adapters: `tether.messages.Usage` keeps input,
cache read and cache write apart, which is what pricing needs, case T19).
"""

from __future__ import annotations

from collections.abc import Iterable

from tether.messages import Turn, Usage
from tether.providers.catalog import price_for


def cost_usd(usage: Usage, model: str) -> float | None:
    """The cost of `usage` on `model` in US dollars, or None when the model has no price.

    Each field is priced separately (input, output, cache read, cache write; case T19), and
    each server-side web search at `Price.per_search`.
    """
    price = price_for(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000 + usage.web_search_requests * price.per_search


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
    """`in 52413 (cache 50000, 95 % hit) / 4075 out`, plus ` · $0.1234` when the cost is known."""
    line = usage.summary_line()
    return f"{line} · ${cost:.4f}" if cost is not None else line


NOT_REPORTED = "not reported by the provider"
"""The usage line of replies none of which carried usage."""


def reported(usage: Usage | None) -> bool:
    """Whether a reply's usage is a report: present and counting something (a request always
    has prompt tokens; llama-cpp-python's server sends no usage in its stream at all, and a
    server that counts nothing sends zeros)."""
    return usage is not None and (usage.prompt_tokens > 0 or usage.output_tokens > 0)


def turns_usage_line(turns: Iterable[Turn]) -> str:
    """The usage line of stored turns: `usage_line` of what their replies reported, with the
    cost; `not reported by the provider` when no reply reported any, and `(N of M replies
    reported no usage)` after the figures when only some did."""
    replies = [t for t in turns if t.role == "assistant"]
    missing = sum(1 for t in replies if not reported(t.usage))
    if replies and missing == len(replies):
        return NOT_REPORTED
    line = usage_line(turns_usage(replies), turns_cost_usd(replies))
    if missing:
        line += f" ({missing} of {len(replies)} replies reported no usage)"
    return line
