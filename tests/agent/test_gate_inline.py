"""An ordinary tool output is gated inline: no task and no shield around `gate_tool_result`
per call (it never awaits for such an output, so nothing can cancel it midway); an output past
`INLINE_GATE_CHARS` is still gated in a worker thread, shielded, and saved whole."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from types import CoroutineType
from typing import Any, cast

from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import ToolResultBlock
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call
from tether.tools.base import tool
from tether.tools.exec.persist import INLINE_GATE_CHARS


def output(size: int) -> str:
    """A text of `size` characters in lines of 100."""
    return ("x" * 99 + "\n") * (size // 100)


def line(size: int) -> str:
    """One line of `size` characters (past the gate's line cap: cut, and saved whole)."""
    return "y" * size


def _run(tmp_path: Path, sizes: list[tuple[str, int]]) -> tuple[list[str], list[ModelRequest]]:
    """Run one call of `output` per size; the names of the coroutines wrapped in tasks, and the
    requests sent."""
    sent: list[ModelRequest] = []

    def model(request: ModelRequest) -> Response:
        sent.append(request)
        k = len(sent)
        if k > len(sizes):
            return "done"
        name, size = sizes[k - 1]
        return call(name, size=size)

    store = SessionStore(tmp_path / "data" / "sessions")
    root = tmp_path / "project"
    root.mkdir()
    agent = Agent(
        ScriptedProvider(model),
        tools=[tool(output, inline=True, safe=True), tool(line, inline=True, safe=True)],
        root=root,
        session=AgentSession(sink=store.create(cwd=str(root))),
    )
    wrapped: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def factory(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any) -> asyncio.Task[Any]:
            wrapped.append(cast("CoroutineType[Any, Any, Any]", coro).cr_code.co_name)  # a task's coroutine
            return asyncio.Task(coro, loop=loop, **kw)

        loop.set_task_factory(factory)  # pyright: ignore[reportArgumentType]
        assert (await agent.run("go")).text == "done"

    asyncio.run(main())
    return wrapped, sent


def test_an_ordinary_output_is_gated_without_a_task(tmp_path: Path) -> None:
    wrapped, sent = _run(tmp_path, [("output", 2_000), ("line", 3_000)])
    assert "gate_tool_result" not in wrapped
    results = [b for m in sent[-1].messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert results[0].text == output(2_000)
    saved = next(tmp_path.glob("data/sessions/*/tool-results/*"))  # the line was cut and saved
    assert saved.read_text() == line(3_000) and saved.name in results[1].text


def test_a_large_output_is_still_gated_in_a_shielded_task(tmp_path: Path) -> None:
    big = INLINE_GATE_CHARS + 1_000
    wrapped, sent = _run(tmp_path, [("output", big)])
    assert wrapped.count("gate_tool_result") == 1
    results = [b for m in sent[-1].messages for b in m.content if isinstance(b, ToolResultBlock)]
    saved = next(tmp_path.glob("data/sessions/*/tool-results/*"))
    assert saved.read_text() == output(big) and saved.name in results[0].text
