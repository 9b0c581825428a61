"""`tether chat` opens the agent `tether run` builds, MCP servers included, and starts them once:
through the agent (`Agent.start`), not a second set of connections beside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.agent.approval import ApprovalDecision, ApprovalRequest
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.sandbox.detect import detect_sandbox
from tether.settings.trust import approve
from tether.tui.opening import ChatOptions, open_agent

DEMO = Path(__file__).resolve().parents[1] / "mcp" / "demo_server.py"

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(detect_sandbox() is None, reason="no OS sandbox on this machine"),
]


class NoQuestions:
    async def ask(self, questions: Any) -> Any:
        raise AssertionError("not asked")


async def allow(_request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.once()


async def test_chat_starts_the_projects_mcp_servers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-chat-test")
    root = tmp_path / "proj"
    (root / ".tether").mkdir(parents=True)
    (root / "marks").mkdir()
    server = {
        "command": sys.executable,
        "args": [str(DEMO)],
        "env": {"MARK_DIR": str(root / "marks")},
    }
    settings = {"mcp": {"servers": {"demo": server}}}
    (root / ".tether" / "settings.json").write_text(json.dumps(settings))
    approve(root)
    events: list[AgentEvent] = []
    notes: list[str] = []
    hooks = Host(
        on_event=events.append, questions=NoQuestions(), approver=allow, note=notes.append
    )
    opened = open_agent(
        ChatOptions(model="openai/m", base_url="http://127.0.0.1:9/v1", cwd=root, no_session=True),
        hooks,
    )
    try:
        await opened.start()
        names = opened.agent.registry.names()
        assert [n for n in names if n.startswith("mcp__demo__add")] == ["mcp__demo__add"], names
        await opened.start()  # idempotent in the same loop
        assert opened.agent.registry.names() == names
    finally:
        await opened.aclose()
    assert not any(n.startswith("mcp__") for n in opened.agent.registry.names())
