"""Running one tool call: validation, timeout, and turning every outcome into a tool_result.

Owns: `run_tool` (→ `ToolRunResult`: the tool_result block, system notes, display value) and its
block-only form `run_tool_call`; neither raises for a tool fault (only `asyncio.CancelledError`
and non-`Exception` BaseExceptions propagate). Also the result conversion rules (`to_outcome`):
a str → one text part; TextBlock/ImageBlock parts kept; blank text → a non-empty placeholder
(T02); an envelope `{"result": ..., "system"?: str | [str], "display"?: any}` (no other keys)
splits into the result, system notes and a display value; anything else → JSON text.
Does not own: parallelism across calls (the loop's TaskGroup), persisting oversized results,
confirmation prompts, or the worker process (`tether.tools.worker`).

Execution: a folder-scanned tool (`Tool.source` set) runs in a worker subprocess; an async tool
runs under `asyncio.timeout`; a sync tool in a worker thread (`asyncio.to_thread`) under the
same timeout, unless declared `inline=True` (then on the event loop, untimed). A timed-out
worker thread cannot be killed: it finishes in the background and its result is dropped.

Time limits (seconds): the tool's `timeout` argument when it declares one (capped at
`MAX_CALL_TIMEOUT_S`, 1200), else the tool's `timeout_s`, else the runner's `timeout_s`
(default 120). On expiry the tool's `on_timeout` (if any) is called once and gets `grace_s`
(default 60) to clean up or return a final result; then a worker's process group is killed.
A timed-out call is always an is_error result starting with "`name` timed out after N s".
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from tether.messages import ImageBlock, ResultPart, TextBlock, ToolCallBlock, ToolResultBlock
from tether.tools.base import (
    MAX_CALL_TIMEOUT_S,
    TimedOut,
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
)
from tether.tools.registry import ToolRegistry

NO_OUTPUT = "(no output)"
"""The placeholder for a result with no visible text (providers reject empty text parts)."""
DEFAULT_TIMEOUT_S = 120.0
"""The default time limit of one call (s)."""
ON_TIMEOUT_GRACE_S = 60.0
"""How long an `on_timeout` callback may take (s) before the call's processes are killed."""
ENVELOPE_KEYS = frozenset({"result", "system", "display"})

