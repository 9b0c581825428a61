"""The bash tool: placeholder for silent commands (T02), merged output, caps, exit codes,
timeout/cancel kill the whole process group, and a scrubbed environment (T31) — each unsandboxed
and under every OS sandbox that works on this machine (bwrap, Landlock)."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from kit.sandbox import SANDBOX_KINDS, sandbox_for
from kit.waits import await_until
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.sandbox.bwrap import BwrapSandbox
from tether.sandbox.detect import available
from tether.sandbox.landlock_sandbox import LandlockSandbox
from tether.sandbox.proc import HEAD_BYTES, HeadTail
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env

Call = Callable[..., Awaitable[ToolResultBlock]]

@pytest.fixture(params=SANDBOX_KINDS)
def ctx(request: pytest.FixtureRequest, root: Path) -> ToolContext:
    """Every test here runs unsandboxed, under bwrap and under Landlock."""
    return ToolContext.create(root, env=scrubbed_env(), sandbox=sandbox_for(request.param))


async def test_t02_silent_command_gets_placeholder(call: Call, root: Path) -> None:
    r = await call("bash", command="mkdir -p build")
    assert not r.is_error
    assert r.content == (TextBlock(text="(no output, exit code 0)"),)
    assert (root / "build").is_dir()
    r = await call("bash", command="false")
    assert r.text == "(no output, exit code 1)"


async def test_output_merged_in_order_with_exit_code(call: Call) -> None:
    r = await call("bash", command="echo one; echo two >&2; echo three; exit 3")
    assert r.text == "one\ntwo\nthree\n(exit code 3)" and not r.is_error
    r = await call("bash", command="pwd; cat")  # stdin is empty: cat returns at once
    assert r.text == str(Path(r.text).resolve())


async def test_output_capped_head_and_tail(call: Call) -> None:
    # 1.5M lines ≈ 10.9 MB: more than HEAD_BYTES + TAIL_BYTES (8 MB), so the middle is cut
    r = await call("bash", command="seq 1 1500000")
    assert r.text.startswith("1\n2\n3\n") and r.text.endswith("1499999\n1500000")
    assert "bytes of output cut" in r.text and len(r.text) < 2 * HEAD_BYTES + 200


def test_head_tail_small_and_large() -> None:
    h = HeadTail(head=4, tail=4)
    h.feed(b"abc")
    assert h.text() == "abc"
    h.feed(b"defghij")
    assert h.text().startswith("abcd\n") and h.text().endswith("\nghij") and "2 bytes" in h.text()


def marker() -> str:
    """A `sleep` duration no other process on the machine uses: its processes are found by
    command line, whatever pid namespace or process group they run in."""
    return f"1000.{secrets.randbelow(10**6):06d}"


def survivors(mark: str, *, program: str | None = None) -> list[int]:
    """Pids of live (non-zombie) processes whose command line holds `mark` (and, with
    `program`, starts with it: `sleep` itself, not the bwrap or bash lines that name it)."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        live = stat[stat.rindex(")") + 2] != "Z"
        if mark in cmdline and live and (program is None or cmdline.startswith(f"{program} ")):
            out.append(int(entry))
    return out


async def wait_no_survivors(mark: str, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := survivors(mark)) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return left


async def test_timeout_kills_the_process_tree(call: Call) -> None:
    m = marker()
    t0 = time.monotonic()
    r = await call(
        "bash", command=f"sleep {m} & (sleep {m}; echo never) & sleep {m}", timeout_s=0.5
    )
    assert time.monotonic() - t0 < 5
    assert r.is_error and "timed out after 0.5 s" in r.text
    assert await wait_no_survivors(m) == []


