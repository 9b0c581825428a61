"""tether: an agent harness for long sessions — the public face.

    from tether import Agent
    result = Agent("anthropic/claude-sonnet-4-5").run_sync("What is 2 + 2?")
    print(result.text)

Every name here is listed once, in `PUBLIC_API` (name → the module that defines it); names are
imported on first use, so `import tether` is cheap (a tool worker process imports only what it
needs). Type checkers read `__init__.pyi`, generated from `PUBLIC_API` (run
`python tests/architecture/test_public_api.py` after changing it; a test checks they agree).
Deeper modules (`tether.wire`, `tether.compaction`, `tether.providers`, ...) are for extending
tether; `tether.testing` holds the scripted provider and the deterministic runtime.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

PUBLIC_API: dict[str, str] = {
    # the agent
    "Agent": "tether.agent.agent",
    "Host": "tether.agent.host",
    "AgentSession": "tether.agent.sessions",
    "RunResult": "tether.agent.turn.state",
    "Runtime": "tether.agent.runtime",
    "AutoCompaction": "tether.agent.turn.compacting",
    # the approval gate
    "ApprovalRequest": "tether.agent.approval",
    "ApprovalDecision": "tether.agent.approval",
    # hooks and subagents
    "Hooks": "tether.agent.turn.hooks",
    "HookInput": "tether.agent.turn.hooks",
    "HookDecision": "tether.agent.turn.hooks",
    "task_tool": "tether.agent.subagents",
    # the one config
    "AgentConfig": "tether.settings.model",
    "load_config": "tether.settings.files",
    # tools
    "tool": "tether.tools.base",
    "Tool": "tether.tools.base",
    "ToolContext": "tether.tools.context",
    "ToolOutput": "tether.tools.context",
    "builtin_tools": "tether.tools.builtin.toolset",
    # sessions
    "SessionStore": "tether.session.store",
    # vocabulary
    "Turn": "tether.messages",
    "Usage": "tether.messages",
    # events
    "AgentEvent": "tether.agent.events",
    "SessionStartEvent": "tether.agent.events",
    "EnvEvent": "tether.agent.events",
    "TurnStartEvent": "tether.agent.events",
    "TextDeltaEvent": "tether.agent.events",
    "ThinkingDeltaEvent": "tether.agent.events",
    "ToolCallEvent": "tether.agent.events",
    "ServerToolEvent": "tether.agent.events",
    "ToolResultEvent": "tether.agent.events",
    "ToolStartEvent": "tether.agent.events",
    "TurnEndEvent": "tether.agent.events",
    "WireRepairEvent": "tether.agent.events",
    "RetryEvent": "tether.agent.events",
    "FallbackEvent": "tether.agent.events",
    "ErrorEvent": "tether.agent.events",
    "WarningEvent": "tether.agent.events",
    "CompactionStartEvent": "tether.agent.events",
    "CompactionEndEvent": "tether.agent.events",
    "DiscardEvent": "tether.agent.events",
    "DoneEvent": "tether.agent.events",
    "SubagentEvent": "tether.agent.events",
    # the error tree (drawn in `tether.errors`)
    "TetherError": "tether.errors",
    "ConfigError": "tether.errors",
    "AuthError": "tether.errors",
    "SessionError": "tether.errors",
    "SessionNotFoundError": "tether.errors",
    "SessionBusyError": "tether.errors",
    "WireError": "tether.errors",
    "RunError": "tether.errors",
    "LengthResumeExhausted": "tether.errors",
    "ToolError": "tether.errors",
}
"""The public API surface, in one place: each name and the module it comes from."""

__all__ = sorted(PUBLIC_API)  # pyright: ignore[reportUnsupportedDunderAll]


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    module = PUBLIC_API.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *PUBLIC_API])
