"""Retry policy for provider faults: which faults time heals, and how long to wait.

Owns: `RetryPolicy` (the knobs), `is_retryable` (the rule), `retry_delay` (pure: the wait before
the next attempt, Retry-After honoured) and `with_retries` (the loop: a plain `while` over
`retry_delay`, with the sleep and the random source injected).
Does not own: what one attempt does, discarding partial turns or falling back to the next
provider (`tether.agent.turn.attempts`), nor classifying faults (`tether.providers.errors`).

Faults are values (`StreamError`), so the loop is a loop: an attempt returns its result or its
fault, and `retry_delay` alone decides whether and how long to wait.

Rules:
    retried       rate_limited (not a depleted quota: that is `auth`), overloaded, network, and
                  `provider` faults that are transient server-side: HTTP 408, 500, 502, 503, 504,
                  or an in-stream error body of type `api_error` / `timeout_error` (Anthropic's
                  5xx types, also sent after HTTP 200, case T28)
    not retried   auth (credentials, permission, quota, billing), context_overflow (compaction's
                  job), malformed, cancelled, any other `provider` status (400, 404, 501, ...)
    delay         attempt k (k = 1 after the first failure) waits
                  min(retry_max_s, retry_base_s * 2**(k-1) + jitter), jitter uniform in
                  [0, retry_base_s / 4); a server's Retry-After (`StreamError.retry_after_s`) is the
                  minimum wait. A Retry-After beyond `retry_max_s` stops retrying this target at
                  once (waiting less would land inside the server's cooldown, case T29; the
                  error says when to retry).
"""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from tether.durations import parse_duration
from tether.errors import ConfigError
from tether.providers.base import StreamError

_T = TypeVar("_T")

RETRYABLE_STATUS = frozenset({408, 500, 502, 503, 504})
"""`provider` statuses worth retrying: request timeout and the transient 5xx (not 501)."""

RETRYABLE_CODES = frozenset({"api_error", "timeout_error", "server_error"})
"""Exact error types of transient server faults (Anthropic `api_error` ≈ 500 and
`timeout_error` ≈ 504; OpenAI `server_error`), also when they arrive in a 200 stream."""

