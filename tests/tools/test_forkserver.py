"""Folder tools run in workers forked from a pre-started server (issue 12): one server per
tool folder and context, a fresh process per call, nothing carried over between calls, and
the same results as a freshly started worker."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.messages import ToolCallBlock
from tether.tools import ToolContext, ToolRegistry, scan_tool_folders
from tether.tools.exec import forkserver
from tether.tools.exec.run import run_tool

TOOLS = '''
import os
from tether.tools import ToolContext, tool

COUNT = []

@tool
def probe(ctx: ToolContext) -> dict:
    """Report the process and how often this module's state was touched."""
    COUNT.append(1)
    return {"pid": os.getpid(), "pgid": os.getpgid(0), "count": len(COUNT), "cwd": os.getcwd(),
            "marker": os.environ.get("TETHER_FS_MARK")}
'''


@pytest.fixture(autouse=True)
def fresh_servers() -> Iterator[None]:
    was = forkserver.enabled
    forkserver.shutdown()
    forkserver.enabled = True
    yield
    forkserver.shutdown()
    forkserver.enabled = was


@pytest.fixture
def tools(tmp_path: Path) -> ToolRegistry:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "probe.py").write_text(TOOLS)
    return scan_tool_folders([folder]).registry


async def _probe(reg: ToolRegistry, ctx: ToolContext) -> dict[str, object]:
    r = await run_tool(reg, ToolCallBlock(id="c", name="probe", arguments={}), ctx)
    assert not r.block.is_error, r.block.text
    return json.loads(r.block.text)


async def test_calls_fork_from_one_server_and_share_no_state(
    tools: ToolRegistry, root: Path
) -> None:
    ctx = ToolContext.create(root, env={"PATH": os.environ["PATH"], "TETHER_FS_MARK": "m"})
    first, second = await _probe(tools, ctx), await _probe(tools, ctx)
    assert forkserver.servers() == 1
    assert first["pid"] != second["pid"] != os.getpid()
    assert first["pgid"] == first["pid"]  # each worker leads its own process group
    assert first["count"] == second["count"] == 1  # the tool module is fresh per call
    assert first["cwd"] == str(root) and first["marker"] == "m"
    # another environment is another start: another server
    other = ToolContext.create(root, env={"PATH": os.environ["PATH"], "TETHER_FS_MARK": "n"})
    assert (await _probe(tools, other))["marker"] == "n"
    assert forkserver.servers() == 2


async def test_forked_and_fresh_workers_answer_alike(tools: ToolRegistry, root: Path) -> None:
    ctx = ToolContext.create(root, env={"PATH": os.environ["PATH"]})
    forked = await _probe(tools, ctx)
    forkserver.enabled = False
    fresh = await _probe(tools, ctx)
    assert forkserver.servers() == 1  # the fresh call started none
    for k in ("count", "cwd", "marker"):
        assert forked[k] == fresh[k]


async def test_a_dead_server_is_replaced(tools: ToolRegistry, root: Path) -> None:
    ctx = ToolContext.create(root, env={"PATH": os.environ["PATH"]})
    await _probe(tools, ctx)
    (server,) = forkserver._servers.values()  # pyright: ignore[reportPrivateUsage]
    server.proc.kill()
    server.proc.wait()
    assert (await _probe(tools, ctx))["count"] == 1
    assert forkserver.servers() == 1


def test_fork_servers_are_on_by_default() -> None:
    """Each forked call runs under a keeper that reaps what it leaves and applies the call's
    limits (tests/sandbox/test_forkserver_reaper.py), so the fork server is the default."""
    import importlib

    for server in forkserver._closing:  # pyright: ignore[reportPrivateUsage]
        server.proc.wait(timeout=30)  # the reload forgets them: let none be left running
    assert importlib.reload(forkserver).enabled is True