async def test_cancel_kills_the_process_tree(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    m = marker()
    block = ToolCallBlock(id="c", name="bash", arguments={"command": f"sleep {m} & sleep {m}"})
    task = asyncio.create_task(run_tool_call(registry, block, ctx))
    await await_until(lambda: len(survivors(m)) >= 2, timeout_s=10, what="both sleeps running")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_no_survivors(m) == []


async def test_background_holder_of_output_is_killed(call: Call, ctx: ToolContext) -> None:
    m = marker()
    t0 = time.monotonic()
    r = await call("bash", command=f"echo started; sleep {m} &")
    assert time.monotonic() - t0 < 5 and not r.is_error and r.text.startswith("started")
    # under bwrap and the Landlock launcher the command has a pid namespace (a reaper) of its
    # own: its end ends every process in it, so nothing is left to report; otherwise the
    # leftovers are killed and reported
    launcher = isinstance(ctx.sandbox, LandlockSandbox) and not ctx.sandbox.in_child
    if not isinstance(ctx.sandbox, BwrapSandbox) and not launcher:
        assert "background processes" in r.text
    assert await wait_no_survivors(m) == []


KILL_SCRIPT = """
import asyncio, sys
from pathlib import Path
from tether.tools import ToolContext, builtin_tools, run_tool_call, scrubbed_env, ToolRegistry
from tether.messages import ToolCallBlock
from tether.sandbox.detect import available

async def main() -> None:
    ctx = ToolContext.create(sys.argv[1], env=scrubbed_env(), sandbox=available("bwrap"))
    block = ToolCallBlock(id="c", name="bash", arguments={"command": f"sleep {sys.argv[2]} & sleep {sys.argv[2]}"})
    await run_tool_call(ToolRegistry(builtin_tools()), block, ctx)

asyncio.run(main())
"""


async def test_kill_9_of_the_harness_leaves_no_sandboxed_command_behind(root: Path) -> None:
    """bwrap's `--die-with-parent` plus a pid namespace: when tether dies without any chance
    to clean up, every process its bash call started dies with it."""
    if available("bwrap") is None:
        pytest.skip("bwrap is not available on this machine")
    m = marker()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", KILL_SCRIPT, str(root), m)
    # both `sleep`s running: the sandbox is up (a kill -9 while bwrap itself is still setting up,
    # before its child armed --die-with-parent, is a window no harness code can close)
    await await_until(
        lambda: len(survivors(m, program="sleep")) >= 2, timeout_s=10, what="both sleeps running"
    )
    proc.kill()
    await proc.wait()
    assert await wait_no_survivors(m) == []


async def test_bad_timeout_argument_is_refused(call: Call) -> None:
    r = await call("bash", command="true", timeout_s=0)
    assert r.is_error and "timeout_s" in r.text
    # a long one is no mistake: it is cut to `tools.max_timeout` (`test_max_timeout.py`)
    r = await call("bash", command="true", timeout_s=10_000)
    assert not r.is_error


# --- T31: secrets never reach tool subprocesses ---------------------------------------------

SECRET_KEY = "sk-ant-api03-harness-secret-0123456789"
DOTENV_SECRET = "dotenv-db-password-4242"


async def test_t31_env_is_scrubbed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "token-value-xyz-123")
    monkeypatch.setenv("Db_Password", "harness-pw-999")
    monkeypatch.setenv("HARMLESS_KEYBOARD", "us")
    (root / ".env").write_text(f"DB_PASSWORD={DOTENV_SECRET}\nOPENAI_API_KEY=sk-proj-dotenv\n")
    ctx = ToolContext.create(root)  # env=None: the harness environment, scrubbed
    reg = ToolRegistry(builtin_tools())
    call = ToolCallBlock(
        id="e", name="bash", arguments={"command": "env | grep -i -E 'password|key'"}
    )
    r = await run_tool_call(reg, call, ctx)
    for secret in (
        SECRET_KEY,
        "token-value-xyz-123",
        "harness-pw-999",
        DOTENV_SECRET,
        "sk-proj-dotenv",
    ):
        assert secret not in r.text
        assert secret not in ctx.env.values()
    assert "HARMLESS_KEYBOARD=us" in r.text  # scrubbing is by name pattern, not wholesale
    assert DOTENV_SECRET not in os.environ.values()  # the project .env is never loaded
