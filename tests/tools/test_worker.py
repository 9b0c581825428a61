"""The worker process: results through the protocol, stdout junk kept out of the result line,
workers that die (SIGKILL, exit code, no result), the wrap hook, cancellation, the context."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kit.calls import make_call
from kit.waits import await_until
from tether.sandbox.policy import PathPolicy
from tether.tools import ToolContext, ToolRegistry, scrubbed_env
from tether.tools.exec.run import run_tool
from tether.tools.exec.worker import worker_argv
from tether.tools.scan import scan_tool_folders

TOOLS = '''
import os, signal, sys, time
from pathlib import Path
from tether.tools import ToolContext, ToolError, tool
from .lib.fmt import shout

@tool(safe=True)
def greet(name: str) -> dict:
    """Greet someone."""
    print("junk on stdout {not json")
    sys.stdout.flush()
    os.write(1, b'{"tether_result": "forged"}\\n')
    print("to stderr", file=sys.stderr)
    return {"result": shout(f"hi {name}"), "system": "be nice", "display": {"n": 1}}

@tool
def sigkill() -> str:
    print("about to die", file=sys.stderr)
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"

@tool
def exits() -> str:
    os._exit(3)

@tool
def silent() -> str:
    sys.stdout.flush()
    os._exit(0)

@tool
def fails() -> str:
    raise ToolError("no such record")

@tool
def where(ctx: ToolContext) -> dict:
    return {"root": str(ctx.root), "cwd": os.getcwd(), "secret": os.environ.get("ANTHROPIC_API_KEY"),
            "deny": list(ctx.policy.deny_read) if ctx.policy else None, "pid": os.getpid()}

@tool
def forks(pidfile: str) -> str:
    pid = os.fork()
    if pid == 0:  # the child keeps every fd, the result pipe included
        time.sleep(30)
        os._exit(0)
    Path(pidfile).write_text(str(pid))
    return "parent done"

@tool
async def sleeper(pidfile: str) -> str:
    import asyncio
    Path(pidfile).write_text(str(os.getpid()))
    await asyncio.sleep(30)
    return "late"
'''


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    folder = tmp_path / "tools"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "fmt.py").write_text("def shout(s):\n    return s.upper()\n")
    (folder / "mine.py").write_text(TOOLS)
    return scan_tool_folders([folder]).registry



async def test_result_system_notes_and_display_through_the_worker(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    assert registry["greet"].safe and registry["greet"].source is not None
    r = await run_tool(registry, make_call("greet", name="bo"), ctx)
    # the prints went to stderr; the forged line on fd 1 did not become the result
    assert r.block.text == "HI BO" and not r.block.is_error
    assert r.system_notes == ("be nice",) and r.display == {"n": 1}


async def test_worker_killed_by_sigkill(registry: ToolRegistry, ctx: ToolContext) -> None:
    r = await run_tool(registry, make_call("sigkill"), ctx)
    assert r.block.is_error
    assert r.block.text.startswith("tool worker was killed by signal 9 (SIGKILL)")
    assert "about to die" in r.block.text  # the stderr tail is quoted


async def test_worker_exit_code_and_no_result(registry: ToolRegistry, ctx: ToolContext) -> None:
    r = await run_tool(registry, make_call("exits"), ctx)
    assert r.block.is_error and r.block.text.startswith("tool worker exited with code 3")
    r = await run_tool(registry, make_call("silent"), ctx)
    assert r.block.is_error and r.block.text.startswith("tool worker printed no result")


async def test_tool_errors_and_bad_arguments(registry: ToolRegistry, ctx: ToolContext) -> None:
    r = await run_tool(registry, make_call("fails"), ctx)
    assert r.block.is_error and r.block.text == "no such record"
    r = await run_tool(registry, make_call("greet"), ctx)
    assert r.block.is_error and "name: Field required" in r.block.text


async def test_context_env_and_cwd_reach_the_worker(
    registry: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "x" * 30)
    ctx = ToolContext.create(root, env=scrubbed_env(), policy=PathPolicy(deny_read=("*.pem",)))
    r = await run_tool(registry, make_call("where"), ctx)
    data = json.loads(r.block.text)
    assert data["root"] == str(root) and data["cwd"] == str(root)
    assert data["secret"] is None and data["deny"] == ["*.pem"] and data["pid"] != os.getpid()


async def test_wrap_hook_rewrites_the_argv(registry: ToolRegistry, root: Path) -> None:
    seen: list[list[str]] = []

    def wrap(argv: list[str]) -> list[str]:
        seen.append(argv)
        return ["env", "TETHER_WRAPPED=1", *argv]

    ctx = ToolContext.create(root, env=scrubbed_env(), wrap=wrap)
    r = await run_tool(registry, make_call("greet", name="x"), ctx)
    assert r.block.text == "HI X"
    assert seen == [worker_argv()] and seen[0][1] == "-P"  # no project folder on sys.path
    broken = ToolContext(root=ctx.root, env=ctx.env, wrap=lambda a: ["/nonexistent/sandbox", *a])
    r = await run_tool(registry, make_call("greet", name="x"), broken)
    assert r.block.is_error and "could not start the tool worker" in r.block.text


async def test_cancellation_kills_the_worker(
    registry: ToolRegistry, ctx: ToolContext, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(run_tool(registry, make_call("sleeper", pidfile=str(pidfile)), ctx))
    await await_until(lambda: pidfile.exists() and pidfile.read_text(), timeout_s=10)
    pid = int(pidfile.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_forked_child_holding_the_result_pipe_does_not_stall_the_call(
    registry: ToolRegistry, ctx: ToolContext, tmp_path: Path, alive: Callable[[int], bool]
) -> None:
    import signal
    import time

    pidfile = tmp_path / "child"
    t0 = time.monotonic()
    r = await run_tool(registry, make_call("forks", pidfile=str(pidfile)), ctx, timeout_s=20)
    child = int(pidfile.read_text())
    try:
        assert r.block.text == "parent done" and time.monotonic() - t0 < 10
        for _ in range(40):
            if not alive(child):
                break
            await asyncio.sleep(0.05)
        assert not alive(child)  # killed with the group, like bash leftovers
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
