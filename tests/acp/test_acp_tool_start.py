"""ACP `tool_call_update` status `in_progress` comes from the call's `tool_start` (issue 39): a
call that runs without being asked (a safe `read`) is marked running too, before `completed`.
Before, `in_progress` was sent only when the user allowed a call, so an unasked call went from
`pending` straight to `completed`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import acp
from acp import schema
from kit.acp import acp_project
from kit.faultserver import text, tool


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    def on_connect(self, conn: acp.Agent) -> None:
        del conn

    async def request_permission(self, *a: Any, **kw: Any) -> Any:
        raise AssertionError("a safe call is never asked about")

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)


@pytest.mark.slow
async def test_an_unasked_call_is_in_progress_before_it_completes(tmp_path: Path) -> None:
    client = Client()
    with acp_project(tmp_path, [tool("read", path="a.txt"), text("It says hi.")]) as project:
        (project.work / "a.txt").write_text("hi\n")
        with project.stderr.open("wb") as errlog:
            async with acp.spawn_agent_process(
                client,  # pyright: ignore[reportArgumentType]  # a partial client: the SDK answers method-not-found for the rest
                *project.argv(),
                env=project.env(),
                cwd=project.work,
                transport_kwargs={"stderr": errlog.fileno()},
            ) as (conn, _proc):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                new = await conn.new_session(cwd=str(project.work), mcp_servers=[])
                done = await conn.prompt(
                    session_id=new.session_id, prompt=[acp.text_block("read a.txt")]
                )
    assert done.stop_reason == "end_turn"
    start = next(u for u in client.updates if isinstance(u, schema.ToolCallStart))
    assert start.status == "pending"
    statuses = [
        u.status
        for u in client.updates
        if isinstance(u, schema.ToolCallProgress) and u.tool_call_id == start.tool_call_id
    ]
    assert statuses == ["in_progress", "completed"]
