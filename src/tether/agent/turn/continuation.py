"""Run limits: resuming a reply cut by the output-token limit, and thinking-budget decay.

Owns: `Continuations` (when to send "Please continue." after a `max_tokens` stop; the turn
policy that sends it is `tether.agent.turn.continuation_policy`, and the one answer
assembled from the pieces) and `thinking_budget_for_turn` (pure: a turn number → the
reasoning budget in tokens). Does not own: sending requests or persisting turns (the loop).

Continuation rule: a reply that stopped on `max_tokens` with no tool calls is resumed with a user
turn "Please continue." up to `max_continuations` times per answer; the answer is the
concatenation of the pieces' text. A reply with tool calls starts a new answer. When
`MAX_EMPTY` consecutive `max_tokens` replies bring no text and no tool calls (e.g. the budget
went to reasoning), the run stops with `LengthResumeExhausted` instead of spinning. (A cut tool
call is not resumed: the assembler marks it invalid and it never runs, case T30.)

Thinking-budget decay: the first requests of a run get the full reasoning budget, later ones
less. `StepDecay` changes the budget once (one prompt-cache break: a changed thinking budget
invalidates Anthropic's cached messages); `GeometricDecay` multiplies it by `factor` per turn
down to a floor (a cache break per turn until the floor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tether.errors import ConfigError, LengthResumeExhausted
from tether.messages import Turn

CONTINUE_PROMPT = "Please continue."
MAX_EMPTY = 2
"""Consecutive empty `max_tokens` replies after which `LengthResumeExhausted` is raised."""


@dataclass(slots=True)
class Continuations:
    """Tracks one run's continuation state.

    Args:
        max_continuations: "Please continue." requests allowed per answer (0 disables).
    """

    max_continuations: int = 3
    used: int = 0
    empty: int = 0
    parts: list[str] = field(default_factory=lambda: [])

    def after_turn(self, turn: Turn) -> bool:
        """Record an assistant turn; True when the loop should send `CONTINUE_PROMPT`.

        Raises:
            LengthResumeExhausted: `MAX_EMPTY` consecutive `max_tokens` replies had no text
                and no tool calls.
        """
        if turn.tool_calls:
            self.used, self.empty, self.parts = 0, 0, []
            return False
        self.parts.append(turn.text)
        if turn.stop_reason != "max_tokens":
            return False
        self.empty = 0 if turn.text else self.empty + 1
        if self.empty >= MAX_EMPTY:
            raise LengthResumeExhausted(
                f"the reply hit the output-token limit and {self.empty} replies in a row brought "
                "no text and no tool calls; raise the output limit or lower the thinking budget",
                continuations=self.used,
            )
        if self.used >= self.max_continuations:
            return False
        self.used += 1
        return True

    @property
    def answer(self) -> str:
        """The current answer: every piece's text, concatenated."""
        return "".join(self.parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepDecay:
    """`full_tokens` for turns 1..`after_turn`, then `floor_tokens`.

    Raises:
        ConfigError: negative tokens, floor above full, after_turn < 1.
    """

    full_tokens: int
    floor_tokens: int
    after_turn: int

    def __post_init__(self) -> None:
        _check(self.full_tokens, self.floor_tokens)
        if self.after_turn < 1:
            raise ConfigError(f"after_turn must be >= 1, got {self.after_turn}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GeometricDecay:
    """`full_tokens` for turns 1..`after_turn`, then `full_tokens * factor**(n - after_turn)`
    for turn n, rounded down, never below `floor_tokens`.

    Raises:
        ConfigError: negative tokens, floor above full, factor outside (0, 1].
    """

    full_tokens: int
    factor: float
    floor_tokens: int
    after_turn: int = 1

    def __post_init__(self) -> None:
        _check(self.full_tokens, self.floor_tokens)
        if self.after_turn < 1:
            raise ConfigError(f"after_turn must be at least 1, got {self.after_turn}")
        if not (0 < self.factor <= 1):
            raise ConfigError(f"factor must be in (0, 1], got {self.factor}")


ThinkingDecay = StepDecay | GeometricDecay


def _check(full: int, floor: int) -> None:
    if full < 0 or floor < 0:
        raise ConfigError("thinking budgets must be non-negative token counts")
    if floor > full:
        raise ConfigError(f"floor_tokens ({floor}) is above full_tokens ({full})")


def thinking_budget_for_turn(policy: ThinkingDecay | None, n: int) -> int | None:
    """The reasoning budget for the n-th request of a run, in tokens.

    Args:
        policy: the decay, or None (no budget set: the provider's own setting applies).
        n: the request number within the run, from 1.

    Returns:
        None when `policy` is None; else a budget between the floor and the full budget,
        non-increasing in n. Providers with a minimum (Anthropic: 1024 tokens) need a floor
        at least that.
    """
    if policy is None:
        return None
    n = max(n, 1)
    if isinstance(policy, StepDecay):
        return policy.full_tokens if n <= policy.after_turn else policy.floor_tokens
    exponent = max(0, n - policy.after_turn)
    if policy.factor < 1 and exponent * math.log(policy.factor) < -700:  # underflow guard
        return policy.floor_tokens
    return max(policy.floor_tokens, math.floor(policy.full_tokens * policy.factor**exponent))
