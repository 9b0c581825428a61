"""One task run: a fresh headless agent over its own session, resumed (never restarted) when
the run was cut short. No DBOS here: `tether.jobs.engine` calls `run_task` as a workflow step,
which DBOS may execute again after a crash; this module makes that repetition harmless.

Idempotency, by the session named after the task and the run (`session_id`):
- no session yet: create it, send the prompt;
- a session without a `job_run_end` event: the run was cut short: load it, close the calls
  that have no result (`Agent.close_interrupted`: "started, may have had effects" versus "never
  ran", from the `tool_call_started` records), and continue it; the prompt is not sent again.
  A call whose result was recorded is never repeated;
- a session with a `job_run_end` event, or whose last turn is a final answer (cut after the
  answer was saved): the run finished: its outcome is returned, nothing runs.

Cancellation (`tether jobs cancel`): `cancelled()` is polled while the agent runs; when it
says so the run is cancelled like `tether run` on SIGINT (the partial turn is persisted, pending
calls get `interrupted` results). A task's `timeout` does the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from tether.agent.agent import Agent
from tether.agent.assembly.build import ModelLike
from tether.agent.sessions import AgentSession
from tether.agent.turn.state import RunResult
from tether.errors import ConfigError, RunError
from tether.jobs.warm import Warm
from tether.messages import Turn, Usage
from tether.session import SessionStore
from tether.session.dbstore import DbSessionStore

RUN_END_EVENT = "job_run_end"
"""The session event written when a task run ends: the outcome (`run_task`'s return value)."""


def session_id(project: str, task_id: str, slot: str) -> str:
    """The session of one run: `job.<project>.<task id>.<slot>` (≤ 128 characters)."""
    return f"job.{project[:30]}.{task_id}.{slot}"[:128]


def _usage_json(usage: Usage) -> dict[str, int]:
    return asdict(usage)


def _finished(store: SessionStore, sid: str) -> dict[str, Any] | None:
    if not store.exists(sid):
        return None
    loaded = store.load(sid)
    for event in reversed(loaded.events):
        if event.kind == RUN_END_EVENT:
            return dict(event.data)
    return None


def run_task(
    root: Path,
    task: dict[str, Any],
    slot: str,
    *,
    project: str,
    model: ModelLike | None = None,
    cancelled: Callable[[], bool] | None = None,
    poll_s: float = 0.5,
    store: SessionStore | None = None,
    warm: Warm | None = None,
) -> dict[str, Any]:
    """Run (or continue, or report) the run `slot` of `task` (`Task.to_json()`) in `root`.

    Args:
        root: the project folder (settings, tools; the tools' working folder).
        model: overrides the task's and the settings' model (a provider object in tests).
        cancelled: polled every `poll_s` seconds while the agent runs; True cancels the run
            (a poll that raises is tried again at the next tick).
        store: the sessions (default: `TETHER_HOME`'s files; Jobs pass the jobs database's,
            `tether.session.dbstore.DbSessionStore`, which this run takes over first).
        warm: run on this thread's kept event loop with its kept providers
            (`tether.jobs.warm.Warm`, a worker's); default: a new loop and new providers.

    Returns:
        The outcome, as JSON values: `task`, `slot`, `session_id`, `answer` (the final text),
        `stop_reason` (the run's: `end_turn`, `max_turns`, `cancelled`, `timeout`, `error`…),
        `usage` (tokens of this run, summed over its requests), `turns` (requests made),
        `error` (the failure's message, or None), `resumed` (True when a cut run was continued),
        `finished_ms`.

    Raises:
        tether.errors.ConfigError: the settings or the model do not resolve (nothing ran).
        tether.errors.SessionError: the session cannot be created or opened.
    """
    store = store or SessionStore()
    sid = session_id(project, str(task["id"]), slot)
    if isinstance(store, DbSessionStore) and store.exists(sid):
        store.take_over(sid)  # a writer this run replaces (a worker declared dead) adds nothing
    done = _finished(store, sid)
    if done is not None:
        return done
    resumed = store.exists(sid)
    session = (
        AgentSession.resume(store, sid)
        if resumed
        else AgentSession.new(store, cwd=root, session_id=sid)
    )
    history = session.history
    if history and _answered(history[-1]):  # cut after the answer was saved, before the end
        with store.open_for_append(sid) as writer:
            outcome = _outcome_of(history, task, slot, sid)
            writer.append_event(RUN_END_EVENT, outcome)
        return outcome
    overrides: dict[str, Any] = {}
    if task.get("max_turns"):
        overrides["run.max_turns"] = task["max_turns"]
    if task.get("safe"):
        overrides["tools.safe"] = True
    wanted = task.get("tools")
    if isinstance(wanted, list):
        overrides["tools.only"] = [str(n) for n in cast(list[object], wanted)]
    try:
        agent = Agent.from_settings(
            root,
            model=model if model is not None else task.get("model"),
            overrides=overrides,
            session=session,
            chains=None if warm is None else warm.chains(),
        )
    except ConfigError as exc:  # a task's unknown model or tool, a missing key: its run's error
        return _failed(f"config: {exc}") | _run_fields(task, slot, sid, bool(history))
    session.open()
    writer = session.writer
    assert writer is not None
    try:
        has_prompt = any(t.role == "user" for t in history)
        prompt = None if has_prompt else str(task["prompt"])
        timeout = task.get("timeout_s")
        drive = _drive(agent, prompt, timeout, cancelled, poll_s)
        outcome = asyncio.run(drive) if warm is None else warm.run(drive)
        outcome |= _run_fields(task, slot, sid, bool(history))
        writer.append_event(RUN_END_EVENT, outcome)
        writer.sync()  # on disk before the durable engine records the task as done
        return outcome
    finally:
        writer.close()


def _failed(error: str) -> dict[str, Any]:
    """The outcome of a run that failed before or without an answer."""
    return {
        "answer": "",
        "stop_reason": "error",
        "usage": _usage_json(Usage()),
        "turns": 0,
        "error": error,
    }


def _run_fields(task: dict[str, Any], slot: str, sid: str, resumed: bool) -> dict[str, Any]:
    """What every outcome `run_task` returns carries beside the run's own result."""
    return {
        "task": task["id"],
        "slot": slot,
        "session_id": sid,
        "resumed": resumed,
        "finished_ms": int(time.time() * 1000),
    }


def _answered(turn: Turn) -> bool:
    """True when `turn` is a final answer: an assistant turn without tool calls that was not
    cut (interrupted, or at `max_tokens`, which the loop would continue)."""
    return (
        turn.role == "assistant"
        and not turn.tool_calls
        and turn.stop_reason not in ("interrupted", "max_tokens")
    )


def _outcome_of(
    history: tuple[Turn, ...], task: dict[str, Any], slot: str, sid: str
) -> dict[str, Any]:
    """The outcome of a run whose final answer is the last turn of `history`."""
    replies = [t for t in history if t.role == "assistant"]
    return {
        "answer": history[-1].text,
        "stop_reason": history[-1].stop_reason or "end_turn",
        "usage": _usage_json(sum((t.usage for t in replies if t.usage), Usage())),
        "turns": len(replies),
        "error": None,
    } | _run_fields(task, slot, sid, True)


async def _drive(
    agent: Agent,
    prompt: str | None,
    timeout: float | None,
    cancelled: Callable[[], bool] | None,
    poll_s: float,
) -> dict[str, Any]:
    """The run; then the agent's MCP servers, which started with it, are stopped."""
    run = asyncio.ensure_future(agent.run(prompt))
    stop = "cancelled"

    async def watch() -> None:
        nonlocal stop
        while not run.done():
            await asyncio.sleep(poll_s)
            if cancelled is None:
                continue
            try:
                now = await asyncio.to_thread(cancelled)
            except Exception:  # a status read that failed (a locked database): ask again next tick
                continue
            if now:
                stop = "cancelled"
                run.cancel()
                return

    watcher = asyncio.ensure_future(watch())
    try:
        try:
            result: RunResult = await asyncio.wait_for(asyncio.shield(run), timeout)
        except TimeoutError:
            stop = "timeout"
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
            raise asyncio.CancelledError from None
    except asyncio.CancelledError:
        if not run.done():
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
        new = [t for t in agent.history if t.role == "assistant"]
        last = new[-1] if new else None
        return {
            "answer": last.text if last else "",
            "stop_reason": stop,
            "usage": _usage_json(sum((t.usage for t in new if t.usage), Usage())),
            "turns": 0,
            "error": None,
        }
    except RunError as exc:
        return _failed(f"{exc.kind}: {exc.message}")
    finally:
        watcher.cancel()
        await agent.aclose()
    return {
        "answer": result.answer,
        "stop_reason": result.stop_reason,
        "usage": _usage_json(result.usage),
        "turns": result.turns,
        "error": None,
    }
