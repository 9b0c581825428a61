"""The tool worker process: folder-scanned tools run here, one call per process.

Owns: both ends of the worker protocol — `run_in_worker` (the harness side: start, feed, time,
kill, parse) and `main` (`python -m tether.tools.exec.worker`: the worker side).

Protocol (UTF-8 JSON lines):
    harness → worker stdin, first line:
        {"file": str, "tool": str, "arguments": {...},
         "context": {"root": str, "session_dir": str | null,
                     "policy": <PathPolicy.to_json()> | null, "questions": bool,
                     "settings": <the tool's own settings> | null}}
    harness → worker stdin, later (only when the call timed out and the tool has `on_timeout`):
        {"op": "timeout", "limit_s": float}
    worker → stdout, exactly one line, written LAST and flushed, then the worker exits:
        {"tether_result": <Outcome JSON>, "timed_out": bool}
The question bridge (when the host has one: `"questions": true` in the context): the tool's
`ctx.questions.ask(...)` writes a line on the same private result pipe and waits for the
answer on stdin, so the host's callback never crosses the sandbox (the seed asks for this
bridge on its own fds 3/4; the worker's two pipes carry it the same way, forked workers too):
    worker → stdout:  {"tether_ask": [<QuestionSpec JSON>, ...]}
    harness → stdin:  {"op": "answer", "answers": [<Answer.to_dict()>, ...]}
                      or {"op": "answer", "error": str}  (the host could not ask)
The call's time limit stops while the user is asked.
The worker moves its own fd 1 onto stderr before importing the tool file, so whatever the tool
(or a process it starts) prints goes to stderr, never into the result line; the result goes out
on a private, non-inheritable copy of the original stdout. The harness still reads only the last
stdout line. stderr is captured (head and tail kept) and quoted when the worker fails.

Failures (each an is_error result): "tool worker exited with code N", "tool worker was killed by
signal S (SIGKILL)", "tool worker printed no result", each followed by the tail of its stderr.
The worker starts in its own session (process group) with the context's scrubbed environment in
the working folder; its argv goes through `ToolContext.wrap` (the OS sandbox hook). On timeout,
cancellation, or after `on_timeout`'s grace period, the whole process group is SIGKILLed. As with
`bash`, processes the tool leaves behind are left alone if they let go of the worker's pipes
(e.g. redirect their output); those still holding them `EXIT_GRACE_S` after the worker exits are
killed with the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, cast

from tether.messages import TextBlock
from tether.sandbox.config import confinement, package_source_root, wrap_argv
from tether.sandbox.limits import ResourceLimits
from tether.sandbox.proc import (
    EXIT_GRACE_S,
    HeadTail,
    kill_group,
    pump,
    spawn_group,
    swept_note,
)
from tether.tools.base import TimedOut, Tool
from tether.tools.context import Answer, QuestionSpec, ToolContext
from tether.tools.exec.outcome import (
    Outcome,
    call_on_timeout,
    describe_exception,
    error_outcome,
    exception_outcome,
    format_validation_error,
    timed_out_outcome,
    to_outcome,
)

RESULT_KEY = "tether_result"
ASK_KEY = "tether_ask"
STDERR_HEAD_BYTES = 2_000
STDERR_TAIL_BYTES = 4_000
POLL_S = 0.05
"""How often the worker's exit is polled while its result pipe is open (s)."""
REAP_S = 2.0
"""How long to wait for a killed worker and its pipes to close (s)."""


def worker_argv() -> list[str]:
    """The argv that starts a worker (before `ToolContext.wrap`). `-P`: the working folder
    (the worker's cwd) is NOT put on `sys.path`, so a project file named like a module
    (`json.py`, `pydantic.py`, a `tether/` folder) cannot replace it in the worker."""
    return [sys.executable, "-P", "-m", "tether.tools.exec.worker"]


def worker_readable(tool: Tool) -> tuple[Path, ...]:
    """What a sandboxed worker must still see, read-only, besides what the sandbox keeps
    visible anyway (the whole file system, and this interpreter and `tether` even under a
    private `/tmp`, see `SandboxConfig.readonly`): the tool's own folder."""
    return (Path(tool.source).resolve().parent,) if tool.source is not None else ()


def _worker_env(ctx: ToolContext) -> dict[str, str]:
    env = dict(ctx.env)
    src = str(package_source_root())
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = src if not old else f"{src}{os.pathsep}{old}"
    return env


def _settings_json(ctx: ToolContext, name: str) -> Any:
    """The tool's own validated settings as JSON (validated again by its model in the
    worker), or None."""
    found = ctx.tool_settings.get(name)
    return None if found is None else found.model_dump(mode="json")


