"""Safe mode: which tools a request offers and which calls may run.

Owns: `offered_specs` (the tool list of one request: only `safe` tools in safe mode),
`refuse_in_safe_mode` (the is_error result for a non-safe call that arrives anyway: it is never
run) and the text of the refusal.
Does not own: the `safe` flag (`tether.tools.base.Tool`), the rule that forces safe mode without
an OS sandbox and its warning (`tether.sandbox.policy.NO_SANDBOX_WARNING`), when a mode switch
takes effect (the loop reads the mode once per request).
"""

from __future__ import annotations

from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.providers.base import ToolSpec
from tether.tools.registry import ToolRegistry


def offered_specs(registry: ToolRegistry, safe_mode: bool) -> tuple[ToolSpec, ...]:
    """The tools one request offers: all of them, or only the `safe` ones in safe mode (both
    cached by the registry: one attribute read per request)."""
    return registry.safe_specs() if safe_mode else registry.specs()


def refuse_in_safe_mode(
    registry: ToolRegistry, call: ToolCallBlock, safe_mode: bool, *, plan: bool = False
) -> ToolResultBlock | None:
    """The is_error result for `call` when safe mode forbids it (a known tool without the `safe`
    flag), else None (run it; unknown tools are reported by the runner). `plan`: the run is in
    plan mode (which runs as safe mode), and the refusal says so."""
    if not safe_mode:
        return None
    tool = registry.get(call.name)
    if tool is None or tool.safe:
        return None
    allowed = ", ".join(t.name for t in registry if t.safe) or "(none)"
    mode = "plan mode: read-only tools until the plan is approved" if plan else "safe mode"
    text = (
        f"refused: `{call.name}` can modify files or run commands, and this session is in "
        f"{mode} (read-only tools only: {allowed}); the call was not run"
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)