ENV_BASE = "TETHER_RETRY_BASE"
ENV_MAX = "TETHER_RETRY_MAX"
ENV_ATTEMPTS = "TETHER_RETRY_ATTEMPTS"


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently one target is retried.

    Attributes:
        max_attempts: attempts per target, the first included (1 = never retry).
        retry_base_s: the first backoff, in seconds; doubles per attempt.
        retry_max_s: the longest single wait, in seconds; a Retry-After beyond it ends the
            retries on that target.
        fallback_cooldown_s: how long a target that failed over is skipped by later requests
            (`tether.agent.turn.attempts`), in seconds; a longer Retry-After wins; 0: never
            skipped.

    Raises:
        ConfigError: max_attempts < 1, a negative duration, or retry_max_s < retry_base_s.
    """

    max_attempts: int = 3
    retry_base_s: float = 2.0
    retry_max_s: float = 30.0
    fallback_cooldown_s: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.retry_base_s < 0 or self.retry_max_s < 0 or self.fallback_cooldown_s < 0:
            raise ConfigError("retry durations must be non-negative")
        if self.retry_max_s < self.retry_base_s:
            raise ConfigError(
                f"retry_max ({self.retry_max_s} s) is below retry_base ({self.retry_base_s} s)"
            )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, base: RetryPolicy | None = None
    ) -> RetryPolicy:
        """`base` (default: the defaults) with `TETHER_RETRY_BASE`, `TETHER_RETRY_MAX`
        (durations: "10ms", "2s", or a number of ms) and `TETHER_RETRY_ATTEMPTS` applied.

        Raises:
            ConfigError: a value that does not parse.
        """
        env = os.environ if environ is None else environ
        policy = base or cls()
        base_s, max_s, attempts = policy.retry_base_s, policy.retry_max_s, policy.max_attempts
        try:
            if env.get(ENV_BASE):
                base_s = parse_duration(env[ENV_BASE])
            if env.get(ENV_MAX):
                max_s = parse_duration(env[ENV_MAX])
            if env.get(ENV_ATTEMPTS):
                attempts = int(env[ENV_ATTEMPTS])
        except ValueError as exc:
            raise ConfigError(f"bad retry setting in the environment: {exc}") from None
        return cls(
            max_attempts=attempts,
            retry_base_s=base_s,
            retry_max_s=max(max_s, base_s),
            fallback_cooldown_s=policy.fallback_cooldown_s,
        )


def is_retryable(event: StreamError) -> bool:
    """Whether time may heal this fault (the rules in the module docstring)."""
    if event.kind in ("rate_limited", "overloaded", "network"):
        return True
    if event.kind == "provider":
        return event.status_code in RETRYABLE_STATUS or event.code in RETRYABLE_CODES
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class Delay:
    """The wait before the next attempt.

    Attributes:
        delay_s: seconds to wait.
        from_retry_after: True when the server's Retry-After set it (it exceeded the backoff).
    """

    delay_s: float
    from_retry_after: bool


def backoff_s(policy: RetryPolicy, failures: int, jitter: float) -> float:
    """The backoff after `failures` failed attempts (>= 1), in seconds.

    Args:
        policy: the knobs.
        failures: failed attempts so far on this target.
        jitter: a draw from [0, 1); scaled to [0, retry_base_s / 4).

    Returns:
        min(retry_max_s, retry_base_s * 2**(failures-1) + jitter * retry_base_s / 4).
    """
    exponent = min(max(failures, 1) - 1, 64)  # 2**64 * base is past any cap
    exp = min(policy.retry_max_s, policy.retry_base_s * 2.0**exponent)
    return min(policy.retry_max_s, exp + jitter * policy.retry_base_s / 4)


def retry_delay(
    policy: RetryPolicy, failures: int, event: StreamError, jitter: float
) -> Delay | None:
    """The wait before retrying after `event`, or None when the target should not be retried.

    Args:
        policy: the knobs.
        failures: failed attempts so far on this target (>= 1).
        event: the last failure.
        jitter: a draw from [0, 1).

    Returns:
        None when the fault is not retryable, the attempts are used up, or the server's
        Retry-After exceeds `retry_max_s`; else the `Delay`.
    """
    if not is_retryable(event) or failures >= policy.max_attempts:
        return None
    wait = backoff_s(policy, failures, jitter)
    after = event.retry_after_s
    if after is None:
        return Delay(delay_s=wait, from_retry_after=False)
    if after > policy.retry_max_s:
        return None
    if after >= wait:
        return Delay(delay_s=after, from_retry_after=True)
    return Delay(delay_s=wait, from_retry_after=False)


async def with_retries(
    attempt: Callable[[], Awaitable[_T | StreamError]],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[None]],
    rng: Callable[[], float] = random.random,
    on_retry: Callable[[int, StreamError, Delay], None] | None = None,
) -> _T | StreamError:
    """Run `attempt` until it succeeds or `retry_delay` says stop: the retry loop of one target.

    Args:
        attempt: one try; returns its result, or the fault as a `StreamError` value.
        policy: the knobs (`max_attempts` counts the first try).
        sleep: the async sleep, in seconds (tests inject a recorder; the agent uses
            `asyncio.sleep`).
        rng: the jitter source, floats in [0, 1); drawn once per retryable failure.
        on_retry: called before each wait with (failed attempt number from 1, its fault, the
            delay).

    Returns:
        The first successful result, or the last fault: not retryable, the attempts used up,
        or a Retry-After beyond `retry_max_s`.
    """
    failures = 0
    while True:
        result = await attempt()
        if not isinstance(result, StreamError):
            return result
        failures += 1
        if not is_retryable(result):
            return result
        delay = retry_delay(policy, failures, result, rng())
        if delay is None:
            return result
        if on_retry is not None:
            on_retry(failures, result, delay)
        await sleep(delay.delay_s)
