"""`tether chat --resume ID` of a session started in another folder asks where to open it: there
(its own folder, first) or here; Esc quits with nothing opened. It ran here with no word, its
tools on a folder the conversation never saw (Claude Code refuses and prints `cd DIR && claude
--resume ID`; asking does that step for you)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.tui import SIZE, until
from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.messages import text_turn
from tether.session import SessionStore
from tether.testing import ScriptedProvider
from tether.tui.app import TetherApp
from tether.tui.opening import Opened, other_folder
from tether.tui.pickers import PickerScreen


def setup(tmp_path: Path) -> tuple[SessionStore, str, Path, Path]:
    there, here = tmp_path / "there", tmp_path / "here"
    there.mkdir()
    here.mkdir()
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(cwd=str(there))
    writer.append(text_turn("u1", "user", "fix the bug in there.py"))
    writer.append(text_turn("a1", "assistant", "fixed"))
    writer.close()
    return store, writer.id, there, here


def app_for(store: SessionStore, sid: str, here: Path, roots: list[Path]) -> TetherApp:
    def factory(host: Host, resume: str | None) -> Opened:
        root = app.open_in or here  # as `run_tui`'s factory does
        roots.append(root)
        loaded = store.load(resume) if resume else None
        agent = Agent(
            ScriptedProvider([]),
            tools=[],
            root=root,
            host=host,
            session=AgentSession(
                history=loaded.turns if loaded else (),
                sink=store.open_for_append(resume) if resume else None,
                loaded=loaded,
            ),
        )
        return Opened(agent, agent.session.writer, store=store)

    app = TetherApp(
        factory, resume=sid, elsewhere=lambda r: other_folder(store.list(), r, here)
    )
    return app


async def test_it_asks_and_opens_the_session_in_its_own_folder(tmp_path: Path) -> None:
    store, sid, there, here = setup(tmp_path)
    roots: list[Path] = []
    app = app_for(store, sid, here, roots)
    app.preopen()  # as `run_tui` does: nothing is built before the answer
    assert roots == []
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        assert isinstance(app.screen, PickerScreen)
        assert "was started in another folder" in app.screen.title_text
        await pilot.press("enter")  # the first choice: there
        await until(pilot, lambda: app.opened is not None)
        assert roots == [there] and app.agent.root == there.resolve()
        await app.action_quit()


async def test_here_is_the_second_choice_and_esc_opens_nothing(tmp_path: Path) -> None:
    store, sid, _there, here = setup(tmp_path)
    roots: list[Path] = []
    app = app_for(store, sid, here, roots)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("down", "enter")
        await until(pilot, lambda: app.opened is not None)
        assert roots == [here]
        await app.action_quit()
    roots.clear()
    app = app_for(store, sid, here, roots)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("escape")
        await until(pilot, lambda: app.return_code is not None)
    assert roots == [] and app.return_code == 0


def test_a_session_of_this_folder_or_of_a_folder_gone_is_not_asked_about(tmp_path: Path) -> None:
    store, sid, there, here = setup(tmp_path)
    assert other_folder(store.list(), sid, here) == (there, here)
    assert other_folder(store.list(), sid, there) is None
    assert other_folder(store.list(), "no-such-session", here) is None
    there.rmdir()
    assert other_folder(store.list(), sid, here) is None


async def test_opened_here_the_transcript_says_where_it_was_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.tui.opening import ChatOptions, open_agent

    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-chat-test")
    store = SessionStore()  # the one `open_agent` uses (TETHER_HOME)
    there, here = tmp_path / "there", tmp_path / "here"
    there.mkdir()
    here.mkdir()
    writer = store.create(cwd=str(there))
    writer.append(text_turn("u1", "user", "hello"))
    writer.close()
    notes: list[str] = []
    options = ChatOptions(model="openai/m", base_url="http://127.0.0.1:9/v1", cwd=here)
    opened = open_agent(options, Host(note=notes.append), writer.id)
    try:
        said = [n for n in notes if "was started in" in n]
        assert said == [
            f"note: session {writer.id} was started in {there}; its tools work here, in "
            f"{here.resolve()}"
        ]
    finally:
        await opened.aclose()
