"""Issue 18 item 21: a cancel that lands while `bash` is starting (the process forked, its
handle not yet returned) ends the call promptly and leaves no process, the inner bwrap included."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_tool_bash import marker, wait_no_survivors

from kit.sandbox import SANDBOX_KINDS, sandbox_for
from tether.tools import ToolContext, scrubbed_env
from tether.tools.builtin.bash import run_shell


@pytest.mark.parametrize("kind", SANDBOX_KINDS)
async def test_cancel_at_every_early_step_of_a_start_leaves_nothing(kind: str, root: Path) -> None:
    ctx = ToolContext.create(root, env=scrubbed_env(), sandbox=sandbox_for(kind))
    for steps in range(12):  # the cancel lands after 0, 1, 2, ... loop iterations
        m = marker()
        task = asyncio.ensure_future(run_shell(f"sleep {m} & sleep {m}", ctx, timeout_s=600))
        for _ in range(steps):
            await asyncio.sleep(0)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=10)
        assert time.monotonic() - t0 < 5, f"cancel after {steps} steps took too long"
        assert await wait_no_survivors(m) == [], f"processes left after {steps} steps"
