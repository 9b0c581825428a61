"""Running one tool call: validation, timeout, and turning every outcome into a tool_result.

Owns: `run_tool` (→ `ToolRunResult`: the tool_result block, system notes, display value) and its
block-only form `run_tool_call`; neither raises for a tool fault (only `asyncio.CancelledError`
and non-`Exception` BaseExceptions propagate); a result with no visible output gets a non-empty
placeholder (`NO_OUTPUT`: providers reject empty text).
Does not own: the result conversion rules (`tether.tools.exec.outcome.to_outcome`), parallelism
across calls (the loop's TaskGroup), persisting oversized results, confirmation prompts, or the
worker process (`tether.tools.exec.worker`).

Execution: a folder-scanned tool (`Tool.source` set) runs in a worker subprocess; an async tool
runs under `asyncio.timeout`; a sync tool in a worker thread (`asyncio.to_thread`) under the
same timeout, unless declared `inline=True` (then on the event loop, untimed). A timed-out
worker thread cannot be killed: it finishes in the background and its result is dropped.

Time limits (seconds): the tool's `timeout` argument when it declares one (capped at
`ToolContext.max_timeout_s`, the `tools.max_timeout` setting, 1200 by default), else the tool's
`timeout_s`, else the runner's `timeout_s` (default 120); a tool that times itself (`bash`) gets
the ceiling plus `TIMES_ITSELF_MARGIN_S`. On expiry the tool's `on_timeout` (if any) is called once and gets `grace_s`
(default 60) to clean up or return a final result; then a worker's process group is killed.
A timed-out call is always an is_error result starting with "`name` timed out after N s".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.tools.base import (
    DEFAULT_TIMEOUT_S,
    MAX_CALL_TIMEOUT_S,
    TIMES_ITSELF_MARGIN_S,
    TimedOut,
    Tool,
)
from tether.tools.context import ToolContext
from tether.tools.exec.outcome import (
    Outcome,
    call_on_timeout,
    exception_outcome,
    format_validation_error,
    timed_out_outcome,
    to_outcome,
)
from tether.tools.exec.persist import redact_file
from tether.tools.registry import ToolRegistry

NO_OUTPUT = "(no output)"
"""The placeholder for a result with no visible text (providers reject empty text parts)."""
ON_TIMEOUT_GRACE_S = 60.0
"""How long an `on_timeout` callback may take (s) before the call's processes are killed."""

Redactor = Callable[[str], str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRunResult:
    """Everything one call produced.

    Attributes:
        block: the tool_result block (what is stored and sent to the model).
        system_notes: notes for the model, rendered after ALL tool_results of the turn as
            `<system-reminder>…</system-reminder>` text blocks (see `system_note_block`).
        display: a JSON-able value for the host (the `tool_result` event's `display` field);
            never sent to the model, never stored.
        raw: the exact output bytes the block's text stands for (`ToolOutput.raw`, redacted
            like the text: bytes, or a file holding them), which the output gate saves; None:
            the text is the output.
    """

    block: ToolResultBlock
    system_notes: tuple[str, ...] = ()
    display: Any = None
    raw: bytes | Path | None = None


SYSTEM_NOTE_OPEN = "<system-reminder>"
"""How a system note's text begins (`system_note_block`)."""
SYSTEM_NOTE_CLOSE = "</system-reminder>"
"""How it ends."""


def is_system_note(text: str) -> bool:
    """Whether a user turn's text is a system note (the harness's, not the user's)."""
    return text.startswith(SYSTEM_NOTE_OPEN)


def system_note_text(text: str) -> str:
    """A system note's text without its tags."""
    return text.removeprefix(SYSTEM_NOTE_OPEN).removesuffix(SYSTEM_NOTE_CLOSE).strip()


def system_note_block(note: str) -> TextBlock:
    """The stored/wire rendering of one system note: a text block in the results turn, after
    every tool_result (Anthropic: tool_result blocks first in their user message, then any
    text; Chat Completions adapters put that text in a user message after the tool messages)."""
    return TextBlock(text=f"{SYSTEM_NOTE_OPEN}\n{note.strip()}\n{SYSTEM_NOTE_CLOSE}")


def _error(call_id: str, text: str) -> ToolResultBlock:
    return ToolResultBlock(
        tool_call_id=call_id, content=(TextBlock(text=text or "error"),), is_error=True
    )


def _redacted(part: TextBlock, redact: Redactor) -> TextBlock:
    """`part` with its text redacted (`part` itself when nothing was masked)."""
    text = redact(part.text)
    return part if text is part.text else TextBlock(text=text)


def finish(call_id: str, outcome: Outcome, redact: Redactor | None) -> ToolRunResult:
    """Tie `outcome` to `call_id`: redact text (and the raw output), fill the empty-output
    placeholder."""
    parts = outcome.parts
    notes = outcome.system_notes
    raw = outcome.raw
    if redact is not None:
        parts = tuple([_redacted(p, redact) if isinstance(p, TextBlock) else p for p in parts])
        notes = tuple(redact(n) for n in notes)
        if isinstance(raw, Path):
            redact_file(raw, redact)
        elif raw is not None:
            raw = redact(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    if not parts:
        parts = (TextBlock(text=NO_OUTPUT),)
    block = ToolResultBlock(tool_call_id=call_id, content=parts, is_error=outcome.is_error)
    return ToolRunResult(block=block, system_notes=notes, display=outcome.display, raw=raw)


def call_limit_s(
    tool: Tool, requested_s: float | None, default_s: float, max_s: float = MAX_CALL_TIMEOUT_S
) -> float:
    """The time limit of one call (s): the model's `timeout` argument capped at `max_s` (the
    `tools.max_timeout` setting), else the tool's `timeout_s`, else `default_s`; for a tool
    that times itself, `max_s` plus `TIMES_ITSELF_MARGIN_S`."""
    if tool.times_itself:
        return max_s + TIMES_ITSELF_MARGIN_S
    if requested_s is not None:
        return min(requested_s, max_s)
    return tool.timeout_s if tool.timeout_s is not None else default_s


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
        names = ", ".join(registry.model_names()) or "(none)"
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
    if (
        (ctx.states is not None or tool.settings is not None)
        and ctx.tool_name != tool.name
        and tool.reads_context  # else the tool never sees it: no copy
    ):
        ctx = replace(ctx, tool_name=tool.name)  # `ctx.state`, `ctx.settings`: this tool's own
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
                f"- timeout: must be a number of seconds > 0 (at most {ctx.max_timeout_s:g})",
            )
        )
    limit_s = call_limit_s(tool, requested_s, timeout_s, ctx.max_timeout_s)
    if tool.source is not None:
        from tether.tools.exec.worker import run_in_worker

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