Redactor = Callable[[str], str]
Part = TextBlock | ImageBlock
PARTS_CODEC: TypeAdapter[tuple[ResultPart, ...]] = TypeAdapter(tuple[ResultPart, ...])


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A tool's converted return value, before it is tied to a call id (JSON-able: the worker
    process sends it as one line).

    Attributes:
        parts: the result's text/image parts (blank text dropped; may be empty).
        is_error: whether the result is a failure.
        system_notes: system notes for the model (appended after the turn's tool_results).
        display: a JSON-able value for the host only, or None.
    """

    parts: tuple[Part, ...] = ()
    is_error: bool = False
    system_notes: tuple[str, ...] = ()
    display: Any = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form (`from_json` reverses it)."""
        return {
            "parts": PARTS_CODEC.dump_python(self.parts, mode="json"),
            "is_error": self.is_error,
            "system_notes": list(self.system_notes),
            "display": self.display,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        """Rebuild an Outcome from `to_json` output.

        Raises:
            pydantic.ValidationError, KeyError, TypeError: malformed data.
        """
        notes = cast("list[object]", data.get("system_notes") or [])
        return cls(
            parts=PARTS_CODEC.validate_python(data["parts"]),
            is_error=bool(data.get("is_error", False)),
            system_notes=tuple(str(n) for n in notes),
            display=data.get("display"),
        )


def error_outcome(text: str) -> Outcome:
    """An is_error outcome holding one text part."""
    return Outcome(parts=(TextBlock(text=text or "error"),), is_error=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRunResult:
    """Everything one call produced.

    Attributes:
        block: the tool_result block (what is stored and sent to the model).
        system_notes: notes for the model, rendered after ALL tool_results of the turn as
            `<system-reminder>…</system-reminder>` text blocks (see `system_note_block`).
        display: a JSON-able value for the host (the `tool_result` event's `display` field);
            never sent to the model, never stored.
    """

    block: ToolResultBlock
    system_notes: tuple[str, ...] = ()
    display: Any = None


def system_note_block(note: str) -> TextBlock:
    """The stored/wire rendering of one system note: a text block in the results turn, after
    every tool_result (Anthropic: tool_result blocks first in their user message, then any
    text; Chat Completions adapters put that text in a user message after the tool messages)."""
    return TextBlock(text=f"<system-reminder>\n{note.strip()}\n</system-reminder>")


def _error(call_id: str, text: str) -> ToolResultBlock:
    return ToolResultBlock(
        tool_call_id=call_id, content=(TextBlock(text=text or "error"),), is_error=True
    )


def format_validation_error(tool_name: str, err: ValidationError) -> str:
    """A compact, model-readable summary of a pydantic validation error."""
    lines = [f"invalid arguments for tool `{tool_name}`; the call was not run:"]
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"]) or "(arguments)"
        lines.append(f"- {loc}: {e['msg']}")
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    """`value` as plain JSON data (pydantic's rules: models and dataclasses become objects,
    tuples and sets lists; any other non-JSON leaf becomes its `str`)."""
    return to_jsonable_python(value, fallback=str)


def _notes(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    items = cast("Sequence[object]", value) if isinstance(value, list | tuple) else [value]
    return tuple(str(v) for v in items if str(v).strip())


def _is_envelope(raw: object) -> bool:
    if not isinstance(raw, dict):
        return False
    keys = cast("dict[object, object]", raw).keys()
    return "result" in keys and keys <= ENVELOPE_KEYS


def to_outcome(raw: Any) -> Outcome:
    """Convert a tool's return value to an Outcome (see the module docstring for the shapes)."""
    is_error = False
    notes: tuple[str, ...] = ()
    display: Any = None
    if _is_envelope(raw):
        env = cast("dict[str, Any]", raw)
        notes, display = _notes(env.get("system")), _jsonable(env.get("display"))
        raw = env["result"]
    if isinstance(raw, ToolOutput):
        is_error = raw.is_error
        notes += _notes(raw.system)
        if raw.display is not None:
            display = _jsonable(raw.display)
        raw = raw.content
    return Outcome(parts=_parts(raw), is_error=is_error, system_notes=notes, display=display)


def _parts(raw: Any) -> tuple[Part, ...]:
    """Convert a plain return value to parts; blank text parts are dropped."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (TextBlock(text=raw),) if raw.strip() else ()
    if isinstance(raw, TextBlock | ImageBlock):
        raw = (raw,)
    if isinstance(raw, list | tuple):
        items = cast("Sequence[object]", raw)
        blocks = [p for p in items if isinstance(p, TextBlock | ImageBlock)]
        if len(blocks) == len(items):
            return tuple(p for p in blocks if not (isinstance(p, TextBlock) and not p.text.strip()))
    try:
        text = json.dumps(cast(object, raw), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(cast(object, raw))
    return (TextBlock(text=text),) if text.strip() else ()


def describe_exception(e: BaseException) -> str:
    """`ExcType: message` (a `ToolError`'s message as-is)."""
    if isinstance(e, ToolError):
        return str(e) or type(e).__name__
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def exception_outcome(e: BaseException) -> Outcome:
    """The is_error outcome for an exception a tool raised (`ToolError` text as-is)."""
    return error_outcome(describe_exception(e))


def finish(call_id: str, outcome: Outcome, redact: Redactor | None) -> ToolRunResult:
    """Tie `outcome` to `call_id`: redact text, fill the empty-output placeholder."""
    parts = outcome.parts
    notes = outcome.system_notes
    if redact is not None:
        parts = tuple(
            TextBlock(text=redact(p.text)) if isinstance(p, TextBlock) else p for p in parts
        )
        notes = tuple(redact(n) for n in notes)
    if not parts:
        parts = (TextBlock(text=NO_OUTPUT),)
    block = ToolResultBlock(tool_call_id=call_id, content=parts, is_error=outcome.is_error)
    return ToolRunResult(block=block, system_notes=notes, display=outcome.display)


def call_limit_s(tool: Tool, requested_s: float | None, default_s: float) -> float:
    """The time limit of one call (s): the model's `timeout` argument capped at
    `MAX_CALL_TIMEOUT_S`, else the tool's `timeout_s`, else `default_s`."""
    if requested_s is not None:
        return min(requested_s, MAX_CALL_TIMEOUT_S)
    return tool.timeout_s if tool.timeout_s is not None else default_s


def timed_out_outcome(name: str, limit_s: float, final: Outcome | None, note: str = "") -> Outcome:
    """The is_error outcome of a timed-out call; `final` is what `on_timeout` returned."""
    head = f"`{name}` timed out after {limit_s:g} s{note}"
    if final is None:
        return error_outcome(head)
    return Outcome(
        parts=(TextBlock(text=head), *final.parts),
        is_error=True,
        system_notes=final.system_notes,
        display=final.display,
    )


async def call_on_timeout(tool: Tool, info: TimedOut, grace_s: float) -> tuple[Outcome | None, str]:
    """Run `tool.on_timeout(info)` within `grace_s`; returns (its outcome or None, a note when it
    failed)."""
    hook = tool.on_timeout
    if hook is None:
        return None, ""
    try:
        async with asyncio.timeout(grace_s):
            if inspect.iscoroutinefunction(hook):
                raw = await hook(info)
            else:
                raw = await asyncio.to_thread(hook, info)
    except TimeoutError:
        return None, f" (its on_timeout cleanup did not finish within {grace_s:g} s)"
    except Exception as e:
        return None, f" (its on_timeout cleanup failed: {describe_exception(e)})"
    return (None if raw is None else to_outcome(raw)), ""


async def run_tool(
    registry: ToolRegistry,
    call: ToolCallBlock,
    ctx: ToolContext,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    redact: Redactor | None = None,
    grace_s: float = ON_TIMEOUT_GRACE_S,
) -> ToolRunResult:
    """Run one tool call; tool faults become is_error results.

    Args:
        registry: the tools offered.
        call: the model's call. A call with `invalid` set is never run.
        ctx: the context injected into tools that ask for it.
        timeout_s: the time limit (s) for tools without their own `timeout_s` or `timeout`
            argument.
        redact: applied to every text part and system note (e.g.
            `tether.tools.env.redact_secrets`), or None.
        grace_s: how long an `on_timeout` callback may take (s).

    Returns:
        The ToolRunResult; its block answers `call.id` and never has empty or blank content.

    Raises:
        asyncio.CancelledError: the run was cancelled (never swallowed; a worker process is
            killed first).
    """
    tool = registry.get(call.name)
    if tool is None:
        names = ", ".join(registry.names()) or "(none)"
        return ToolRunResult(
            block=_error(call.id, f"unknown tool {call.name!r}; available tools: {names}")
        )
    if call.invalid is not None:
        return ToolRunResult(
            block=_error(
                call.id,
                f"the arguments of this `{call.name}` call were unusable ({call.invalid}); the "
                "call was not run: re-issue it with complete, valid JSON arguments (if they were "
                "truncated, e.g. in smaller pieces)",
            )
        )
    try:
        kwargs = tool.bind(call.arguments, ctx)
    except ValidationError as e:
        return ToolRunResult(block=_error(call.id, format_validation_error(tool.name, e)))
    requested_s = tool.split_timeout(kwargs)
    if requested_s is not None and not requested_s > 0:
        return ToolRunResult(
            block=_error(
                call.id,
                f"invalid arguments for tool `{tool.name}`; the call was not run:\n"
                f"- timeout: must be a number of seconds > 0 (at most {MAX_CALL_TIMEOUT_S:g})",
            )
        )
    limit_s = call_limit_s(tool, requested_s, timeout_s)
    if tool.source is not None:
        from tether.tools.worker import run_in_worker

        outcome = await run_in_worker(tool, call.arguments, ctx, limit_s=limit_s, grace_s=grace_s)
    else:
        outcome = await _run_in_process(tool, kwargs, ctx, limit_s, grace_s)
    return finish(call.id, outcome, redact)


async def _run_in_process(
    tool: Tool, kwargs: dict[str, Any], ctx: ToolContext, limit_s: float, grace_s: float
) -> Outcome:
    deadline: asyncio.Timeout | None = None
    try:
        if tool.is_async:
            async with asyncio.timeout(limit_s) as deadline:
                raw = await tool.fn(**kwargs)
        elif tool.inline:
            raw = tool.fn(**kwargs)
        else:
            async with asyncio.timeout(limit_s) as deadline:
                raw = await asyncio.to_thread(tool.fn, **kwargs)
    except TimeoutError as e:
        if deadline is not None and deadline.expired():
            args = {k: v for k, v in kwargs.items() if k != tool.context_param}
            info = TimedOut(tool=tool.name, arguments=args, ctx=ctx, limit_s=limit_s)
            final, note = await call_on_timeout(tool, info, grace_s)
            return timed_out_outcome(tool.name, limit_s, final, note)
        return exception_outcome(e)  # the tool's own TimeoutError
    except Exception as e:
        return exception_outcome(e)
    return to_outcome(raw)


async def run_tool_call(
    registry: ToolRegistry,
    call: ToolCallBlock,
    ctx: ToolContext,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    redact: Redactor | None = None,
    grace_s: float = ON_TIMEOUT_GRACE_S,
) -> ToolResultBlock:
    """`run_tool(...).block`: the tool_result only (system notes and display dropped)."""
    run = await run_tool(registry, call, ctx, timeout_s=timeout_s, redact=redact, grace_s=grace_s)
    return run.block
