"""A call of an inline sync tool runs without a task of its own (it cannot be suspended, so
nothing could cancel it midway), and a tool that cannot see its `ToolContext` gets no per-call
copy of it; a tool in a worker thread keeps its task (`Agent.cancel_tool` reaches it), and a
tool that takes the context still sees its call's id and its own name."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from pathlib import Path
from types import CoroutineType
from typing import Any, cast

import pytest

import tether.agent.turn.tool_calls as tool_calls
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import ToolResultBlock
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call
from tether.tools.base import tool
from tether.tools.context import ToolContext


def plain(text: str) -> str:
    """Echo `text`."""
    return text


def aware(text: str, ctx: ToolContext) -> str:
    """Echo `text` with the call id and tool name its context carries."""
    return f"{text} {ctx.call_id} {ctx.tool_name}"


def _run(
    tmp_path: Path, name: str, *, inline: bool
) -> tuple[list[str], list[ModelRequest], list[str]]:
    """Two calls of tool `name`; the coroutines wrapped in tasks, the requests sent, and the
    types the loop's `replace` copied."""
    sent: list[ModelRequest] = []

    def model(request: ModelRequest) -> Response:
        sent.append(request)
        k = len(sent)
        return "done" if k > 2 else call(name, id=f"c{k}", text=f"t{k}")

    store = SessionStore(tmp_path / "data" / "sessions")
    root = tmp_path / "project"
    root.mkdir()
    agent = Agent(
        ScriptedProvider(model),
        tools=[tool(plain, inline=inline, safe=True), tool(aware, inline=inline, safe=True)],
        root=root,
        session=AgentSession(sink=store.create(cwd=str(root))),
    )
    wrapped: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def factory(
            loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any
        ) -> asyncio.Task[Any]:
            wrapped.append(cast("CoroutineType[Any, Any, Any]", coro).cr_code.co_name)
            return asyncio.Task(coro, loop=loop, **kw)

        loop.set_task_factory(factory)  # pyright: ignore[reportArgumentType]
        assert (await agent.run("go")).text == "done"

    copied: list[str] = []

    def counting_replace(obj: Any, /, **changes: Any) -> Any:
        copied.append(type(obj).__name__)
        return dataclasses.replace(obj, **changes)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tool_calls, "replace", counting_replace)
        asyncio.run(main())
    return wrapped, sent, copied


def _results(request: ModelRequest) -> list[str]:
    return [b.text for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)]


def test_an_inline_call_runs_without_a_task_or_a_context_copy(tmp_path: Path) -> None:
    wrapped, sent, copied = _run(tmp_path, "plain", inline=True)
    assert "run_tool" not in wrapped
    assert "ToolContext" not in copied
    assert _results(sent[-1]) == ["t1", "t2"]


def test_a_thread_call_keeps_its_task(tmp_path: Path) -> None:
    wrapped, sent, _ = _run(tmp_path, "plain", inline=False)
    assert wrapped.count("run_tool") == 2  # Agent.cancel_tool can reach it
    assert _results(sent[-1]) == ["t1", "t2"]


@pytest.mark.parametrize("inline", [True, False])
def test_a_tool_that_takes_its_context_sees_its_call(tmp_path: Path, inline: bool) -> None:
    _, sent, copied = _run(tmp_path, "aware", inline=inline)
    assert copied.count("ToolContext") == 2  # one copy per call
    assert _results(sent[-1]) == ["t1 c1 aware", "t2 c2 aware"]
