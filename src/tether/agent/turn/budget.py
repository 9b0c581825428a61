"""The cost cap of a run (`run.max_budget_usd`, `--max-budget-usd`), its subagents included.

Owns: `BudgetPolicy` (the turn policy: the estimate before each request, the charge after
each reply), `Budget` (the cap and what was spent: every request's usage priced by the model that
served it, summaries included; shared with the run's subagents, so their spending counts),
`next_request_usd` (pure: the estimated cost of the next request) and the stop line.
Does not own: prices (one call: `tether.providers.catalog.price_for`), the loop
(`tether.agent.turn.loop` calls the policy's hooks).

The estimate of a request: its prompt (what it sends: the system prompt, the tool schemas and
the wire view's messages, images included, in estimated tokens, `PromptEstimate`; the part the
last request already sent is priced as a cache read when that request read from the cache, the
new part as input — a cache write where the provider charges one) plus an output as long as the
last reply's. The run stops before a request whose estimate would take the spending past the
cap: the cap can be passed only by a reply longer than the one before it. A model without a
known price cannot be held to the cap: `warning` event `budget_unpriced`, once per model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tether.agent.events import WarningEvent
from tether.agent.turn.policy import TurnPolicy
from tether.messages import ContentBlock, RunStopReason, ToolSpec, Turn, Usage
from tether.providers.catalog import Price, price_for
from tether.tokens import message_tokens, text_tokens
from tether.tools.safe_mode import offered_specs

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState


def usd(amount: float) -> str:
    """Dollars for the user: cents, or four decimals under a cent (`$0.0030`, not `$0.00`)."""
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


class PromptEstimate:
    """The estimated prompt of a request, in tokens: the system prompt, the tool schemas (name,
    description, JSON schema) and the messages of its wire view.

    Kept incrementally, so a check before each request costs O(new turns): the fixed part is
    re-counted only when the system prompt or the offered tools change (the registry caches its
    spec tuples), and a view that extends the last one (same first and last-known turn objects)
    adds only its new turns; any other view (after a compaction) is counted afresh."""

    def __init__(self) -> None:
        self._system: str | None = None
        self._specs: Sequence[ToolSpec] | None = None
        self._fixed = 0
        self._view: tuple[Turn, ...] = ()
        self._messages = 0

    def tokens(self, system: str | None, specs: Sequence[ToolSpec], view: tuple[Turn, ...]) -> int:
        """The prompt of a request sending `system`, offering `specs`, carrying `view`."""
        if system is not self._system or specs is not self._specs:
            self._system, self._specs = system, specs
            self._fixed = text_tokens(system or "") + sum(
                text_tokens(f"{s.name}\n{s.description}\n{json.dumps(s.parameters)}")
                for s in specs
            )
        prev, k = self._view, len(self._view)
        if not (k and len(view) >= k and view[0] is prev[0] and view[k - 1] is prev[k - 1]):
            k, self._messages = 0, 0
        self._messages += sum(message_tokens(t) for t in view[k:])
        self._view = view
        return self._fixed + self._messages


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
            f"of {usd(self.cap_usd)} (spent ${self.spent_usd:.4f}, subagents included)"
        )


def unpriced_warning(model: str, cap_usd: float) -> str:
    """The `budget_unpriced` warning's text."""
    return (
        f"no known price for {model}: the budget of {usd(cap_usd)} cannot hold for its "
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


class BudgetPolicy(TurnPolicy):
    """The budget as a turn policy: before each request, stop (`max_budget`, after a `warning`
    event `max_budget` with the stop line) when the request's estimate would pass the cap;
    after each reply, charge it (by the model that served it) and the summaries made since
    the last request (by the chain's first model).

    Args:
        budget: the cap and the spending (shared with the agent's subagents).
    """

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._size = PromptEstimate()
        self._spent = Usage()

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """A main agent's run starts its spending afresh (a subagent's shares its caller's)."""
        if parts.agent_path == ("main",):
            self.budget.reset()
        return content

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """`max_budget` when the next request (what it sends, `PromptEstimate`) would pass
        the cap."""
        self._spent = state.usage  # summaries made from here to the reply are charged too
        prompt = self._size.tokens(
            parts.system_for(parts.provider),
            offered_specs(parts.registry, state.safe_mode),
            parts.shape(parts.view(state.history)),
        )
        last = state.last.usage if state.last is not None else None
        stop = before_request(
            self.budget,
            parts.provider.model,
            prompt,
            last,
            lambda text: parts.emit(WarningEvent(kind="budget_unpriced", message=text)),
        )
        if stop is None:
            return None
        parts.emit(WarningEvent(kind="max_budget", message=stop))
        return "max_budget"

    async def after_reply(self, turn: Turn, parts: RunParts, state: RunState) -> str | None:
        """Charge the reply by its model and the summaries by the chain's."""
        reply = turn.usage or Usage()
        model = turn.provenance.model if turn.provenance else parts.provider.model
        self.budget.charge(reply, model)
        summaries = usage_minus(usage_minus(state.usage, self._spent), reply)
        self.budget.charge(summaries, parts.provider.model)
        return None
