"""run_tool_call: every tool fault is a value; invalid calls never run; placeholders (T02)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kit.calls import make_call
from tether.messages import ImageBlock, TextBlock, ToolCallBlock
from tether.tools import NO_OUTPUT, ToolContext, ToolError, ToolOutput, ToolRegistry, tool
from tether.tools.exec.run import run_tool_call


async def test_unknown_tool_names_available(ctx: ToolContext) -> None:
    reg = ToolRegistry([tool(lambda: "x", name="alpha"), tool(lambda: "y", name="beta")])
    r = await run_tool_call(reg, make_call("gamma"), ctx)
    assert r.is_error and "gamma" in r.text and "alpha, beta" in r.text


async def test_invalid_call_never_runs(ctx: ToolContext) -> None:
    ran: list[object] = []

    @tool
    def write_file(path: str, content: str) -> str:
        ran.append(path)
        return "ok"

    call = ToolCallBlock(
        id="c1",
        name="write_file",
        arguments={},
        raw_arguments='{"path": "a.txt", "content": "tru',
        invalid="truncated stream",
    )
    r = await run_tool_call(ToolRegistry([write_file]), call, ctx)
    assert r.is_error and r.tool_call_id == "c1"
    assert "truncated stream" in r.text and "not run" in r.text and "re-issue" in r.text
    assert ran == []


async def test_schema_violation_never_runs(ctx: ToolContext) -> None:
    ran: list[object] = []

    @tool
    def add(a: int, b: int = 0) -> int:
        ran.append(a)
        return a + b

    reg = ToolRegistry([add])
    r = await run_tool_call(reg, make_call("add", a="not a number"), ctx)
    assert r.is_error and "a:" in r.text and "integer" in r.text
    r = await run_tool_call(reg, make_call("add"), ctx)
    assert r.is_error and "Field required" in r.text
    r = await run_tool_call(reg, make_call("add", a=1, c=2), ctx)
    assert r.is_error and "c: Extra inputs" in r.text
    assert ran == []
    r = await run_tool_call(reg, make_call("add", a=2, b=3), ctx)
    assert not r.is_error and r.text == "5" and ran == [2]


async def test_exceptions_become_errors(ctx: ToolContext) -> None:
    @tool
    def boom() -> str:
        raise KeyError("missing")

    @tool
    async def polite() -> str:
        raise ToolError("no such thing")

    @tool
    async def own_timeout() -> str:
        raise TimeoutError("socket")

    reg = ToolRegistry([boom, polite, own_timeout])
    r = await run_tool_call(reg, make_call("boom"), ctx)
    assert r.is_error and r.text == "KeyError: 'missing'"
    r = await run_tool_call(reg, make_call("polite"), ctx)
    assert r.is_error and r.text == "no such thing"
    r = await run_tool_call(reg, make_call("own_timeout"), ctx)
    assert r.is_error and r.text == "TimeoutError: socket"


async def test_timeouts(ctx: ToolContext) -> None:
    @tool
    async def slow_async() -> str:
        await asyncio.sleep(10)
        return "late"

    release = threading.Event()

    @tool
    def slow_sync() -> str:
        release.wait(10)
        return "late"

    @tool(timeout_s=0.05)
    async def own_limit() -> str:
        await asyncio.sleep(10)
        return "late"

    reg = ToolRegistry([slow_async, slow_sync, own_limit])
    t0 = time.monotonic()
    r = await run_tool_call(reg, make_call("slow_async"), ctx, timeout_s=0.05)
    assert r.is_error and r.text == "`slow_async` timed out after 0.05 s"
    r = await run_tool_call(reg, make_call("slow_sync"), ctx, timeout_s=0.05)
    assert r.is_error and "timed out after 0.05 s" in r.text
    release.set()
    r = await run_tool_call(reg, make_call("own_limit"), ctx, timeout_s=100)
    assert r.is_error and "0.05 s" in r.text
    assert time.monotonic() - t0 < 2


async def test_cancellation_propagates(ctx: ToolContext) -> None:
    @tool
    async def hang() -> str:
        await asyncio.sleep(10)
        return "x"

    task = asyncio.create_task(run_tool_call(ToolRegistry([hang]), make_call("hang"), ctx))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("value", ["", "   \n\t", None, [], [TextBlock(text=" ")], ToolOutput("")])
async def test_empty_output_gets_placeholder(ctx: ToolContext, value: object) -> None:
    @tool(inline=True)
    def quiet() -> object:
        return value

    r = await run_tool_call(ToolRegistry([quiet]), make_call("quiet"), ctx)
    assert not r.is_error and r.content == (TextBlock(text=NO_OUTPUT),)


async def test_return_conversion(ctx: ToolContext) -> None:
    img = ImageBlock(media_type="image/png", data="AAAA")

    @tool
    def parts() -> list[TextBlock | ImageBlock]:
        return [TextBlock(text="see"), TextBlock(text=""), img]

    @tool
    def data() -> dict[str, int]:
        return {"a": 1}

    @tool
    def failed() -> ToolOutput:
        return ToolOutput("bad", is_error=True)

    reg = ToolRegistry([parts, data, failed])
    r = await run_tool_call(reg, make_call("parts"), ctx)
    assert r.content == (TextBlock(text="see"), img)
    r = await run_tool_call(reg, make_call("data"), ctx)
    assert r.text == '{"a": 1}'
    r = await run_tool_call(reg, make_call("failed"), ctx)
    assert r.is_error and r.text == "bad"


async def test_context_injected_and_redactor(ctx: ToolContext) -> None:
    @tool
    def where(ctx: ToolContext) -> str:
        return f"{ctx.root} sk-ant-{'a' * 30}"

    from tether.tools import redact_secrets

    r = await run_tool_call(ToolRegistry([where]), make_call("where"), ctx, redact=redact_secrets)
    assert r.text == f"{ctx.root} [REDACTED]"


def test_redaction_keeps_a_part_it_leaves_unchanged() -> None:
    """`finish` builds a new text part only for a text the redaction changed."""
    from tether.tools.env import redact_secrets
    from tether.tools.exec.outcome import Outcome
    from tether.tools.exec.run import finish

    clean, secret = TextBlock(text="x" * 2_000), TextBlock(text="key sk-" + "A" * 30)
    run = finish("c1", Outcome(parts=(clean, secret)), redact_secrets)
    kept, masked = run.block.content
    assert kept is clean
    assert isinstance(masked, TextBlock) and masked.text == "key [REDACTED]"
