"""trial5: a rewind did not restore a gitignored file the agent changed with its own `write`
(snapshots skip ignored files) and said nothing. It now names every such file among the ones
it could not restore (`refused`, which `sessions rewind` prints and puts in its JSON line)."""

from __future__ import annotations

from pathlib import Path

from kit.sandbox import sandbox_or_skip
from tether import Agent, AgentConfig
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.turn.checkpoints import checkpoint_store, synthetic_user_turn
from tether.checkpoint.rewind import plan_rewind, rewind
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools


async def test_a_rewind_names_the_gitignored_file_the_agent_wrote(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / ".gitignore").write_text("local.cfg\n")
    (root / "local.cfg").write_text("secret=orig\n")
    (root / "kept.cfg").write_text("x\n")
    store = SessionStore(tmp_path / "data" / "sessions")
    script = [
        call("write", path="local.cfg", content="secret=CHANGED\n"),
        call("write", path="a.txt", content="b\n"),
        "done",
    ]
    config = AgentConfig.model_validate(
        {"tools": {"approval": "auto", "sandbox": sandbox_or_skip()}}
    )
    agent = Agent(
        ScriptedProvider(script),  # type: ignore[arg-type]
        config=config,
        tools=builtin_tools(),
        root=root,
        session=AgentSession.new(store, cwd=root),
        host=Host(),
        runtime=deterministic(),
    )
    await agent.run("change the config")
    agent.session.close()
    sid = agent.session.id
    assert sid is not None
    plan = plan_rewind(
        store.load(sid), 1, store=checkpoint_store(store.root), synthetic=synthetic_user_turn
    )
    done = rewind(plan, store)
    assert done.report is not None
    assert not (root / "a.txt").exists() and "a.txt" in done.report.removed
    refused = dict(done.report.refused)
    assert "local.cfg" in refused and "gitignored" in refused["local.cfg"]
    assert "a.txt" not in refused and ".gitignore" not in refused
