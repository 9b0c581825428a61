"""Stale-read elision and read dedup in the agent loop, with the real `read`/`edit` tools and a
scripted model: what the requests carry, what the session keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from kit.agents import make_agent
from tether.agent.turn.compacting import AutoCompaction
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits
from tether.compaction.prune import PRUNE_TAG, PrunePolicy
from tether.compaction.reads import DEDUP_TAG, STALE_TAG
from tether.messages import TextBlock, ToolResultBlock
from tether.providers.base import ModelRequest
from tether.testing import Reply, Response, ScriptedProvider, call
from tether.tools.base import tool

BODY = "".join(f"line {i} of the file\n" for i in range(60))


def _result(request: ModelRequest, call_id: str) -> ToolResultBlock:
    for t in request.messages:
        for r in t.tool_results:
            if r.tool_call_id == call_id:
                return r
    raise AssertionError(f"no result for {call_id}")


def _script(*calls: Any) -> ScriptedProvider:
    return ScriptedProvider(
        [Reply(blocks=(c,)) for c in calls] + [Reply(blocks=(TextBlock(text="done"),))]
    )


async def _run(tmp_path: Path, provider: ScriptedProvider, **settings: Any) -> Any:
    agent = make_agent(provider, tmp_path, builtins=True, settings=settings)
    await agent.run("work on a.py")
    return agent


def _stale_script() -> ScriptedProvider:
    return _script(
        call("read", id="r1", path="a.py"),
        call("edit", id="e1", path="a.py", old_string="line 3 of", new_string="LINE 3 OF"),
        *(call("ls", id=f"l{i}", path=".") for i in range(8)),
    )


async def test_a_read_made_stale_by_a_later_edit_goes_out_as_a_stub(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BODY)
    provider = _stale_script()
    agent = await _run(tmp_path, provider)
    first = _result(provider.requests[1], "r1")
    assert "line 5 of the file" in first.text  # current while the loop is recent
    last = _result(provider.requests[-1], "r1")
    assert last.text.startswith(STALE_TAG)
    assert "`edit` call e1" in last.text and "`read`" in last.text and "`recall`" in last.text
    # byte-stable: once stubbed, the same bytes on every later request
    texts = [_result(r, "r1").text for r in provider.requests[1:]]
    stubbed = [t for t in texts if t.startswith(STALE_TAG)]
    assert len(stubbed) >= 2 and len(set(stubbed)) == 1
    # the stored turns keep everything
    stored = [r for t in agent.history for r in t.tool_results if r.tool_call_id == "r1"]
    assert "line 5 of the file" in stored[0].text
    # the user's words are untouched
    assert provider.requests[-1].messages[0].text == "work on a.py"


async def test_elide_stale_reads_off_sends_the_read_whole(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BODY)
    provider = _stale_script()
    await _run(tmp_path, provider, context={"elide_stale_reads": False})
    assert "line 5 of the file" in _result(provider.requests[-1], "r1").text


async def test_an_unchanged_re_read_is_a_short_note_a_changed_one_is_whole(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BODY)
    provider = _script(
        call("read", id="r1", path="a.py"),
        call("read", id="r2", path="./a.py"),
        call("read", id="r3", path="a.py", offset=5),  # another slice: whole
        call("append_more", id="b1"),  # a change only the file's mtime and size tell
        call("read", id="r4", path="a.py"),
    )

    @tool(safe=True)
    def append_more() -> str:
        """Append to a.py behind the file tools' back."""
        with (tmp_path / "a.py").open("a") as f:
            f.write("more\n")
        return "ok"

    agent = make_agent(provider, tmp_path, builtins=True, tools=[append_more])
    await agent.run("work on a.py")
    last = provider.requests[-1]
    assert "line 5 of the file" in _result(last, "r1").text
    note = _result(last, "r2").text
    assert note.startswith(DEDUP_TAG) and "call r1" in note and len(note) < 300
    assert "line 9 of the file" in _result(last, "r3").text
    assert "more" in _result(last, "r4").text  # changed since: whole


async def test_read_dedup_off_sends_every_re_read_whole(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BODY)
    provider = _script(call("read", id="r1", path="a.py"), call("read", id="r2", path="a.py"))
    await _run(tmp_path, provider, read={"dedup": False})
    assert "line 5 of the file" in _result(provider.requests[-1], "r2").text


