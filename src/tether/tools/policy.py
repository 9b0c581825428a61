"""Safe mode: which tools a request offers and which calls may run.

Owns: `offered_specs` (the tool list of one request: only `safe` tools in safe mode),
`refuse_in_safe_mode` (the is_error result for a non-safe call that arrives anyway: it is never
run), `resolve_sandbox` (an agent's sandbox setting → a `Sandbox` or None) and the texts of the
no-sandbox warning and the refusal.
Does not own: the `safe` flag (`tether.tools.base.Tool`), the sandboxes (`tether.tools.sandbox`),
when a mode switch takes effect (the loop reads the mode once per request).

Rule: with no OS sandbox, safe mode is forced (nothing could stop a write or a shell command
from reaching outside the working folder); there is no opt-out.
"""

from __future__ import annotations

from typing import Literal

from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock
from tether.providers.base import ToolSpec
from tether.tools.registry import ToolRegistry
from tether.tools.sandbox import Sandbox, detect_sandbox

SandboxSetting = Sandbox | Literal["auto"] | None
"""`"auto"`: detect (bwrap, else Landlock, else none; `TETHER_SANDBOX` forces a kind);
a `Sandbox`: use it; None: no OS sandbox (forces safe mode)."""

NO_SANDBOX_WARNING = (
    "no OS sandbox is available (install bubblewrap, or use a Linux kernel with Landlock): "
    "safe mode is forced, only read-only tools are offered and run"
)

def resolve_sandbox(setting: SandboxSetting) -> Sandbox | None:
    """The sandbox an agent uses for `setting` (see `SandboxSetting`).

    Raises:
        tether.tools.sandbox.SandboxUnavailableError: `TETHER_SANDBOX` forces a kind that does
            not work here.
    """
    return detect_sandbox() if setting == "auto" else setting


def offered_specs(registry: ToolRegistry, safe_mode: bool) -> tuple[ToolSpec, ...]:
    """The tools one request offers: all of them, or only the `safe` ones in safe mode (both
    cached by the registry: one attribute read per request)."""
    return registry.safe_specs() if safe_mode else registry.specs()


def refuse_in_safe_mode(
    registry: ToolRegistry, call: ToolCallBlock, safe_mode: bool
) -> ToolResultBlock | None:
    """The is_error result for `call` when safe mode forbids it (a known tool without the `safe`
    flag), else None (run it; unknown tools are reported by the runner)."""
    if not safe_mode:
        return None
    tool = registry.get(call.name)
    if tool is None or tool.safe:
        return None
    allowed = ", ".join(t.name for t in registry if t.safe) or "(none)"
    text = (
        f"refused: `{call.name}` can modify files or run commands, and this session is in safe "
        f"mode (read-only tools only: {allowed}); the call was not run"
    )
    return ToolResultBlock(tool_call_id=call.id, content=(TextBlock(text=text),), is_error=True)
