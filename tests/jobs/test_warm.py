"""What a worker keeps between task runs (`tether.jobs.warm`, `tether.agent.assembly.chains`): one
event loop per thread and the providers built on it. Runs through one `Warm` reuse the
providers, and nothing else: each run has its own session, history and tools; a changed
config or key builds new providers; tasks a run leaves behind are cancelled when it ends."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from kit import jobs as jobkit
from kit.jobs import LoopModel
from tether.agent.assembly.chains import ChainCache
from tether.jobs.parse import Task, parse_task
from tether.jobs.runner import run_task
from tether.jobs.warm import Warm
from tether.session.dbstore import DbSessionStore
from tether.settings import AgentConfig


def _task(name: str, prompt: str) -> dict[str, Any]:
    t = parse_task(f"{name}.md", prompt + "\n")
    assert isinstance(t, Task)
    return t.to_json()


def _project(tmp: Path, model: LoopModel, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = jobkit.project(tmp, model)
    for k, v in jobkit.env(tmp).items():
        monkeypatch.setenv(k, v)
    return root


def _user_text(body: Any) -> list[str]:
    return [json.dumps(m) for m in body.get("messages", []) if m.get("role") != "system"]


def test_two_runs_through_one_worker_thread_share_providers_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LoopModel() as model:
        root = _project(tmp_path, model, monkeypatch)
        store = DbSessionStore(f"sqlite:///{tmp_path / 'sessions.sqlite'}", tmp_path / "s")
        warm = Warm()
        try:
            alpha = _task("alpha", "alpha TOOL then answer")
            first = run_task(root, alpha, "once", project="p", store=store, warm=warm)
            second = run_task(root, _task("beta", "beta answer"), "once", project="p", store=store, warm=warm)
            assert warm.chains().size == 1  # the second run was given the first one's providers
        finally:
            warm.close()
        assert first["stop_reason"] == second["stop_reason"] == "end_turn"
        assert first["answer"] == "done alpha" and second["answer"] == "done beta"
        # the second run's requests carry its own conversation only: no turn, tool call or
        # tool result of the first
        beta = [r["body"] for r in model.requests if "beta" in json.dumps(r["body"])]
        assert beta
        for body in beta:
            assert not any("alpha" in m or "side/" in m for m in _user_text(body))
        # two sessions, each holding its own run
        a = store.load(str(first["session_id"]))
        b = store.load(str(second["session_id"]))
        assert first["session_id"] != second["session_id"]
        assert any(c.name == "bash" for t in a.turns for c in t.tool_calls)
        assert not any(t.tool_calls for t in b.turns)
        assert "alpha" not in json.dumps([t.text for t in b.turns])


def test_a_changed_config_builds_new_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LoopModel() as one, LoopModel() as two:
        root = _project(tmp_path, one, monkeypatch)
        store = DbSessionStore(f"sqlite:///{tmp_path / 'sessions.sqlite'}", tmp_path / "s")
        warm = Warm()
        try:
            run_task(root, _task("a", "a answer"), "once", project="p", store=store, warm=warm)
            settings = tmp_path / "cfg" / "settings.json"
            data = json.loads(settings.read_text())
            data["providers"]["loop"]["base_url"] = two.openai_url  # the user moves the model
            settings.write_text(json.dumps(data))
            out = run_task(root, _task("b", "b answer"), "once", project="p", store=store, warm=warm)
            assert warm.chains().size == 2
        finally:
            warm.close()
        assert out["answer"] == "done b"
        assert len(one.requests) == 1 and len(two.requests) == 1  # b went to the new endpoint


def test_a_changed_key_builds_new_providers_and_the_same_inputs_reuse_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = ChainCache()
    config = AgentConfig()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first")
    a = cache.resolve("openai/gpt-4o", config)
    assert cache.resolve("openai/gpt-4o", config) == a  # the same provider objects
    assert cache.resolve("openai/gpt-4o-mini", config) != a  # another model
    monkeypatch.setenv("OPENAI_API_KEY", "sk-rotated")  # `tether login` with a new key
    b = cache.resolve("openai/gpt-4o", config)
    assert b[0] is not a[0]
    assert cache.size == 3


def test_the_notes_of_a_resolution_are_given_again_when_it_is_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    config = AgentConfig.model_validate({"model": ["anthropic/claude-x", "openai/gpt-4o"]})
    cache = ChainCache()
    first: list[str] = []
    second: list[str] = []
    chain = cache.resolve(None, config, note=first.append)
    assert cache.resolve(None, config, note=second.append) is chain
    assert first and first == second  # "skipping model 'anthropic/claude-x'": said each time


def test_a_run_leaves_nothing_running_and_the_thread_keeps_its_loop() -> None:
    warm = Warm()
    ended = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []
    left: list[asyncio.Future[None]] = []

    async def leaves_a_task() -> str:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                ended.set()

        left.append(asyncio.ensure_future(forever()))
        loops.append(asyncio.get_running_loop())
        return "ok"

    async def where() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    try:
        assert warm.run(leaves_a_task()) == "ok"
        assert ended.is_set() and left[0].cancelled()  # cancelled when its run ended
        assert warm.run(where()) is loops[0]  # this thread's next run: the same loop
        other: list[asyncio.AbstractEventLoop] = []
        t = threading.Thread(target=lambda: other.append(warm.run(where())))
        t.start()
        t.join()
        assert other[0] is not loops[0]  # another thread: its own loop
    finally:
        warm.close()
    with pytest.raises(RuntimeError):
        warm.run(where())
