"""The cost cap of a run (`run.max_budget_usd`, `--max-budget-usd`), its subagents included.

Owns: `Budget` (the cap and what was spent: every request's usage priced by the model that
served it, summaries included; shared with the run's subagents, so their spending counts),
`next_request_usd` (pure: the estimated cost of the next request) and the stop line.
Does not own: prices (one call: `tether.providers.catalog.price_for`), the loop's stop
(`tether.agent.loop` asks `Budget.refuses` before each request).

The estimate of a request: its prompt (the wire view's estimated tokens; the part the last
request already sent is priced as a cache read when that request read from the cache, the new
part as input — a cache write where the provider charges one) plus an output as long as the
last reply's. The run stops before a request whose estimate would take the spending past the
cap: the cap can be passed only by a reply longer than the one before it. A model without a
known price cannot be held to the cap: `warning` event `budget_unpriced`, once per model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tether.messages import Usage
from tether.providers.catalog import Price, price_for


def _usd(usage: Usage, price: Price) -> float:
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000


def next_request_usd(price: Price, prompt_tokens: int, last: Usage | None) -> float:
    """The estimated cost of a request whose prompt is `prompt_tokens` long, after a request
    whose usage was `last` (None: the first request of the run)."""
    if last is None:
        return prompt_tokens * price.input / 1_000_000
    sent_before = last.prompt_tokens if last.cache_read_tokens or last.cache_write_tokens else 0
    cached = min(sent_before, prompt_tokens)
    new = prompt_tokens - cached
    new_price = price.cache_write if last.cache_write_tokens else price.input
    return (cached * price.cache_read + new * new_price + last.output_tokens * price.output) / 1e6


@dataclass(slots=True)
class Budget:
    """The cap of one run and what it spent (module docstring).

    Attributes:
        cap_usd: the cap, US dollars.
        spent_usd: spent so far in this run (subagents included), US dollars.
        unpriced: models seen without a known price.
    """

    cap_usd: float
    spent_usd: float = 0.0
    unpriced: set[str] = field(default_factory=lambda: set[str]())
    _model: str = ""

    def reset(self) -> None:
        """A new run starts (the main agent's; a subagent's run shares its caller's)."""
        self.spent_usd = 0.0

    def use_model(self, model: str) -> bool:
        """The model the next usage is billed to; False when it has no price (first time)."""
        self._model = model
        if price_for(model) is None and model not in self.unpriced:
            self.unpriced.add(model)
            return False
        return True

    def charge(self, usage: Usage | None, model: str | None = None) -> None:
        """Add a request's usage, priced by `model` (default: the last `use_model`)."""
        if usage is None:
            return
        price = price_for(model or self._model)
        if price is not None:
            self.spent_usd += _usd(usage, price)

    def refuses(self, model: str, prompt_tokens: int, last: Usage | None) -> float | None:
        """The estimated cost of the next request when it would take the spending past the
        cap (the run must stop), else None."""
        price = price_for(model)
        if price is None:
            return None
        estimate = next_request_usd(price, prompt_tokens, last)
        return estimate if self.spent_usd + estimate > self.cap_usd else None

    def stop_line(self, estimate: float) -> str:
        """One line for the user: why the run stopped."""
        return (
            f"stopped before a request estimated at ${estimate:.4f}: it would pass the budget "
            f"of ${self.cap_usd:.2f} (spent ${self.spent_usd:.4f}, subagents included)"
        )


def unpriced_warning(model: str, cap_usd: float) -> str:
    """The `budget_unpriced` warning's text."""
    return (
        f"no known price for {model}: the budget of ${cap_usd:.2f} cannot hold for its "
        "requests (they are not counted)"
    )


def before_request(
    budget: Budget, model: str, prompt_tokens: int, last: Usage | None, warn: Callable[[str], None]
) -> str | None:
    """The loop's check before a request on `model`: `warn` gets the `budget_unpriced` text
    the first time a model has no price; returns the stop line when the request would pass
    the cap, else None."""
    if not budget.use_model(model):
        warn(unpriced_warning(model, budget.cap_usd))
    estimate = budget.refuses(model, prompt_tokens, last)
    return None if estimate is None else budget.stop_line(estimate)


def usage_minus(a: Usage, b: Usage) -> Usage:
    """`a - b` field by field, never below 0 (the usage added between two readings)."""
    return Usage(
        input_tokens=max(0, a.input_tokens - b.input_tokens),
        output_tokens=max(0, a.output_tokens - b.output_tokens),
        cache_read_tokens=max(0, a.cache_read_tokens - b.cache_read_tokens),
        cache_write_tokens=max(0, a.cache_write_tokens - b.cache_write_tokens),
        web_search_requests=max(0, a.web_search_requests - b.web_search_requests),
    )
