"""STAND-IN for the `pressure` branch (the integrator takes that branch's file over this one).

Stateful pressure tracking across requests: measured usage, estimates, hysteresis, runaway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tether.compaction.pressure import (
    CompactionPolicy,
    ModelLimits,
    Pressure,
    effective_window,
    estimate_tokens,
    occupied_tokens,
    trigger_reached,
)
from tether.compaction.windows import parse_overflow_limit
from tether.messages import Turn, Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    pressure: Pressure
    compact: bool
    runaway: str | None = None
    no_progress: bool = False


class ContextMonitor:
    """Tracks pressure; `check` before every request."""

    def __init__(
        self,
        limits: ModelLimits,
        policy: CompactionPolicy | None = None,
        *,
        system_tokens: int = 0,
    ) -> None:
        self.limits = limits
        self.policy = policy or CompactionPolicy()
        self.system_tokens = system_tokens
        self.generation = 0
        self._measured: tuple[int, int, str] | None = None  # (view_len, tokens, assistant id)
        self._baseline: int | None = None
        self._fails = 0
        self._last_tokens: int | None = None
        self.pressure: Pressure | None = None

    def observe(
        self, *, view_len: int, usage: Usage, assistant_turn_id: str, generation: int
    ) -> None:
        if generation != self.generation:
            return
        self._measured = (view_len, occupied_tokens(usage), assistant_turn_id)

    def _pressure(self, turns: Sequence[Turn]) -> Pressure:
        eff = effective_window(self.limits, self.policy)
        if self._measured is not None and self._measured[0] <= len(turns):
            n, tokens, aid = self._measured
            tokens += estimate_tokens([t for t in turns[n:] if t.id != aid])
            src = "measured"
        else:
            tokens = estimate_tokens(turns) + self.system_tokens
            src = "estimated"
        return Pressure(
            tokens=tokens,
            effective_window=eff,
            ratio=tokens / eff,
            headroom=eff - tokens,
            source=src,  # type: ignore[arg-type]
            is_approximate=src == "estimated",
        )

    def check(self, turns: Sequence[Turn]) -> Decision:
        p = self._pressure(turns)
        self.pressure = p
        compact = trigger_reached(p, self.limits, self.policy)
        if compact and self._baseline is not None:
            compact = p.tokens >= self._baseline + self.policy.hysteresis * p.effective_window
        runaway = None
        if not compact and p.tokens > self.policy.runaway_total * self.limits.context_window:
            runaway = f"context usage {p.tokens} tokens is above {self.policy.runaway_total:.0%} of the window"
        self._last_tokens = p.tokens
        return Decision(pressure=p, compact=compact, runaway=runaway, no_progress=self._fails >= 3)

    def compacted(self, turns_after: Sequence[Turn]) -> None:
        self.generation += 1
        self._measured = None
        p = self._pressure(turns_after)
        self.pressure = p
        self._baseline = p.tokens
        self._fails = self._fails + 1 if trigger_reached(p, self.limits, self.policy) else 0

    def overflow(self, message: str) -> int | None:
        learned = parse_overflow_limit(message)
        if learned is not None and learned < self.limits.context_window:
            self.limits = replace(self.limits, context_window=learned, source="overflow")
        self._measured = None
        return learned
