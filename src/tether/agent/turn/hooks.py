"""Hooks: the host's code run at fixed points of the loop, as library callbacks and as shell
commands declared in the settings (`hooks.<point>`), like Claude Code's hooks.

Owns: the hook points (`HookPoint`), what a hook is told (`HookInput`, and its JSON form on a
shell hook's stdin), what it may answer (`HookDecision`), the library callbacks (`Hooks`),
running a shell hook under the OS sandbox with a time limit (`run_shell_hook`), and
`HookRunner`, which runs one point's hooks in order (library callbacks first, then shell hooks)
and reports a hook that fails or times out as a `warning` event `hook_failed` without stopping
the run (its answer is then ignored: the hook "allows"; with `hooks.on_failure = deny` a failed
`before_tool` hook refuses the call instead).
Does not own: where the points sit in the loop (`tether.agent.turn.loop`; the tool-call points are
in `tether.agent.turn.gate`, together with the approval gate), the sandbox (`tether.sandbox`).

An async library hook has the same time limit (`hooks.timeout`) and is cancelled at it; a
sync one cannot be interrupted (keep it quick).

Points (`hooks.<point>` in the settings, `Hooks(<point>=[...])` in the library):
    before_tool        before a tool call runs, before the approval gate: allow, deny with a
                       reason (the model is told; nothing is asked), or rewrite the arguments
                       (what the gate shows and the tool gets; the stored call keeps the model's).
    after_tool         after a call ran, with its result (the answer is ignored).
    user_prompt        before a new prompt is stored: allow, deny (the run ends, stop reason
                       `prompt_denied`, nothing sent), or rewrite the prompt text.
    before_compaction  before a compaction starts (`reason`: threshold / overflow / manual).
    stop               the model gave a final answer: allow, or deny with a reason, which is
                       sent as a user message and the run goes on (within `run.max_turns`).
    transform_context  library only: a pure function over the wire view (a tuple of turns)
                       right before it is sent; it returns the view to send.

Shell hooks: `bash -c <command>` in the project folder inside the OS sandbox (the tools'
sandbox, scrubbed environment and limits; no sandbox: the hook is not run and is reported).
stdin: `HookInput.to_json()`. Exit 0 with empty stdout: allow; exit 0 with a JSON object:
`{"decision": "allow"|"deny", "reason": str, "arguments": {...}, "prompt": str}` (every key
optional); exit 2: deny, stderr is the reason (Claude Code's convention); any other exit code,
unparsable stdout or the time limit (`hooks.timeout`, per hook `timeout`): `hook_failed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from tether.agent.events import AgentEvent, WarningEvent
from tether.errors import HookFailed
from tether.messages import ToolCallBlock, ToolResultBlock, Turn
from tether.sandbox.proc import kill_group, spawn_confined
from tether.settings.model import HooksSettings, ShellHookSettings
from tether.tools.context import ToolContext

HookPoint = Literal["before_tool", "after_tool", "user_prompt", "before_compaction", "stop"]
DENY_EXIT = 2
"""A shell hook exiting with this code denies; its stderr is the reason."""
MAX_HOOK_OUTPUT_BYTES = 1_000_000
"""A shell hook's stdout or stderr past this is cut (a decision is a small JSON object)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookInput:
    """What a hook is told.

    Attributes:
        hook: the point.
        agent_path: the agent (`("main",)`, `("main", "task:<call id>")`).
        session_id: the agent's session, or None.
        cwd: the working folder.
        call: before_tool / after_tool: the tool call (after_tool: with the arguments it ran
            with).
        result: after_tool: the result the model will see.
        prompt: user_prompt: the prompt text (text blocks joined).
        answer: stop: the final answer's text.
        reason: before_compaction: `threshold`, `overflow` or `manual`.
        stop_hook_active: stop: True when this answer follows a stop hook's refusal in the
            same run (Claude Code's name: a hook can let the run end on a second try).
        stop_denials: stop: how many times the stop hooks refused an answer in this run.
    """

    hook: HookPoint
    agent_path: tuple[str, ...] = ("main",)
    session_id: str | None = None
    cwd: str = ""
    call: ToolCallBlock | None = None
    result: ToolResultBlock | None = None
    prompt: str | None = None
    answer: str | None = None
    reason: str | None = None
    stop_hook_active: bool | None = None
    stop_denials: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON a shell hook reads on stdin: `hook`, `agent_path`, `session_id`, `cwd`, and
        per point `tool_call` (`{id, name, arguments}`), `tool_result` (`{content, is_error}`),
        `prompt`, `answer` (with `stop_hook_active` and `stop_denials`) or `reason`."""
        out: dict[str, Any] = {
            "hook": self.hook,
            "agent_path": list(self.agent_path),
            "session_id": self.session_id,
            "cwd": self.cwd,
        }
        if self.call is not None:
            out["tool_call"] = {
                "id": self.call.id,
                "name": self.call.name,
                "arguments": self.call.arguments,
            }
        if self.result is not None:
            out["tool_result"] = {"content": self.result.text, "is_error": self.result.is_error}
        for key in ("prompt", "answer", "reason", "stop_hook_active", "stop_denials"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class HookDecision:
    """A hook's answer (None from a callback means `allow()`).

    Attributes:
        allow: False denies (before_tool, user_prompt, stop; ignored elsewhere).
        reason: with a denial, what the model (or, for user_prompt, the user) is told.
        arguments: before_tool: the arguments to run the call with instead (a JSON object).
        prompt: user_prompt: the prompt text to store instead.
    """

    allow: bool = True
    reason: str = ""
    arguments: dict[str, Any] | None = None
    prompt: str | None = None

    @classmethod
    def deny(cls, reason: str = "") -> HookDecision:
        return cls(allow=False, reason=reason)

    @classmethod
    def rewrite(cls, arguments: dict[str, Any]) -> HookDecision:
        return cls(arguments=arguments)


ALLOW = HookDecision()

HookFn = Callable[[HookInput], "HookDecision | Awaitable[HookDecision | None] | None"]
"""A library hook: sync or async, given the `HookInput`."""
ContextTransform = Callable[[tuple[Turn, ...]], tuple[Turn, ...]]
"""A `transform_context` hook: the wire view in, the view to send out (must not mutate)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """Library hooks, per point, run in order before the settings' shell hooks. Subagents
    (`task`) inherit their caller's hooks.

        Agent(model, hooks=Hooks(before_tool=[no_rm], transform_context=[drop_images]))
    """

    before_tool: Sequence[HookFn] = ()
    after_tool: Sequence[HookFn] = ()
    user_prompt: Sequence[HookFn] = ()
    before_compaction: Sequence[HookFn] = ()
    stop: Sequence[HookFn] = ()
    transform_context: Sequence[ContextTransform] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellOutcome:
    """A shell hook's exit code (None: killed at its time limit), stdout and stderr."""

    code: int | None
    stdout: str
    stderr: str


