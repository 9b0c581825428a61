"""The `read` tool may read this session's persisted outputs (outside the working folder),
read-only; every other path outside the working folder stays refused."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.messages import ToolCallBlock, ToolResultBlock
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env
from tether.tools.base import tool
from tether.tools.exec.persist import TOOL_RESULTS_DIR, persist_tool_result, readable_results_dir


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ToolContext, Path, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    session_dir = tmp_path / "sessions" / "s1"
    results = session_dir / TOOL_RESULTS_DIR
    results.mkdir(parents=True)
    (results / "call_1.txt").write_text("".join(f"out {i}\n" for i in range(1, 101)))
    (session_dir / "writer.lock").write_text("")
    other = tmp_path / "sessions" / "s2" / TOOL_RESULTS_DIR
    other.mkdir(parents=True)
    (other / "call_9.txt").write_text("another session's output\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    ctx = ToolContext.create(root, env=scrubbed_env(), session_dir=session_dir)
    return ctx, results, tmp_path


async def _run(ctx: ToolContext, name: str, **args: object) -> ToolResultBlock:
    registry = ToolRegistry(builtin_tools())
    return await run_tool_call(registry, ToolCallBlock(id="x", name=name, arguments=args), ctx)


async def test_read_opens_persisted_outputs_with_offset_and_limit(
    setup: tuple[ToolContext, Path, Path],
) -> None:
    ctx, results, _ = setup
    r = await _run(ctx, "read", path=str(results / "call_1.txt"), offset=40, limit=2)
    assert not r.is_error, r.text
    assert r.text.splitlines()[:2] == ["    40\tout 40", "    41\tout 41"]
    assert "offset=42" in r.text


async def test_other_paths_outside_the_root_stay_refused(
    setup: tuple[ToolContext, Path, Path],
) -> None:
    ctx, results, tmp = setup
    (results / "escape.txt").symlink_to(tmp / "secret.txt")
    refused = [
        str(tmp / "secret.txt"),
        str(ctx.session_dir / "writer.lock") if ctx.session_dir else "",
        str(results / ".." / "writer.lock"),
        str(results),  # the folder itself is not a file of it
        str(tmp / "sessions" / "s2" / TOOL_RESULTS_DIR / "call_9.txt"),  # another session
        str(results / "escape.txt"),  # a symlink out of it
        "../secret.txt",
    ]
    for p in refused:
        r = await _run(ctx, "read", path=p)
        assert r.is_error and "outside the working folder" in r.text, (p, r.text)
    # read-only: the write tools, ls and grep do not get the exception
    target = str(results / "call_1.txt")
    for name, args in (
        ("write", {"path": target, "content": "x"}),
        ("edit", {"path": target, "old_string": "out 1", "new_string": "y"}),
        ("ls", {"path": str(results)}),
    ):
        r = await _run(ctx, name, **args)
        assert r.is_error and "outside" in r.text, (name, r.text)
    assert (results / "call_1.txt").read_text().startswith("out 1\n")


async def test_no_session_or_a_symlinked_results_folder_gives_no_exception(
    setup: tuple[ToolContext, Path, Path],
) -> None:
    ctx, results, tmp = setup
    bare = ToolContext.create(ctx.root, env=scrubbed_env())
    r = await _run(bare, "read", path=str(results / "call_1.txt"))
    assert r.is_error and "outside" in r.text
    # a session folder whose tool-results is a symlink to elsewhere: refused
    fake = tmp / "fake_session"
    fake.mkdir()
    os.symlink(tmp, fake / TOOL_RESULTS_DIR)
    assert readable_results_dir(fake) is None
    sneaky = ToolContext.create(ctx.root, env=scrubbed_env(), session_dir=fake)
    r = await _run(sneaky, "read", path=str(fake / TOOL_RESULTS_DIR / "secret.txt"))
    assert r.is_error and "outside" in r.text


async def test_the_model_reads_back_a_persisted_output_through_the_loop(tmp_path: Path) -> None:
    big = "".join(f"record {i:05d}\n" for i in range(30_000))

    @tool
    def dump() -> str:
        """Print a lot."""
        return big

    store = SessionStore(tmp_path / "sessions")
    writer = store.create("s1", cwd=str(tmp_path))
    root = tmp_path / "ws"
    root.mkdir()
    paths: list[str] = []

    def script(request: ModelRequest) -> Response:
        messages = request.messages
        if len(messages) == 1:
            return call("dump", id="c1")
        if not paths:
            block = messages[-1].content[0]
            assert isinstance(block, ToolResultBlock)
            stub = block.text
            m = re.search(r'path="([^"]+)"', stub)
            assert m is not None
            paths.append(m.group(1))
            return call("read", id="c2", path=paths[0], offset=20_000, limit=3)
        return "done"

    provider = ScriptedProvider(script)
    agent = Agent(
        provider,
        tools=[*builtin_tools(), dump],
        root=root,
        session=AgentSession(sink=writer, session_dir=store.session_dir("s1")),
    )
    await agent.run("go")
    writer.close()
    read_result = next(
        b for t in store.load("s1").turns for b in t.tool_results if b.tool_call_id == "c2"
    )
    assert not read_result.is_error, read_result.text
    assert read_result.text.splitlines()[:3] == [
        " 20000\trecord 19999",
        " 20001\trecord 20000",
        " 20002\trecord 20001",
    ]
    # the result of reading back is itself gated like any other
    assert persist_tool_result(read_result, store.session_dir("s1")) is read_result
