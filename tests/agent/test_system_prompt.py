"""The default system prompt through the front door: byte-identical over 50 turns, a resume and
a compaction (prompt caching); the facts stored as the session's `context` event; subfolder
instruction files as a note after the result that touched the folder; the compact form for
the embedded model."""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.compaction.prompt import SUMMARY_SYSTEM
from tether.messages import TextBlock
from tether.prompt import gather
from tether.prompt.facts import CONTEXT_EVENT
from tether.providers.base import ModelRequest
from tether.providers.catalog import ModelInfo
from tether.session import SessionStore
from tether.testing import Response, ScriptedProvider, call


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "data"))
    root = tmp_path / "app"
    (root / "api").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "AGENTS.md").write_text("Run `make test` before you finish.\n")
    (root / "api" / "AGENTS.md").write_text("API handlers return JSON.\n")
    (root / "api" / "h.py").write_text("def h(): ...\n")
    skill = root / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: Cuts a release.\n---\nTag it.\n")
    return root


def script(turns: int):
    """`ls` calls until `turns` requests of the main conversation, then an answer; summary
    requests get a summary."""
    count = {"n": 0}

    def answer(request: ModelRequest) -> Response:
        if request.system == SUMMARY_SYSTEM:
            return "<summary>listed the folder many times</summary>"
        count["n"] += 1
        return call("ls", path=".") if count["n"] % turns else "done"

    return answer


def test_fifty_turns_a_resume_and_a_compaction_send_the_same_system_prompt(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore()
    provider = ScriptedProvider(script(50))
    session = AgentSession.new(store, cwd=project)
    agent = Agent.from_settings(project, model=provider, session=session, overrides={"run.max_turns": 60})
    result = agent.run_sync("list the folder fifty times")
    assert result.turns == 50
    assert asyncio.run(agent.compact_now("keep the count"))
    session.close()
    sid = session.id
    assert sid is not None
    loaded = store.load(sid)
    stored = [e for e in loaded.events if e.kind == CONTEXT_EVENT]
    assert len(stored) == 1 and stored[0].data["environment"]["date"] == date.today().isoformat()
    # the next day, with the tree changed: a resume still sends the bytes of the first request
    monkeypatch.setattr(gather, "date", type("D", (), {"today": staticmethod(lambda: date(2031, 1, 1))}))
    (project / "new.txt").write_text("dirty now")
    (project / "AGENTS.md").write_text("Changed rules.\n")
    notes: list[str] = []
    resumed = AgentSession.resume(store, sid)
    again = Agent.from_settings(project, model=provider, session=resumed, host=Host(note=notes.append))
    again.run_sync("once more")
    resumed.close()
    systems = {r.system for r in provider.requests if r.system != SUMMARY_SYSTEM}
    assert len(systems) == 1
    (system,) = systems
    assert system is not None and "Run `make test`" in system and "2031" not in system
    assert "- release: Cuts a release." in system and "uncommitted" not in system
    assert any("AGENTS.md changed since this session started" in n for n in notes)
    assert len([e for e in store.load(sid).events if e.kind == CONTEXT_EVENT]) == 1


def test_a_subfolder_file_reaches_the_model_after_the_result_that_touched_it(project: Path) -> None:
    replies: list[Response] = [call("read", path="api/h.py"), call("read", path="api/h.py"), "ok"]
    provider = ScriptedProvider(replies)
    agent = Agent.from_settings(project, model=provider)
    agent.run_sync("look at the handler")
    after_first = provider.requests[1].messages[-1]
    texts = [b.text for b in after_first.content if isinstance(b, TextBlock)]
    assert any(t.startswith("<system-reminder>\nInstruction file api/AGENTS.md") and "return JSON" in t for t in texts)
    after_second = provider.requests[2].messages[-1]
    assert not any(isinstance(b, TextBlock) for b in after_second.content)  # once
    assert provider.requests[0].system == provider.requests[2].system


class CompactScripted(ScriptedProvider):
    """A scripted model that takes the compact prompt, as the embedded model declares it."""

    @property
    def info(self) -> ModelInfo:
        return replace(super().info, compact_prompt=True)


def test_the_skill_tool_is_offered_and_the_compact_form_goes_to_the_embedded_model(project: Path) -> None:
    provider = ScriptedProvider(["hi"])
    agent = Agent.from_settings(project, model=provider, system="Be a reviewer.")
    assert "skill" in agent.registry.names()
    assert agent.system is not None and agent.system.startswith("Be a reviewer.\n\n# Instruction files")
    assert "# Environment" not in agent.system
    local_like = CompactScripted(["hi"])
    agent.switch_model(local_like)
    agent.run_sync("hello")
    sent = local_like.requests[0].system
    assert sent is not None and sent.startswith("Be a reviewer.") and len(sent) < len(agent.system)
    assert "Run `make test`" in sent and "release" in sent
