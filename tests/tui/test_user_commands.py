"""The session's own commands in the TUI (prompt files and skills), the completion list,
`/init`, `/memory` and what `/context` says the system prompt is made of."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kit.tui import SIZE, idle, notes, send, until
from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.prompt.facts import Environment, InstructionFile, SessionContext, SkillEntry
from tether.providers.base import ModelRequest
from tether.skills.commands import load_commands
from tether.testing import ScriptedProvider, deterministic
from tether.tools.builtin.toolset import builtin_tools
from tether.tui.app import TetherApp
from tether.tui.opening import Opened
from tether.tui.panels import ContextScreen
from tether.tui.user_commands import (
    INIT_PROMPT,
    MAX_COMPLETIONS,
    CompletionList,
    completion_lines,
)
from tether.tui.widgets import PromptInput


def app_with_commands(tmp_path: Path) -> tuple[TetherApp, ScriptedProvider, Path]:
    user = tmp_path / "cfg"
    (user / "commands").mkdir(parents=True)
    (user / "commands" / "greet.md").write_text(
        "---\ndescription: Greets someone\nargument-hint: NAME\n---\nSay hello to $1, warmly."
    )
    skill = tmp_path / "skills" / "pdf"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: pdf\ndescription: Fills PDF forms.\n---\nFill $ARGUMENTS.\n")
    agents_md = tmp_path / "AGENTS.md"
    agents_md.write_text("Be brief.\n")
    context = SessionContext(
        environment=Environment(cwd=str(tmp_path), platform="Linux", date="2026-12-03"),
        instructions=(
            InstructionFile(path=str(agents_md), name="AGENTS.md", scope="project", sha256="x",
                            size_bytes=10, text="Be brief."),
        ),
        skills=(SkillEntry(name="pdf", description="Fills PDF forms.", location=str(skill / "SKILL.md")),),
    )
    provider = ScriptedProvider(lambda _r: "done")
    commands = load_commands(tmp_path, user_dir=user, project_trusted=False, skills=context.skills)

    def factory(host: Host, _resume: str | None) -> Opened:
        agent = Agent(
            provider,
            config=AgentConfig.model_validate({"tools": {"approval": "auto"}}),
            tools=builtin_tools(),
            root=tmp_path,
            host=host,
            session=AgentSession(context=context),
            runtime=deterministic(),
        )
        return Opened(agent, commands=commands)

    return TetherApp(factory), provider, agents_md


def last_user_text(request: ModelRequest) -> str:
    return request.messages[-1].text


def test_completion_lines() -> None:
    table = [("/compact", "[focus]", "summarize"), ("/context", "", "what fills"), ("/greet", "NAME", "Greets (user)")]
    assert completion_lines("/co", table) == ["/compact [focus]  summarize", "/context  what fills"]
    assert completion_lines("/greet x", table) == [] and completion_lines("hello", table) == []
    many = [(f"/c{i}", "", "d") for i in range(12)]
    assert completion_lines("/c", many)[-1] == "… 4 more"


async def test_typing_a_slash_lists_commands_with_hints_and_descriptions(tmp_path: Path) -> None:
    app, _, _ = app_with_commands(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "/g"
        await pilot.pause()
        shown = str(app.query_one(CompletionList).render())
        assert app.query_one(CompletionList).display
        assert "/greet NAME  Greets someone (user)" in shown
        prompt.text = "/"
        await pilot.pause()
        shown = str(app.query_one(CompletionList).render())
        more = len(app.command_table()) - MAX_COMPLETIONS  # the built-in ones and the session's
        assert "/compact [focus]" in shown and f"… {more} more" in shown
        prompt.text = "/greet Ada"  # past the name: arguments, no list
        await pilot.pause()
        assert not app.query_one(CompletionList).display
        prompt.text = "/gr"
        await pilot.press("tab")
        assert prompt.text == "/greet"


async def test_a_prompt_file_and_a_skill_run_as_commands_and_init_asks_for_agents_md(tmp_path: Path) -> None:
    app, provider, _ = app_with_commands(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/greet Ada")
        await idle(app, pilot)
        assert last_user_text(provider.requests[-1]) == "Say hello to Ada, warmly."
        await send(pilot, "/pdf tax.pdf")
        await idle(app, pilot)
        assert "Fill tax.pdf." in last_user_text(provider.requests[-1])
        await send(pilot, "/init")
        await idle(app, pilot)
        assert last_user_text(provider.requests[-1]) == INIT_PROMPT
        n = len(provider.requests)
        await send(pilot, "/nope")
        assert "unknown command /nope" in notes(app) and len(provider.requests) == n


async def test_memory_opens_the_files_in_the_editor_and_context_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nfor f in "$@"; do echo "Edited." >> "$f"; done\n')
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app, _, agents_md = app_with_commands(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/memory")
        await pilot.pause()
        assert agents_md.read_text() == "Be brief.\nEdited.\n"
        text = notes(app)
        assert "AGENTS.md  10 bytes" in text and f"changed: {agents_md}" in text
        await send(pilot, "/context")
        assert isinstance(app.screen, ContextScreen)
        sources = "\n".join(app.screen.sources)
        assert "instruction files: AGENTS.md (10 bytes)" in sources and "skills: pdf" in sources


async def test_a_new_session_opens_on_the_welcome_panel_gone_at_the_first_message(
    tmp_path: Path,
) -> None:
    from tether.tui.welcome import TIPS, Welcome

    app, _, _ = app_with_commands(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app.query(Welcome)))
        text = str(app.query_one(Welcome).render())
        assert f"folder    {tmp_path}" in text and "model     scripted/scripted" in text
        assert "approval  auto" in text and "loaded    AGENTS.md" in text
        assert "skills    pdf" in text and "git       not a git repository" in text
        assert all(tip in text for tip in TIPS)
        await send(pilot, "/help")  # a command keeps it
        assert app.query(Welcome)
        await send(pilot, "hello")
        await idle(app, pilot)
        assert not app.query(Welcome)