def _request(tool: Tool, arguments: Mapping[str, Any], ctx: ToolContext) -> bytes:
    policy = ctx.policy
    req = {
        "file": str(tool.source),
        "tool": tool.name,
        "arguments": dict(arguments),
        "context": {
            "root": str(ctx.root),
            "session_dir": None if ctx.session_dir is None else str(ctx.session_dir),
            "policy": None if policy is None else policy.to_json(),
            "questions": ctx.questions is not None,
            "settings": _settings_json(ctx, tool.name),
        },
    }
    return (json.dumps(req, default=str) + "\n").encode()


def _status(code: int | None) -> str:
    if code is None:
        return "tool worker did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown"
        return f"tool worker was killed by signal {-code} ({name})"
    return f"tool worker exited with code {code}"


def _parse(stdout: bytes) -> tuple[Outcome, bool] | None:
    """The result line (the last non-empty stdout line), or None when there is none."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return None
    try:
        data = json.loads(lines[-1])
        if not isinstance(data, dict) or RESULT_KEY not in data:
            return None
        body = cast("dict[str, Any]", data)
        return Outcome.from_json(body[RESULT_KEY]), bool(body.get("timed_out", False))
    except (ValueError, KeyError, TypeError):
        return None


async def _settled(a: asyncio.Task[None], b: asyncio.Task[None], timeout_s: float) -> bool:
    """Wait up to `timeout_s` for both pipe readers to reach EOF; True when they did."""
    _, pending = await asyncio.wait({a, b}, timeout=timeout_s)
    return not pending


async def run_in_worker(
    tool: Tool,
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    *,
    limit_s: float,
    grace_s: float,
) -> Outcome:
    """`_run_in_worker`, then, in an OS sandbox, the trust roots the call created are moved
    aside (`tether.sandbox.tree.TrustRoots.sweep`) and a note says so."""
    roots = None
    if ctx.sandbox is not None and ctx.wrap is None:
        roots = (await asyncio.to_thread(confinement, ctx))[1]
    outcome = await _run_in_worker(tool, arguments, ctx, limit_s=limit_s, grace_s=grace_s)
    if roots is None:
        return outcome
    moved = await asyncio.shield(asyncio.to_thread(roots.sweep))
    if not moved:
        return outcome
    return replace(outcome, parts=(*outcome.parts, TextBlock(text=swept_note(moved))))


async def _run_in_worker(
    tool: Tool,
    arguments: Mapping[str, Any],
    ctx: ToolContext,
    *,
    limit_s: float,
    grace_s: float,
) -> Outcome:
    """Run one call of the folder tool `tool` (its `source` set) in a worker process.

    Args:
        tool: the tool (its `source` names the file the worker imports).
        arguments: the model's arguments (validated again in the worker).
        ctx: the call's context (root, env, session_dir, policy, wrap).
        limit_s: the call's time limit (s), worker start-up included.
        grace_s: how long `on_timeout` may run in the worker (s) before the group is killed.

    Returns:
        The call's outcome; every failure of the worker is an is_error outcome.

    Raises:
        asyncio.CancelledError: after killing the worker's process group.
    """
    from tether.tools.exec import forkserver

    env = _worker_env(ctx)
    guard = (ctx.limits or ResourceLimits()).start()
    forked = await forkserver.spawn_worker(ctx, worker_readable(tool), env, guard)
    proc: asyncio.subprocess.Process | forkserver.ForkedWorker
    if forked is not None:  # forked from a pre-started worker in the same sandbox
        proc, _watch = forked
        kill: Callable[[], None] = proc.kill
    else:
        argv = wrap_argv(ctx, worker_argv(), readable=worker_readable(tool))
        try:
            proc = await spawn_group(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=ctx.root,
                env=env,
                preexec_fn=guard.preexec,
                tied=ctx.sandbox is not None,
            )
        except OSError as e:
            guard.finish()
            return error_outcome(f"could not start the tool worker ({argv[0]}): {e}")
        pid = proc.pid
        kill = lambda: kill_group(pid)  # noqa: E731
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = HeadTail(STDERR_HEAD_BYTES, STDERR_TAIL_BYTES)
    out_task = asyncio.create_task(pump(proc.stdout, out))
    err_task = asyncio.create_task(pump(proc.stderr, err))
    timed_out = False
    try:
        with contextlib.suppress(ConnectionError):
            proc.stdin.write(_request(tool, arguments, ctx))
            await proc.stdin.drain()
        try:
            async with asyncio.timeout(limit_s) as clock:
                # until the result pipe closes or the worker exits (a process the tool forked
                # may hold the pipe; the finally block gives the reader a moment more)
                while not out_task.done() and proc.returncode is None:
                    await asyncio.wait({out_task}, timeout=POLL_S)
                    for asked in _take_asks(out):
                        started = asyncio.get_running_loop().time()
                        reply = await _answer(ctx, asked)
                        waited = asyncio.get_running_loop().time() - started
                        when = clock.when()
                        if when is not None:  # the user's time is not the tool's
                            clock.reschedule(when + waited)
                        with contextlib.suppress(ConnectionError):
                            proc.stdin.write(reply)
                            await proc.stdin.drain()
        except TimeoutError:
            timed_out = True
            if tool.on_timeout is not None and not out_task.done():
                with contextlib.suppress(ConnectionError):
                    line = json.dumps({"op": "timeout", "limit_s": limit_s}) + "\n"
                    proc.stdin.write(line.encode())
                    await proc.stdin.drain()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(grace_s):
                        await asyncio.shield(out_task)
    finally:
        if timed_out or proc.returncode is None:
            kill()
        if not await _settled(out_task, err_task, EXIT_GRACE_S):
            kill()  # leftovers of the tool still hold the worker's pipes
            await _settled(out_task, err_task, REAP_S)
        for task in (out_task, err_task):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(REAP_S):
                await proc.wait()
        proc.stdin.close()
        guard.finish()
        if isinstance(proc, forkserver.ForkedWorker):
            proc.call.close()
    parsed = _parse(bytes(out))
    if timed_out:
        final = parsed[0] if parsed is not None and parsed[1] else None
        note = (
            "" if tool.on_timeout is None or final is not None else " (on_timeout gave no result)"
        )
        return timed_out_outcome(tool.name, limit_s, final, note + "; the tool process was killed")
    if parsed is not None:
        return parsed[0]
    code = proc.returncode
    head = _status(code) if code != 0 else "tool worker printed no result"
    tail = err.text().strip()
    return error_outcome(
        f"{head} (tool {tool.name!r}, file {tool.source})" + (f"\nstderr:\n{tail}" if tail else "")
    )


def _take_asks(out: bytearray) -> list[Any]:
    """The question lines the worker wrote so far, taken out of `out` (whole lines only)."""
    asks: list[Any] = []
    marker = b'{"' + ASK_KEY.encode() + b'"'
    while True:
        start = out.find(marker)
        if start < 0 or (start > 0 and out[start - 1] != 0x0A):
            return asks
        end = out.find(b"\n", start)
        if end < 0:
            return asks
        line = bytes(out[start:end])
        del out[start : end + 1]
        try:
            asks.append(json.loads(line)[ASK_KEY])
        except (ValueError, KeyError, TypeError):
            asks.append(None)


async def _answer(ctx: ToolContext, asked: Any) -> bytes:
    """The answer line for one question line of the worker (an error line when the host has
    no bridge, the questions do not validate, or the host's bridge raised)."""
    from pydantic import TypeAdapter, ValidationError

    reply: dict[str, Any] = {"op": "answer"}
    if ctx.questions is None:
        reply["error"] = "no user is there to answer (headless)"
    else:
        try:
            specs = TypeAdapter(list[QuestionSpec]).validate_python(asked)
            answers = await ctx.questions.ask(specs)
            reply["answers"] = [a.to_dict() for a in answers]
        except ValidationError as exc:
            reply["error"] = f"the questions are not valid: {exc.error_count()} error(s)"
        except Exception as exc:  # the host's bridge failed: the tool hears why
            reply["error"] = describe_exception(exc)
    return (json.dumps(reply) + "\n").encode()


# --- the worker side -------------------------------------------------------------------------


class _WorkerQuestions:
    """The worker's `QuestionBridge`: a question line on the result pipe, the answer from the
    control reader (`_serve`)."""

    pipe: ClassVar[Any] = None
    """The worker's private result pipe (set by `main`)."""

    def __init__(self) -> None:
        self.waiting: asyncio.Future[dict[str, Any]] | None = None
        self.lock = asyncio.Lock()

    async def ask(self, questions: Any) -> list[Answer]:
        async with self.lock:  # one question line at a time
            loop = asyncio.get_running_loop()
            self.waiting = loop.create_future()
            specs = [QuestionSpec.model_validate(q).model_dump(mode="json") for q in questions]
            assert _WorkerQuestions.pipe is not None
            _WorkerQuestions.pipe.write(json.dumps({ASK_KEY: specs}) + "\n")
            _WorkerQuestions.pipe.flush()
            reply = await self.waiting
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        return [_answer_of(a) for a in cast("list[dict[str, Any]]", reply.get("answers", []))]

    def answered(self, reply: dict[str, Any]) -> None:
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(reply)


def _answer_of(raw: Mapping[str, Any]) -> Answer:
    if raw.get("abandoned"):
        return Answer(abandoned=True)
    if raw.get("text") is not None:
        return Answer(text=str(raw["text"]))
    return Answer(labels=tuple(str(x) for x in cast("list[object]", raw.get("labels", []))))


def _context(raw: Mapping[str, Any], bridge: _WorkerQuestions | None = None) -> ToolContext:
    from tether.sandbox.policy import PathPolicy

    pol = raw.get("policy")
    policy = None if pol is None else PathPolicy.from_json(cast("dict[str, object]", pol))
    session_dir = raw.get("session_dir")
    return ToolContext(
        root=Path(raw["root"]),
        env=dict(os.environ),
        session_dir=None if session_dir is None else Path(session_dir),
        policy=policy,
        questions=bridge if raw.get("questions") else None,
    )


async def _read_control() -> dict[str, Any] | None:
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return cast("dict[str, Any]", data) if isinstance(data, dict) else None


async def _serve(req: Mapping[str, Any]) -> tuple[Outcome, bool]:
    from pydantic import ValidationError

    from tether.tools.scan import load_tool_file

    file = Path(req["file"])
    try:
        tools = {t.name: t for t in load_tool_file(file)}
    except Exception as e:
        return error_outcome(f"could not load tool file {file}: {describe_exception(e)}"), False
    tool = tools.get(req["tool"])
    if tool is None:
        return error_outcome(f"tool {req['tool']!r} is no longer defined in {file}"), False
    bridge = _WorkerQuestions()
    ctx = _context(req["context"], bridge)
    raw_settings = req["context"].get("settings")
    if tool.settings is not None and raw_settings is not None:
        ctx = replace(
            ctx,
            tool_name=tool.name,
            tool_settings={tool.name: tool.settings.model_validate(raw_settings)},
        )
    try:
        kwargs = tool.bind(req["arguments"], ctx)
    except ValidationError as e:
        return error_outcome(format_validation_error(tool.name, e)), False
    tool.split_timeout(kwargs)

    async def invoke() -> Any:
        if tool.is_async:
            return await tool.fn(**kwargs)
        return await asyncio.to_thread(tool.fn, **kwargs)

    task = asyncio.create_task(invoke())
    control = asyncio.create_task(_read_control())
    while True:
        done, _ = await asyncio.wait({task, control}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            try:
                return to_outcome(task.result()), False
            except Exception as e:
                return exception_outcome(e), False
        msg = control.result()
        if msg is not None and msg.get("op") == "answer":
            bridge.answered(msg)
            control = asyncio.create_task(_read_control())
            continue
        if msg is None or msg.get("op") != "timeout":
            control = asyncio.create_task(asyncio.sleep(1e9, None))  # stdin closed: just wait
            continue
        task.cancel()
        args = {k: v for k, v in kwargs.items() if k != tool.context_param}
        limit_s = float(msg.get("limit_s", 0))
        info = TimedOut(tool=tool.name, arguments=args, ctx=ctx, limit_s=limit_s)
        final, _note = await call_on_timeout(tool, info, grace_s=1e9)  # the harness kills
        return (final or Outcome()), True


def main() -> None:
    """Worker entry point: one request line in, one result line out (see the module docstring).
    Exits with `os._exit` so a stray tool thread cannot keep the process alive."""
    result_fd = os.dup(1)  # non-inheritable: the tool's children never see it
    os.dup2(2, 1)  # fd 1 (print, C code, child processes) now goes to stderr
    result = os.fdopen(result_fd, "w", encoding="utf-8")
    _WorkerQuestions.pipe = result
    line = sys.stdin.readline()
    try:
        req = cast("dict[str, Any]", json.loads(line))
        # not asyncio.run: its shutdown would wait for a hung tool thread or the stdin reader
        loop = asyncio.new_event_loop()
        outcome, timed_out = loop.run_until_complete(_serve(req))
    except Exception as e:
        outcome, timed_out = error_outcome(f"tool worker failed: {describe_exception(e)}"), False
    payload = json.dumps({RESULT_KEY: outcome.to_json(), "timed_out": timed_out}, default=str)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    result.write(payload + "\n")
    result.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
