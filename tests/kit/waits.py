"""Waiting for something to happen: poll a condition until it holds, with a deadline.

Never sleep to let time pass; wait for a mark (a file, a line, a state) with these, or inject
a clock. The poll interval is short; the deadline only bounds a failure."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    check: Callable[[], T], *, timeout_s: float = 30, what: str = "", every_s: float = 0.02
) -> T:
    """Call `check` until it returns something truthy, and return that.

    Raises:
        AssertionError: still falsy after `timeout_s` seconds (names `what`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout_s}s: {what or check!r}")
        time.sleep(every_s)


async def await_until(
    check: Callable[[], T], *, timeout_s: float = 30, what: str = "", every_s: float = 0.01
) -> T:
    """`wait_until` inside an event loop (the loop keeps running while it waits)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout_s}s: {what or check!r}")
        await asyncio.sleep(every_s)
