"""The safety net inside a run, over the scripted provider: checkpoints and a rewind of their
session, permission rules in the gate (headless deny / ask, always allow), calls of one reply
that touch the same thing run in order, the todo event and its restore after a compaction, the
budget, plan mode."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.agent.events import (
    AgentEvent,
    CheckpointEvent,
    PlanEvent,
    TodoEvent,
    ToolResultEvent,
    WarningEvent,
)
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.turn.checkpoints import STOP_HOOK_PREFIX, checkpoint_store, synthetic_user_turn
from tether.agent.turn.plan import PLAN_MODE_REMINDER
from tether.agent.turn.stop_hooks import STOP_DENIED
from tether.checkpoint.rewind import RewindError, plan_rewind, rewind, turn_rows
from tether.messages import Turn, Usage
from tether.session import SessionStore
from tether.testing import Reply, ScriptedProvider, call, deterministic
from tether.tools.base import tool
from tether.tools.builtin.toolset import builtin_tools


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def agent_for(
    root: Path,
    script: list[Any],
    *,
    store: SessionStore | None = None,
    config: dict[str, Any] | None = None,
    events: list[AgentEvent] | None = None,
    tools: list[Any] | None = None,
    approver: Any = None,
    provider: ScriptedProvider | None = None,
) -> tuple[Agent, ScriptedProvider]:
    provider = provider or ScriptedProvider(script)
    session = AgentSession.new(store, cwd=root) if store is not None else None
    agent = Agent(
        provider,
        config=AgentConfig.model_validate({"tools": {"approval": "auto"}, **(config or {})}),
        tools=tools if tools is not None else builtin_tools(),
        root=root,
        session=session,
        host=Host(on_event=(events.append if events is not None else None), approver=approver),
        runtime=deterministic(),
    )
    return agent, provider


# -- checkpoints and rewind -----------------------------------------------------------------


async def test_each_turn_is_checkpointed_and_a_rewind_restores_files_and_forks(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "keep.txt").write_text("original")
    store = SessionStore(tmp_path / "data" / "sessions")
    events: list[AgentEvent] = []
    script = [
        call("write", path="a.txt", content="one"), "wrote a",
        call("edit", path="keep.txt", old_string="original", new_string="changed"), "edited",
        "just talking",
        call("write", path="sub/b.txt", content="two"), "wrote b",
    ]
    agent, _ = agent_for(root, script, store=store, events=events)
    for prompt in ("make a", "change keep", "hello", "make b"):
        await agent.run(prompt)
    agent.session.close()
    sid = agent.session.id
    assert sid is not None
    kinds = [(e.at, e.turn_id is not None) for e in events if isinstance(e, CheckpointEvent)]
    assert kinds.count(("before", True)) == 3 and ("after", False) in kinds
    loaded = store.load(sid)
    cp = checkpoint_store(store.root)
    rows = turn_rows(loaded, plan_rewind(loaded, 1, store=cp).repo, synthetic_user_turn)
    assert [r.turn.number for r in rows] == [1, 2, 3, 4]
    assert rows[0].changed == ("a.txt",) and rows[1].changed == ("keep.txt",)
    assert rows[2].changed == () and rows[3].changed == ("sub/b.txt",)

    (root / "notes.md").write_text("mine")  # a change made outside tether since
    done = rewind(plan_rewind(loaded, 2, store=cp, synthetic=synthetic_user_turn), store)
    assert files(root) == {"a.txt": "one", "keep.txt": "original", "notes.md": "mine"}
    assert done.session_id is not None and done.prompt == "change keep"
    fork = store.load(done.session_id)
    assert len(fork.turns) < len(loaded.turns)
    assert fork.turns == loaded.turns[: len(fork.turns)]
    assert len(store.load(sid).turns) == len(loaded.turns)  # the original is kept

    done = rewind(plan_rewind(store.load(sid), 1, store=cp), store, force=False)
    assert files(root) == {"keep.txt": "original", "notes.md": "mine"}
    assert done.report is not None and done.report.removed == ("a.txt",)


async def test_the_turns_snapshot_is_taken_while_the_model_answers(tmp_path: Path) -> None:
    """The snapshot before a user turn's first change starts as the turn's request goes out:
    the shadow repository has its commit before the model's reply (which asks for a write)
    arrives, that commit holds the folder before the write, and the checkpoint recorded for
    the turn names it. A turn without a change records nothing."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "keep.txt").write_text("original")
    store = SessionStore(tmp_path / "data" / "sessions")
    cp = checkpoint_store(store.root)
    seen: list[bool] = []

    def head_exists() -> bool:
        return any(cp.glob("*/refs/heads/main"))

    def reply(request: Any) -> Any:
        if len(request.messages) == 1:  # the first request: wait for the snapshot (≤ 10 s)
            deadline = time.monotonic() + 10
            while not head_exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(head_exists())
            return call("write", path="keep.txt", content="changed")
        return "done"

    events: list[AgentEvent] = []
    agent, _ = agent_for(root, [], store=store, events=events, provider=ScriptedProvider(reply))
    await agent.run("change keep")
    assert seen == [True]  # taken before the reply came, not after it
    (before,) = [e for e in events if isinstance(e, CheckpointEvent) and e.at == "before"]
    (repo_dir,) = [p.parent.parent.parent for p in cp.glob("*/refs/heads/main")]
    from tether.checkpoint.shadow import ShadowRepo

    repo = ShadowRepo(root, store=cp)
    assert repo.git_dir == repo_dir
    assert repo.files(before.commit) == {"keep.txt": b"original"}
    assert (root / "keep.txt").read_text() == "changed"

    talk, _ = agent_for(root, ["just talking"], store=store, events=(quiet := []))
    await talk.run("hello")
    await asyncio.sleep(0.2)  # the early snapshot's thread has ended
    assert not [e for e in quiet if isinstance(e, CheckpointEvent)]


