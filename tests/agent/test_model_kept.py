"""A model the user switched to during a session (the TUI's `/model`) is the session's: a
resume without `--model` runs on it again, as it does with the effort (the third trial: after
`/model gw/m2`, `tether run -c` went back to `gw/m`); a model pinned at the resume wins; one
that no longer resolves falls back to the settings' with a note."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from kit.faultserver import FaultServer, text
from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.session import SessionStore


def test_a_switched_model_is_the_resumed_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GWKEY", "k")
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    store = SessionStore(tmp_path / "sessions")
    notes: list[str] = []
    with FaultServer([text("one"), text("two"), text("three"), text("four")]) as server:
        entry = {"type": "openai", "base_url": server.openai_url, "api_key_env": "GWKEY"}
        (config / "settings.json").write_text(
            json.dumps({"model": "gw/m", "providers": {"gw": entry}})
        )
        session = AgentSession.new(store, cwd=tmp_path)
        agent = Agent.from_settings(tmp_path, session=session)
        agent.switch_model("gw/m2")
        asyncio.run(agent.run("hi"))
        sid = session.id
        assert sid is not None
        session.close()
        again = Agent.from_settings(tmp_path, session=AgentSession.resume(store, sid))
        assert again.provider.model == "m2"
        asyncio.run(again.run("and again"))
        again.session.close()
        pinned = Agent.from_settings(
            tmp_path, model="gw/m", session=AgentSession.resume(store, sid)
        )
        assert pinned.provider.model == "m"
        pinned.session.close()
        models = [r["body"]["model"] for r in server.requests]
        assert models == ["m2", "m2"]
        # the stored model no longer resolves: the settings' model, said so
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        (config / "settings.json").write_text(
            json.dumps({"model": "openai/m", "providers": {}})
        )
        fallback = Agent.from_settings(
            tmp_path,
            session=AgentSession.resume(store, sid),
            host=Host(note=notes.append),
            base_url=None,
        )
        assert fallback.provider.model == "m"
        assert any("the session's model gw/m2 cannot be used" in n for n in notes), notes
