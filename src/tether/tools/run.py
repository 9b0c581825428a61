"""Running one tool call: validation, timeout, and turning every outcome into a tool_result.

Owns: `run_tool_call`, which never raises for a tool fault (only `asyncio.CancelledError` and
non-`Exception` BaseExceptions propagate), and the result conversion rules (a str → one text
part; TextBlock/ImageBlock parts kept; blank text → a non-empty placeholder, T02).
Does not own: parallelism across calls (the loop's TaskGroup), persisting oversized results, or
confirmation prompts.

Execution: async tools run under `asyncio.timeout`; sync tools run in a worker thread
(`asyncio.to_thread`) under the same timeout, unless declared `inline=True` (then on the event
loop, untimed). A timed-out worker thread cannot be killed: it finishes in the background and its
result is dropped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any, cast

from pydantic import ValidationError

from tether.messages import ImageBlock, TextBlock, ToolCallBlock, ToolResultBlock
from tether.tools.base import ToolContext, ToolError, ToolOutput
from tether.tools.registry import ToolRegistry

NO_OUTPUT = "(no output)"
"""The placeholder for a result with no visible text (providers reject empty text parts)."""

Redactor = Callable[[str], str]


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


def _parts(raw: Any) -> tuple[tuple[TextBlock | ImageBlock, ...], bool]:
    """Convert a tool's return value to (parts, is_error); blank text parts are dropped."""
    is_error = False
    if isinstance(raw, ToolOutput):
        is_error = raw.is_error
        raw = raw.content
    if raw is None:
        return (), is_error
    if isinstance(raw, str):
        return ((TextBlock(text=raw),) if raw.strip() else ()), is_error
    if isinstance(raw, TextBlock | ImageBlock):
        raw = (raw,)
    if isinstance(raw, list | tuple):
        items = cast("Sequence[object]", raw)
        blocks = [p for p in items if isinstance(p, TextBlock | ImageBlock)]
        if len(blocks) == len(items):
            kept = tuple(p for p in blocks if not (isinstance(p, TextBlock) and not p.text.strip()))
            return kept, is_error
    try:
        text = json.dumps(cast(object, raw), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(cast(object, raw))
    return ((TextBlock(text=text),) if text.strip() else ()), is_error


def _result(call_id: str, raw: Any, redact: Redactor | None) -> ToolResultBlock:
    parts, is_error = _parts(raw)
    if redact is not None:
        parts = tuple(
            TextBlock(text=redact(p.text)) if isinstance(p, TextBlock) else p for p in parts
        )
    if not parts:
        parts = (TextBlock(text=NO_OUTPUT),)
    return ToolResultBlock(tool_call_id=call_id, content=parts, is_error=is_error)


async def run_tool_call(
    registry: ToolRegistry,
    call: ToolCallBlock,
    ctx: ToolContext,
    *,
    timeout_s: float = 120.0,
    redact: Redactor | None = None,
) -> ToolResultBlock:
    """Run one tool call and return its result; tool faults become is_error results.

    Args:
        registry: the tools offered.
        call: the model's call. A call with `invalid` set is never run.
        ctx: the context injected into tools that ask for it.
        timeout_s: the time limit in seconds for tools without their own `timeout_s`.
        redact: applied to every text part of a successful or failed tool output (e.g.
            `tether.tools.env.redact_secrets`), or None.

    Returns:
        A ToolResultBlock answering `call.id`, never with an empty or blank content.

    Raises:
        asyncio.CancelledError: the run was cancelled (never swallowed).
    """
    tool = registry.get(call.name)
    if tool is None:
        names = ", ".join(registry.names()) or "(none)"
        return _error(call.id, f"unknown tool {call.name!r}; available tools: {names}")
    if call.invalid is not None:
        return _error(
            call.id,
            f"the arguments of this `{call.name}` call were unusable ({call.invalid}); the call "
            "was not run: re-issue it with complete, valid JSON arguments (if they were "
            "truncated, e.g. in smaller pieces)",
        )
    try:
        kwargs = tool.bind(call.arguments, ctx)
    except ValidationError as e:
        return _error(call.id, format_validation_error(tool.name, e))
    limit_s = tool.timeout_s if tool.timeout_s is not None else timeout_s
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
            return _error(call.id, f"`{tool.name}` timed out after {limit_s:g} s")
        return _error(call.id, _describe(e, redact))  # the tool's own TimeoutError
    except ToolError as e:
        return _error(call.id, _redacted(str(e) or type(e).__name__, redact))
    except Exception as e:
        return _error(call.id, _describe(e, redact))
    return _result(call.id, raw, redact)


def _redacted(text: str, redact: Redactor | None) -> str:
    return redact(text) if redact is not None else text


def _describe(e: BaseException, redact: Redactor | None) -> str:
    msg = str(e)
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return _redacted(text, redact)
