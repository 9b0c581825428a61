"""The retry loop (`with_retries`): attempt counts, the waits the injected sleep receives, and the
Retry-After rule that stops retrying a target (a plain loop over the pure `retry_delay`)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.providers.base import ErrorKind, StreamError
from tether.providers.retry import (
    Delay,
    RetryPolicy,
    backoff_s,
    is_retryable,
    retry_delay,
    with_retries,
)


class Script:
    """An attempt that answers from a list: a `StreamError` is a failed attempt, text a success."""

    def __init__(self, answers: list[StreamError | str]) -> None:
        self.answers = list(answers)
        self.calls = 0

    async def __call__(self) -> StreamError | str:
        self.calls += 1
        return self.answers.pop(0)


def run(
    answers: list[StreamError | str], policy: RetryPolicy, jitter: float = 0.0
) -> tuple[StreamError | str, Script, list[float], list[tuple[int, ErrorKind, Delay]]]:
    script = Script(answers)
    slept: list[float] = []
    retries: list[tuple[int, ErrorKind, Delay]] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    def on_retry(attempt: int, event: StreamError, delay: Delay) -> None:
        retries.append((attempt, event.kind, delay))

    result = asyncio.run(
        with_retries(script, policy, sleep=sleep, rng=lambda: jitter, on_retry=on_retry)
    )
    return result, script, slept, retries


BUSY = StreamError(kind="overloaded", message="busy")


def test_a_success_at_once_is_one_attempt_and_no_wait() -> None:
    result, script, slept, retries = run(["ok"], RetryPolicy())
    assert (result, script.calls, slept, retries) == ("ok", 1, [], [])


def test_the_sleep_receives_the_backoff_of_each_failure() -> None:
    policy = RetryPolicy(max_attempts=4, retry_base_s=2.0, retry_max_s=30.0)
    result, script, slept, retries = run([BUSY, BUSY, BUSY, "ok"], policy, jitter=0.5)
    assert result == "ok" and script.calls == 4
    assert slept == [2.25, 4.25, 8.25]  # base * 2**(k-1) + jitter * base / 4
    assert [(a, k, d.delay_s) for a, k, d in retries] == [
        (1, "overloaded", 2.25),
        (2, "overloaded", 4.25),
        (3, "overloaded", 8.25),
    ]


def test_the_attempts_are_capped_and_the_last_fault_is_returned() -> None:
    policy = RetryPolicy(max_attempts=3, retry_base_s=1.0, retry_max_s=5.0)
    last = StreamError(kind="network", message="third")
    result, script, slept, _ = run([BUSY, BUSY, last, "never"], policy)
    assert result is last and script.calls == 3 and slept == [1.0, 2.0]


def test_max_attempts_1_never_retries() -> None:
    result, script, slept, _ = run([BUSY, "never"], RetryPolicy(max_attempts=1))
    assert result is BUSY and script.calls == 1 and slept == []


def test_a_fault_that_time_does_not_heal_is_not_retried() -> None:
    auth = StreamError(kind="auth", message="bad key", status_code=401)
    result, script, slept, retries = run([auth, "never"], RetryPolicy(max_attempts=5))
    assert result is auth and script.calls == 1 and slept == [] and retries == []


def test_retry_after_is_the_minimum_wait() -> None:
    policy = RetryPolicy(max_attempts=3, retry_base_s=1.0, retry_max_s=30.0)
    limited = StreamError(kind="rate_limited", message="slow down", retry_after_s=7.0)
    _, script, slept, retries = run([limited, "ok"], policy)
    assert script.calls == 2 and slept == [7.0]
    assert retries[0][2] == Delay(delay_s=7.0, from_retry_after=True)


def test_retry_after_beyond_the_cap_stops_at_once() -> None:
    policy = RetryPolicy(max_attempts=5, retry_base_s=1.0, retry_max_s=30.0)
    limited = StreamError(kind="rate_limited", message="come back", retry_after_s=60.0)
    result, script, slept, retries = run([BUSY, limited, "never"], policy)
    assert result is limited and script.calls == 2 and slept == [1.0] and len(retries) == 1


def test_the_jitter_is_drawn_once_per_retryable_failure() -> None:
    draws: list[float] = []

    def rng() -> float:
        draws.append(0.0)
        return 0.0

    auth = StreamError(kind="auth", message="no")
    answers: list[StreamError | str] = [BUSY, BUSY, auth]

    async def attempt() -> StreamError | str:
        return answers.pop(0)

    async def sleep(_s: float) -> None:
        return None

    result = asyncio.run(with_retries(attempt, RetryPolicy(max_attempts=5), sleep=sleep, rng=rng))
    assert result is auth and len(draws) == 2


KINDS: list[ErrorKind] = ["rate_limited", "overloaded", "network", "auth", "provider", "malformed"]


def fault(kind: ErrorKind, status: int | None, after: float | None) -> StreamError:
    return StreamError(kind=kind, message="x", status_code=status, retry_after_s=after)


faults = st.builds(
    fault,
    st.sampled_from(KINDS),
    st.sampled_from([None, 400, 500, 503]),
    st.one_of(st.none(), st.floats(0, 100)),
)


@given(
    answers=st.lists(faults, max_size=8),
    attempts=st.integers(1, 6),
    base=st.floats(0, 5),
    jitter=st.floats(0, 0.999),
)
def test_the_loop_waits_exactly_what_retry_delay_says(
    answers: list[StreamError], attempts: int, base: float, jitter: float
) -> None:
    policy = RetryPolicy(max_attempts=attempts, retry_base_s=base, retry_max_s=base * 4)
    result, script, slept, retries = run([*answers, "ok"], policy, jitter)
    assert 1 <= script.calls <= attempts
    expected: list[float] = []
    for k, fault in enumerate(answers[: script.calls - 1], start=1):
        delay = retry_delay(policy, k, fault, jitter)
        assert delay is not None
        expected.append(delay.delay_s)
    assert slept == expected == [d.delay_s for _, _, d in retries]
    assert [a for a, _, _ in retries] == list(range(1, script.calls))
    if isinstance(result, StreamError):  # stopped: the rule said no to this fault
        assert retry_delay(policy, script.calls, result, jitter) is None
    else:
        assert result == "ok" and script.calls == len(answers) + 1
    assert all(w <= max(policy.retry_max_s, 100) for w in slept)


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(max_attempts=10, retry_base_s=2.0, retry_max_s=10.0)
    assert backoff_s(policy, 8, 0.9) == 10.0
    assert is_retryable(BUSY)


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408])
def test_transient_provider_statuses_are_retried(status: int) -> None:
    fault = StreamError(kind="provider", message="x", status_code=status)
    _, script, slept, _ = run([fault, "ok"], RetryPolicy(retry_base_s=1.0))
    assert script.calls == 2 and slept == [1.0]
