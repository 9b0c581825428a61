"""The user's own tool calls (issue 39, audit row 10): `tether tool NAME --json ARGS`, `/tool NAME
JSON` in the TUI. Any tool of the agent may be called so, `secret` ones included (`Tool.secret`:
kept out of the model's catalog and uncallable by the model, callable only here).

Owns: `parse_arguments` (the JSON text → an arguments object, or the one-line reason),
`call_directly` (one call through the same runner the model's calls take: the agent's tool
context — sandbox, path policy, environment —, its time limit and its redaction; a call the
permission rules deny is refused, as it is for the model — `ask` needs no asking, the user
is the one calling) and
`tool_lines` (the `--list` rows).
Does not own: the runner (`tether.tools.exec.run`), building the agent (`tether.agent`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any, cast

from tether.messages import ToolCallBlock, ToolResultBlock, tool_result
from tether.permissions.rules import Rules
from tether.tools.base import DEFAULT_TIMEOUT_S
from tether.tools.context import ToolContext
from tether.tools.exec.run import Redactor, run_tool
from tether.tools.registry import ToolRegistry
from tether.tools.tool_settings import settings_lines

__all__ = ["call_directly", "parse_arguments", "tool_lines"]

_ids = itertools.count(1)


def parse_arguments(text: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """`text` (None or blank: `{}`) as a call's arguments: (the object, None), or (None, why)."""
    if text is None or not text.strip():
        return {}, None
    try:
        value: object = json.loads(text)
    except ValueError as exc:
        return None, f"the arguments are not JSON ({exc})"
    if not isinstance(value, dict):
        return None, "the arguments must be a JSON object"
    return cast(dict[str, Any], value), None


async def call_directly(
    registry: ToolRegistry,
    name: str,
    arguments: dict[str, Any],
    ctx: ToolContext,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    redact: Redactor | None = None,
    rules: Rules | None = None,
) -> ToolResultBlock:
    """Run the tool `name` (a `secret` one too) with `arguments`, as a call of the model's would
    run (arguments validated, time-limited, output redacted); its result block (`is_error` for
    an unknown tool, bad arguments, a call `rules` deny, or a fault)."""
    call = ToolCallBlock(id=f"user_{next(_ids)}", name=name, arguments=arguments)
    tool = registry.user_get(name)
    if tool is None:
        names = ", ".join(t.name for t in registry) or "(none)"
        return tool_result(call.id, f"unknown tool {name!r}; tools: {names}", is_error=True)
    decision = (rules or Rules()).decide(name, arguments, str(ctx.root))
    if decision.action == "deny":
        return tool_result(call.id, f"denied: {decision.reason}", is_error=True)
    one = ToolRegistry([replace(tool, secret=False)])  # the user may call what the model may not
    result = await run_tool(
        one, call, replace(ctx, call_id=call.id), timeout_s=timeout_s, redact=redact
    )
    return result.block


def tool_lines(registry: ToolRegistry) -> list[str]:
    """One row per tool: its name, `secret` / `read-only` marks, the first line of its
    description."""
    rows: list[str] = []
    width = max((len(t.name) for t in registry), default=0)
    for t in registry:
        marks = [m for m, on in (("secret", t.secret), ("read-only", t.safe)) if on]
        about = t.description.strip().splitlines()[0] if t.description.strip() else ""
        tag = f"[{', '.join(marks)}] " if marks else ""
        rows.append(f"{t.name:<{width}}  {tag}{about}")
        rows += [f"{'':<{width}}  {line}" for line in settings_lines(t)]
    return rows