async def test_a_re_read_goes_out_whole_when_the_earlier_read_was_pruned(tmp_path: Path) -> None:
    """The earlier output left the view (pruned): the model is not told it is above."""
    (tmp_path / "a.py").write_text(BODY * 3)
    provider = _script(
        call("read", id="r1", path="a.py"),
        *(call("ls", id=f"l{i}", path=".") for i in range(3)),
        call("read", id="r2", path="a.py"),
    )
    manager = AutoCompaction(
        ContextMonitor(
            ModelLimits(context_window=200_000, max_output_tokens=4_000), CompactionPolicy()
        ),
        prune=PrunePolicy(trigger=0.0001, target=0.0, min_chunk=0.0, keep_recent_turns=2),
    )
    agent = make_agent(provider, tmp_path, builtins=True, compaction=manager)
    await agent.run("work on a.py")
    last = provider.requests[-1]
    assert _result(last, "r1").text.startswith(PRUNE_TAG)
    assert "line 5 of the file" in _result(last, "r2").text
    # the same run without pruning sends a note
    provider2 = _script(
        call("read", id="r1", path="a.py"),
        *(call("ls", id=f"l{i}", path=".") for i in range(3)),
        call("read", id="r2", path="a.py"),
    )
    await _run(tmp_path, provider2)
    assert _result(provider2.requests[-1], "r2").text.startswith(DEDUP_TAG)


async def test_a_re_read_after_a_compaction_is_whole_unless_restoration_brought_it_back(
    tmp_path: Path,
) -> None:
    """Compaction removes the earlier read; restoration re-reads the files the map names,
    newest first, and a re-read is then a note pointing at the restored output."""
    (tmp_path / "a.py").write_text(BODY)
    (tmp_path / "b.py").write_text("b\n")
    provider = _script(
        call("read", id="r1", path="a.py"),
        call("read", id="r0", path="b.py"),
        *(call("ls", id=f"l{i}", path=".") for i in range(5)),
    )
    agent = make_agent(provider, tmp_path, builtins=True, settings={"context": {"window": 50_000}})
    await agent.run("work on a.py")
    cast("list[Response]", provider.script).extend([Reply(blocks=(TextBlock(text="summary"),))])
    assert await agent.compact_now()
    restored = [c for t in agent.history[-2:] for c in t.tool_calls]
    assert [c.arguments["path"] for c in restored] == ["b.py", "a.py"]  # the map's order
    cast("list[Response]", provider.script).extend(
        [Reply(blocks=(call("read", id="r2", path="a.py"),)), Reply(blocks=(TextBlock(text="ok"),))]
    )
    await agent.run("again")
    note = _result(provider.requests[-1], "r2").text
    assert note.startswith(DEDUP_TAG) and restored[1].id in note


async def test_a_re_read_after_a_compaction_without_restoration_is_whole(tmp_path: Path) -> None:
    """The earlier read was compacted away and nothing restored it: the map still says
    "unchanged", but the earlier output is not in the request, so the re-read goes out whole."""
    (tmp_path / "a.py").write_text(BODY)
    provider = _script(
        call("read", id="r1", path="a.py"),
        *(call("ls", id=f"l{i}", path=".") for i in range(5)),
    )
    manager = AutoCompaction(
        ContextMonitor(
            ModelLimits(context_window=200_000, max_output_tokens=4_000), CompactionPolicy()
        ),
        restore_budget_tokens=0,
    )
    agent = make_agent(provider, tmp_path, builtins=True, compaction=manager)
    await agent.run("work on a.py")
    cast("list[Response]", provider.script).extend([Reply(blocks=(TextBlock(text="summary"),))])
    assert await agent.compact_now()
    cast("list[Response]", provider.script).extend(
        [Reply(blocks=(call("read", id="r2", path="a.py"),)), Reply(blocks=(TextBlock(text="ok"),))]
    )
    await agent.run("again")
    compaction = agent.parts.compaction
    assert compaction is not None and compaction.reads is not None
    assert "r2" in compaction.reads.unchanged  # the map: same mtime and size
    last = provider.requests[-1]
    assert "line 5 of the file" in _result(last, "r2").text  # ... but sent whole
    assert all(r.tool_call_id != "r1" for t in last.messages for r in t.tool_results)
