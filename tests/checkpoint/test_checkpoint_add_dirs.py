"""Extra folders (`tools.add_dirs`) in a run: checkpoints snapshot them with the working
folder and a rewind restores them; the system prompt's environment block lists them; one added
mid-session (`apply_settings`, what `/add-dir` does) takes effect from the next call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kit.sandbox import sandbox_or_skip
from tether import Agent, AgentConfig
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.turn.checkpoints import checkpoint_store, synthetic_user_turn
from tether.checkpoint.rewind import plan_rewind, rewind
from tether.errors import ConfigError
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools


def agent_for(root: Path, script: Sequence[Response], store: SessionStore, add_dirs: list[str]) -> Agent:
    config = AgentConfig.model_validate(
        {"tools": {"approval": "auto", "sandbox": sandbox_or_skip(), "add_dirs": add_dirs}}
    )
    return Agent(
        ScriptedProvider(script),  # type: ignore[arg-type]
        config=config,
        tools=builtin_tools(),
        root=root,
        session=AgentSession.new(store, cwd=root),
        host=Host(),
        runtime=deterministic(),
    )


async def test_a_rewind_restores_a_change_in_an_extra_folder(tmp_path: Path) -> None:
    root, extra = tmp_path / "work", tmp_path / "lib"
    root.mkdir()
    extra.mkdir()
    (extra / "api.py").write_text("v1\n")
    store = SessionStore(tmp_path / "data" / "sessions")
    script = [
        call("edit", path=str(extra / "api.py"), old_string="v1", new_string="v2"),
        call("bash", command=f"echo made > {extra}/new.txt"),
        "changed the library",
    ]
    agent = agent_for(root, script, store, [str(extra)])
    await agent.run("change the library")
    agent.session.close()
    assert (extra / "api.py").read_text() == "v2\n" and (extra / "new.txt").exists()
    sid = agent.session.id
    assert sid is not None
    loaded = store.load(sid)
    plan = plan_rewind(loaded, 1, store=checkpoint_store(store.root), synthetic=synthetic_user_turn)
    assert plan.target is not None and dict(plan.target.extra).keys() == {str(extra.resolve())}
    done = rewind(plan, store)
    assert (extra / "api.py").read_text() == "v1\n" and not (extra / "new.txt").exists()
    assert done.report is not None
    assert str(extra.resolve() / "new.txt") in done.report.removed


def test_the_environment_block_lists_them(tmp_path: Path) -> None:
    root, extra, ref = (tmp_path / n for n in ("work", "lib", "ref"))
    for d in (root, extra, ref):
        d.mkdir()
    agent = Agent.from_settings(
        root,
        model=ScriptedProvider([]),
        overrides={"tools.add_dirs": [str(extra), f"{ref}:ro"], "tools.sandbox": sandbox_or_skip()},
    )
    line = next(x for x in (agent.system or "").splitlines() if x.startswith("- Extra folders"))
    assert f"{extra.resolve()} (read-write)" in line and f"{ref.resolve()} (read-only)" in line


async def test_add_dir_applies_mid_session(tmp_path: Path) -> None:
    root, later = tmp_path / "work", tmp_path / "later"
    root.mkdir()
    later.mkdir()
    store = SessionStore(tmp_path / "data" / "sessions")
    target = str(later / "x.txt")
    script = [
        call("write", path=target, content="no"),
        "refused",
        call("write", path=target, content="yes"),
        "ok",
    ]
    agent = agent_for(root, script, store, [])
    await agent.run("write it")
    assert not (later / "x.txt").exists()
    with pytest.raises(ConfigError):
        agent.apply_settings({"tools.add_dirs": [str(tmp_path / "missing")]})
    agent.apply_settings({"tools.add_dirs": [str(later)]})
    await agent.run("again")
    assert (later / "x.txt").read_text() == "yes"
    agent.session.close()