async def run_shell_hook(
    command: str, payload: bytes, ctx: ToolContext, timeout_s: float
) -> ShellOutcome:
    """Run `bash -c command` in `ctx.root` inside `ctx.sandbox` (scrubbed `ctx.env`, the tool
    limits) with `payload` on stdin; the whole process group is killed at `timeout_s` seconds
    or on cancellation.

    Raises:
        HookFailed: no OS sandbox (a hook never runs unconfined), or it could not start.
        asyncio.CancelledError: after killing the process group.
    """
    if ctx.sandbox is None:
        raise HookFailed("no OS sandbox works here: shell hooks do not run unconfined")
    try:
        proc, guard = await spawn_confined(
            ["bash", "-c", command],
            ctx,
            stdin=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise HookFailed(f"could not start: {exc}") from None
    try:
        async with asyncio.timeout(timeout_s):
            out, errs = await proc.communicate(payload)
    except TimeoutError:
        kill_group(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout=1.0)
        return ShellOutcome(code=None, stdout="", stderr="")
    finally:
        if proc.returncode is None:
            kill_group(proc.pid)
        guard.finish()
        await asyncio.shield(asyncio.to_thread(guard.sweep))

    def text(b: bytes) -> str:
        return b[:MAX_HOOK_OUTPUT_BYTES].decode("utf-8", "replace").strip()

    return ShellOutcome(code=proc.returncode, stdout=text(out), stderr=text(errs))


def parse_shell_outcome(outcome: ShellOutcome, timeout_s: float) -> HookDecision:
    """A shell hook's outcome as a decision (module docstring).

    Raises:
        HookFailed: timed out, an exit code other than 0 and 2, or stdout that is not a JSON
            object of the documented shape.
    """
    if outcome.code is None:
        raise HookFailed(f"timed out after {timeout_s:g} s (killed)")
    if outcome.code == DENY_EXIT:
        return HookDecision.deny(outcome.stderr or outcome.stdout)
    if outcome.code != 0:
        detail = f": {outcome.stderr[:200]}" if outcome.stderr else ""
        raise HookFailed(f"exit code {outcome.code}{detail}")
    if not outcome.stdout:
        return ALLOW
    try:
        raw = json.loads(outcome.stdout)
    except ValueError:
        raise HookFailed(f"stdout is not JSON: {outcome.stdout[:120]!r}") from None
    if not isinstance(raw, dict):
        raise HookFailed(f"stdout is not a JSON object: {outcome.stdout[:120]!r}")
    obj = cast(dict[str, Any], raw)
    decision, reason = obj.get("decision", "allow"), obj.get("reason", "")
    arguments, prompt = obj.get("arguments"), obj.get("prompt")
    if decision not in ("allow", "deny") or not isinstance(reason, str):
        raise HookFailed('"decision" must be "allow" or "deny" and "reason" a string')
    if arguments is not None and not isinstance(arguments, dict):
        raise HookFailed('"arguments" must be a JSON object')
    if prompt is not None and not isinstance(prompt, str):
        raise HookFailed('"prompt" must be a string')
    return HookDecision(
        allow=decision == "allow",
        reason=reason,
        arguments=cast(dict[str, Any] | None, arguments),
        prompt=prompt,
    )


def _matches(hook: ShellHookSettings, call: ToolCallBlock | None) -> bool:
    if hook.tools is None or call is None:
        return True
    return any(fnmatch.fnmatchcase(call.name, pattern) for pattern in hook.tools)


@dataclass(slots=True, kw_only=True)
class HookRunner:
    """One agent's hooks: library callbacks, then the settings' shell hooks, per point.

    Args:
        library: the library callbacks (None: none).
        settings: the `hooks` settings section (the shell hooks).
        context: the tool context shell hooks run with (root, sandbox, env, limits).
        emit: where `hook_failed` warnings go.
        agent_path: put in every `HookInput`.
        session_id: the agent's session id now.
    """

    library: Hooks | None
    settings: HooksSettings
    context: Callable[[], ToolContext]
    emit: Callable[[AgentEvent], None]
    agent_path: tuple[str, ...] = ("main",)
    session_id: Callable[[], str | None] = field(default=lambda: None)

    def active(self, point: HookPoint) -> bool:
        """Whether any hook is declared for `point`."""
        lib = () if self.library is None else getattr(self.library, point)
        return bool(lib) or bool(getattr(self.settings, point))

    def _input(self, point: HookPoint, **fields: Any) -> HookInput:
        return HookInput(
            hook=point,
            agent_path=self.agent_path,
            session_id=self.session_id(),
            cwd=str(self.context().root),
            **fields,
        )

    def _failed(self, point: HookPoint, name: str, why: str) -> HookDecision:
        """Report a hook that failed; its answer: allow, or with `hooks.on_failure = deny` a
        denial for a `before_tool` hook (the call is refused, the model told why)."""
        if point == "before_tool" and self.settings.on_failure == "deny":
            self.emit(
                WarningEvent(
                    kind="hook_failed",
                    message=f"{point} hook {name} failed: {why}; the call is refused "
                    "(hooks.on_failure = deny)",
                )
            )
            return HookDecision.deny(
                f"the before_tool hook {name} that checks this call failed ({why}), and "
                "the settings refuse a call no hook could check (hooks.on_failure = deny). "
                "Tell the user the hook is broken; retrying will fail the same way"
            )
        self.emit(
            WarningEvent(
                kind="hook_failed",
                message=f"{point} hook {name} failed: {why}; its answer is ignored",
            )
        )
        return ALLOW

    async def _library(self, point: HookPoint, fn: HookFn, inp: HookInput) -> HookDecision:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        limit_s = self.settings.timeout_s
        try:
            value = cast(object, fn(inp))
            if inspect.isawaitable(value):
                async with asyncio.timeout(limit_s):
                    value = cast(object, await value)
        except TimeoutError:
            return self._failed(point, name, f"timed out after {limit_s:g} s (cancelled)")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken hook is reported, never crashes the run
            return self._failed(point, name, f"{type(exc).__name__}: {exc}")
        if value is None:
            return ALLOW
        if not isinstance(value, HookDecision):
            return self._failed(
                point, name, f"returned {type(value).__name__}, not a HookDecision"
            )
        return value

    async def _shell(
        self, point: HookPoint, hook: ShellHookSettings, inp: HookInput
    ) -> HookDecision:
        limit_s = hook.timeout_s if hook.timeout_s is not None else self.settings.timeout_s
        name = f"`{hook.command[:60]}`"
        payload = json.dumps(inp.to_json(), ensure_ascii=False, default=str).encode()
        try:
            outcome = await run_shell_hook(hook.command, payload, self.context(), limit_s)
            return parse_shell_outcome(outcome, limit_s)
        except HookFailed as exc:
            return self._failed(point, name, str(exc))

    async def run(self, point: HookPoint, inp: HookInput | None = None, **fields: Any) -> HookDecision:
        """Run `point`'s hooks in order and combine their answers: the first denial wins (later
        hooks do not run); a rewrite is passed on to the later hooks and returned.

        Args:
            point: the hook point.
            inp: the input (default: built from `fields`).
            fields: `HookInput` fields (`call`, `result`, `prompt`, `answer`, `reason`).
        """
        current = inp if inp is not None else self._input(point, **fields)
        arguments: dict[str, Any] | None = None
        prompt: str | None = None
        lib: Sequence[HookFn] = () if self.library is None else getattr(self.library, point)
        shell: list[ShellHookSettings] = getattr(self.settings, point)
        steps: list[Callable[[HookInput], Awaitable[HookDecision]]] = [
            *(lambda i, f=f: self._library(point, f, i) for f in lib),
            *(
                lambda i, h=h: self._shell(point, h, i)
                for h in shell
                if _matches(h, current.call)
            ),
        ]
        for step in steps:
            decision = await step(current)
            if not decision.allow:
                return decision
            if decision.arguments is not None and current.call is not None:
                arguments = decision.arguments
                current = replace(current, call=replace(current.call, arguments=arguments))
            if decision.prompt is not None and current.prompt is not None:
                prompt = decision.prompt
                current = replace(current, prompt=prompt)
        return HookDecision(arguments=arguments, prompt=prompt)

    async def before_compaction(self, reason: str) -> None:
        """The `before_compaction` point (a `RunState` callback)."""
        if self.active("before_compaction"):
            await self.run("before_compaction", reason=reason)

    def transform(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """The `transform_context` hooks applied in order; one that raises or returns
        something other than a tuple of turns is reported and skipped."""
        if self.library is None:
            return view
        for fn in self.library.transform_context:
            name = getattr(fn, "__qualname__", None) or repr(fn)
            try:
                out = cast(object, fn(view))
            except Exception as exc:
                self._failed_transform(name, f"{type(exc).__name__}: {exc}")
                continue
            if not isinstance(out, tuple) or not all(
                isinstance(t, Turn) for t in cast(tuple[object, ...], out)
            ):
                self._failed_transform(name, "did not return a tuple of turns")
                continue
            view = cast(tuple[Turn, ...], out)
        return view

    def _failed_transform(self, name: str, why: str) -> None:
        self.emit(
            WarningEvent(
                kind="hook_failed",
                message=f"transform_context hook {name} failed: {why}; the view is sent "
                "without it",
            )
        )