async def test_files_changed_outside_tether_are_kept_unless_forced(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    store = SessionStore(tmp_path / "data" / "sessions")
    agent, _ = agent_for(root, [call("write", path="a.txt", content="agent"), "ok"], store=store)
    await agent.run("write a")
    agent.session.close()
    (root / "a.txt").write_text("the user's own edit")
    loaded = store.load(agent.session.id or "")
    cp = checkpoint_store(store.root)
    done = rewind(plan_rewind(loaded, 1, store=cp, conversation=False), store)
    assert done.report is not None and done.report.kept == ("a.txt",)
    assert (root / "a.txt").read_text() == "the user's own edit"
    done = rewind(plan_rewind(store.load(loaded.header.id), 1, store=cp, conversation=False), store, force=True)
    assert not (root / "a.txt").exists()


async def test_bad_rewinds_change_nothing(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    store = SessionStore(tmp_path / "data" / "sessions")
    agent, _ = agent_for(root, ["just an answer"], store=store)
    await agent.run("hi")
    agent.session.close()
    loaded = store.load(agent.session.id or "")
    cp = checkpoint_store(store.root)
    with pytest.raises(RewindError, match="no checkpoint"):
        plan_rewind(loaded, 1, store=cp)
    with pytest.raises(RewindError, match="outside"):
        plan_rewind(loaded, 5, store=cp, files=False)
    done = rewind(plan_rewind(loaded, 1, store=cp, files=False), store)  # conversation only
    assert done.session_id is not None and store.load(done.session_id).turns == ()


def test_the_stop_hook_prefix_matches_the_loop() -> None:
    assert STOP_DENIED.startswith(STOP_HOOK_PREFIX)


# -- permission rules ---------------------------------------------------------------------


async def test_headless_deny_and_ask_rules_refuse_naming_the_rule(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    script = [
        Reply(blocks=(call("write", path="x.env", content="k"), call("write", path="ok.txt", content="y"))),
        "done",
    ]
    agent, _ = agent_for(
        tmp_path, script, events=events,
        config={"permissions": {"deny": ["write(*.env)"], "ask": ["write(ok.txt)"]}},
    )
    await agent.run("go")
    results = {e.name + ":" + e.content[:40]: e for e in events if isinstance(e, ToolResultEvent)}
    texts = [e.content for e in events if isinstance(e, ToolResultEvent)]
    assert "denied by the permission rule write(*.env)" in texts[0]
    assert "move write(ok.txt) to permissions.allow" in texts[1]
    assert results and not (tmp_path / "x.env").exists() and not (tmp_path / "ok.txt").exists()


async def test_an_allow_rule_skips_the_prompt_and_always_allow_adds_one(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.always(request.suggested)

    script = [
        call("write", path="src/a.py", content="1"),
        call("write", path="lib/b.py", content="2"),
        call("write", path="lib/c.py", content="3"),
        "done",
    ]
    agent, _ = agent_for(
        tmp_path, script, approver=approver,
        config={"tools": {"approval": "ask"}, "permissions": {"allow": ["write(src/**)"]}},
    )
    await agent.run("go")
    assert [r.call.arguments["path"] for r in asked] == ["lib/b.py"]  # src allowed; lib/c by the new rule
    assert asked[0].suggested == ("write(lib/**)",)
    assert (tmp_path / "lib" / "c.py").read_text() == "3"


# -- order of the calls of one reply --------------------------------------------------------


async def test_calls_that_touch_the_same_thing_run_in_order_the_rest_in_parallel(tmp_path: Path) -> None:
    spans: dict[str, tuple[float, float]] = {}

    def timed(name: str, *, safe: bool) -> Any:
        async def body(key: str) -> str:
            start = time.perf_counter()
            await asyncio.sleep(0.05)
            spans[key] = (start, time.perf_counter())
            return key

        return tool(body, name=name, safe=safe)

    tools = [timed("look", safe=True), timed("act", safe=False)]
    script = [
        Reply(blocks=(call("look", key="l1"), call("look", key="l2"), call("act", key="a1"), call("act", key="a2"), call("look", key="l3"))),
        "done",
    ]
    agent, _ = agent_for(tmp_path, script, tools=tools)
    await agent.run("go")

    def overlap(a: str, b: str) -> bool:
        return spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]

    assert overlap("l1", "l2")  # read-only calls in parallel
    assert spans["a1"][0] >= spans["l2"][1] and spans["a2"][0] >= spans["a1"][1]
    assert spans["l3"][0] >= spans["a2"][1]  # after the writer before it


# -- todo -------------------------------------------------------------------------------------


async def test_the_todo_list_is_an_event_and_is_restored_after_a_compaction(tmp_path: Path) -> None:
    from tether.agent.turn.compacting import AutoCompaction
    from tether.compaction.monitor import ContextMonitor
    from tether.compaction.pressure import ModelLimits
    from tether.compaction.summarize import CompactionResult  # noqa: F401  # pyright: ignore[reportUnusedImport]

    events: list[AgentEvent] = []
    items = [{"text": "write tests", "status": "done"}, {"text": "fix bug", "status": "in_progress"}]
    long = [c * 800 for c in "abc"]  # so that the summary is shorter than what it replaces
    script = [call("todo", items=items), "noted", *long, "after"]
    provider = ScriptedProvider(script)

    async def compactor(turns: Sequence[Turn], previous_summary: str | None, focus: str | None) -> str:
        return "summary"

    compaction = AutoCompaction(
        ContextMonitor(ModelLimits(context_window=100_000, max_output_tokens=1000)),
        compactor=compactor, keep_turns=1,
    )
    agent = Agent(
        provider, tools=builtin_tools(), root=tmp_path, host=Host(on_event=events.append),
        runtime=deterministic(), compaction=compaction,
    )
    await agent.run("plan it")
    todo = [e for e in events if isinstance(e, TodoEvent)]
    assert todo and todo[-1].items == tuple(items)
    for p in ("x", "y", "z"):
        await agent.run(p)
    assert await agent.compact_now()
    await agent.run("go on")  # restated before the next request (`TodoRestatement`)
    restored = [c for t in agent.history[-4:-1] for c in t.tool_calls if c.name == "todo"]
    assert restored and restored[0].arguments["items"] == items


# -- budget -------------------------------------------------------------------------------------


async def test_the_run_stops_before_a_request_that_would_pass_the_budget(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    usage = Usage(input_tokens=1_000, output_tokens=30_000)  # $0.453 on claude-sonnet-4-5
    provider = ScriptedProvider(
        [call("read", path="."), call("read", path="."), "done"],
        model="claude-sonnet-4-5", usage=usage,
    )
    agent, _ = agent_for(tmp_path, [], events=events, config={"run": {"max_budget_usd": 0.5}}, provider=provider)
    result = await agent.run("go")
    assert result.stop_reason == "max_budget" and len(provider.requests) == 1
    assert any(isinstance(e, WarningEvent) and e.kind == "max_budget" for e in events)


async def test_an_unpriced_model_warns_that_the_cap_cannot_hold(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    agent, _ = agent_for(tmp_path, ["hi"], events=events, config={"run": {"max_budget_usd": 1}})
    result = await agent.run("go")
    assert result.stop_reason == "end_turn"
    assert [e.kind for e in events if isinstance(e, WarningEvent)] == ["budget_unpriced"]


# -- plan mode ----------------------------------------------------------------------------------


async def test_plan_mode_offers_only_safe_tools_and_ends_with_a_plan(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    script = [call("write", path="x.txt", content="no"), "1. do this\n2. then that"]
    agent, provider = agent_for(tmp_path, script, events=events)
    agent.set_plan_mode(True)
    await agent.run("add a feature")
    names = {t.name for t in provider.requests[0].tools}
    assert "write" not in names and "read" in names and "todo" in names
    assert provider.requests[0].messages[-1].content[-1].text == PLAN_MODE_REMINDER  # type: ignore[union-attr]
    assert not (tmp_path / "x.txt").exists()
    refusal = agent.history[2].tool_results[0].text  # the write, refused: in plan mode's words
    assert "plan mode" in refusal and "safe mode" not in refusal, refusal
    plans = [e for e in events if isinstance(e, PlanEvent)]
    assert [p.text for p in plans] == ["1. do this\n2. then that"]
    agent.set_plan_mode(False)
    provider.script.append("ok")  # type: ignore[attr-defined]
    await agent.run("approved: do it")
    assert "write" in {t.name for t in provider.requests[-1].tools}


def test_a_conversation_rewind_keeps_the_model_switched_before_its_point(tmp_path: Path) -> None:
    # the third trial: `/model gw/m2`, a message on m2, Esc Esc to before that message: the fork
    # (and the TUI, which opens it) was back on the settings' model, the switch lost
    from tether.agent.sessions import MODEL_EVENT, stored_model
    from tether.messages import text_turn

    store = SessionStore(tmp_path / "sessions")
    writer = store.create(cwd=str(tmp_path))
    writer.append_event(MODEL_EVENT, {"model": "gw/m1"})  # before the first message
    writer.append(text_turn("u1", "user", "first"))
    writer.append(text_turn("a1", "assistant", "one"))
    writer.append_event(MODEL_EVENT, {"model": "gw/m2"})  # between the two messages
    writer.append(text_turn("u2", "user", "second, on m2"))
    writer.append(text_turn("a2", "assistant", "two"))
    writer.append_event(MODEL_EVENT, {"model": "gw/m3"})  # after the rewind point
    writer.append(text_turn("u3", "user", "third, on m3"))
    writer.close()
    loaded = store.load(writer.id)
    cp = checkpoint_store(store.root)
    for to, model, kept in ((2, "gw/m2", ["u1", "a1"]), (1, "gw/m1", [])):
        plan = plan_rewind(loaded, to, store=cp, files=False, conversation=True)
        done = rewind(plan, store)
        assert done.session_id is not None
        fork = store.load(done.session_id)
        assert [t.id for t in fork.turns] == kept
        assert stored_model(fork.events) == model, to
        fork_of_fork = rewind(plan_rewind(fork, 1, store=cp, files=False), store) if kept else None
        if fork_of_fork is not None and fork_of_fork.session_id is not None:
            assert stored_model(store.load(fork_of_fork.session_id).events) == "gw/m1"
