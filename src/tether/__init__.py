"""tether: an agent harness for long sessions — the public face.

    from tether import Agent
    result = Agent("anthropic/claude-sonnet-4-5").run_sync("What is 2 + 2?")
    print(result.text)

Every name here is listed once, in `PUBLIC_API` (name → the module that defines it); names are
imported on first use, so `import tether` is cheap (a tool worker process imports only what it
needs). Deeper modules (`tether.wire`, `tether.compaction`, `tether.providers`, ...) are for
extending tether; `tether.testing` holds the scripted provider and the deterministic runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

PUBLIC_API: dict[str, str] = {
    # the agent
    "Agent": "tether.agent.loop",
    "RunResult": "tether.agent.loop",
    "run_sync": "tether.agent.loop",
    "Runtime": "tether.agent.runtime",
    "AutoCompaction": "tether.agent.context",
    # the approval gate
    "ApprovalRequest": "tether.agent.approval",
    "ApprovalDecision": "tether.agent.approval",
    # hooks and subagents
    "Hooks": "tether.agent.hooks",
    "HookInput": "tether.agent.hooks",
    "HookDecision": "tether.agent.hooks",
    "task_tool": "tether.agent.subagents",
    # the one config
    "AgentConfig": "tether.config",
    "load_config": "tether.config",
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
    "TurnStartEvent": "tether.agent.events",
    "TextDeltaEvent": "tether.agent.events",
    "ThinkingDeltaEvent": "tether.agent.events",
    "ToolCallEvent": "tether.agent.events",
    "ToolResultEvent": "tether.agent.events",
    "TurnEndEvent": "tether.agent.events",
    "WireRepairEvent": "tether.agent.events",
    "RetryEvent": "tether.agent.events",
    "FallbackEvent": "tether.agent.events",
    "ErrorEvent": "tether.agent.events",
    "WarningEvent": "tether.agent.events",
    "CompactionStartEvent": "tether.agent.events",
    "CompactionEndEvent": "tether.agent.events",
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
    "CancelledRunError": "tether.errors",
    "ToolError": "tether.errors",
}
"""The public API surface, in one place: each name and the module it comes from."""

__all__ = sorted(PUBLIC_API)  # pyright: ignore[reportUnsupportedDunderAll]

if TYPE_CHECKING:
    from tether.agent.approval import ApprovalDecision as ApprovalDecision
    from tether.agent.approval import ApprovalRequest as ApprovalRequest
    from tether.agent.context import AutoCompaction as AutoCompaction
    from tether.agent.events import AgentEvent as AgentEvent
    from tether.agent.events import CompactionEndEvent as CompactionEndEvent
    from tether.agent.events import CompactionStartEvent as CompactionStartEvent
    from tether.agent.events import DoneEvent as DoneEvent
    from tether.agent.events import ErrorEvent as ErrorEvent
    from tether.agent.events import FallbackEvent as FallbackEvent
    from tether.agent.events import RetryEvent as RetryEvent
    from tether.agent.events import SessionStartEvent as SessionStartEvent
    from tether.agent.events import SubagentEvent as SubagentEvent
    from tether.agent.events import TextDeltaEvent as TextDeltaEvent
    from tether.agent.events import ThinkingDeltaEvent as ThinkingDeltaEvent
    from tether.agent.events import ToolCallEvent as ToolCallEvent
    from tether.agent.events import ToolResultEvent as ToolResultEvent
    from tether.agent.events import TurnEndEvent as TurnEndEvent
    from tether.agent.events import TurnStartEvent as TurnStartEvent
    from tether.agent.events import WarningEvent as WarningEvent
    from tether.agent.events import WireRepairEvent as WireRepairEvent
    from tether.agent.hooks import HookDecision as HookDecision
    from tether.agent.hooks import HookInput as HookInput
    from tether.agent.hooks import Hooks as Hooks
    from tether.agent.loop import Agent as Agent
    from tether.agent.loop import RunResult as RunResult
    from tether.agent.loop import run_sync as run_sync
    from tether.agent.runtime import Runtime as Runtime
    from tether.agent.subagents import task_tool as task_tool
    from tether.config import AgentConfig as AgentConfig
    from tether.config import load_config as load_config
    from tether.errors import AuthError as AuthError
    from tether.errors import CancelledRunError as CancelledRunError
    from tether.errors import ConfigError as ConfigError
    from tether.errors import LengthResumeExhausted as LengthResumeExhausted
    from tether.errors import RunError as RunError
    from tether.errors import SessionBusyError as SessionBusyError
    from tether.errors import SessionError as SessionError
    from tether.errors import SessionNotFoundError as SessionNotFoundError
    from tether.errors import TetherError as TetherError
    from tether.errors import ToolError as ToolError
    from tether.errors import WireError as WireError
    from tether.messages import Turn as Turn
    from tether.messages import Usage as Usage
    from tether.session.store import SessionStore as SessionStore
    from tether.tools.base import Tool as Tool
    from tether.tools.base import tool as tool
    from tether.tools.builtin.toolset import builtin_tools as builtin_tools
    from tether.tools.context import ToolContext as ToolContext
    from tether.tools.context import ToolOutput as ToolOutput


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
