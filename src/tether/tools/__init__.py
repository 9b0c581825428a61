"""Tools in three layers: definition, execution and the built-ins (the sandbox below them is
`tether.sandbox`).

Owns: everything between a model's tool call and its tool_result (the I/O edge).
- definition: `tether.tools.base` (`Tool`, `@tool`), `tether.tools.context` (`ToolContext`,
  `ToolOutput`, the question protocol), `tether.tools.registry`, `tether.tools.scan` (tool
  folders), `tether.tools.env` (environment scrubbing);
- execution: `tether.tools.exec` (dispatch, outcomes, the worker and its fork server, call
  hygiene, the output gate);
- built-ins: `tether.tools.builtin` (files, search, bash, question).
Does not own: the loop that decides which calls run (`tether.agent`), or persisting oversized
results (the session layer).

Names are imported on first use (PEP 562), so importing one tools module does not load the
others (a tool worker process imports only what it needs).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_NAMES: dict[str, str] = {
    "DEFAULT_REFUSED": "tether.tools.env",
    "NO_OUTPUT": "tether.tools.exec.run",
    "DedupRule": "tether.tools.exec.hygiene",
    "Hygiene": "tether.tools.exec.hygiene",
    "HygieneConfig": "tether.tools.exec.hygiene",
    "PathDeniedError": "tether.errors",
    "PathOutsideError": "tether.errors",
    "PathPolicy": "tether.sandbox.policy",
    "QuestionBridge": "tether.tools.context",
    "TimedOut": "tether.tools.base",
    "Tool": "tether.tools.base",
    "ToolConflictError": "tether.tools.scan",
    "ToolContext": "tether.tools.context",
    "ToolError": "tether.errors",
    "ToolFolders": "tether.tools.scan",
    "ToolOutput": "tether.tools.context",
    "ToolRegistry": "tether.tools.registry",
    "ToolRunResult": "tether.tools.exec.run",
    "builtin_tools": "tether.tools.builtin.toolset",
    "canonical_shell": "tether.tools.exec.hygiene",
    "question": "tether.tools.builtin.question",
    "redact_secrets": "tether.tools.env",
    "resolve_inside": "tether.sandbox.paths",
    "run_tool": "tether.tools.exec.run",
    "run_tool_call": "tether.tools.exec.run",
    "scan_tool_folders": "tether.tools.scan",
    "scrubbed_env": "tether.tools.env",
    "secret_values": "tether.tools.env",
    "tool": "tether.tools.base",
}

__all__ = [
    "DEFAULT_REFUSED",
    "NO_OUTPUT",
    "DedupRule",
    "Hygiene",
    "HygieneConfig",
    "PathDeniedError",
    "PathOutsideError",
    "PathPolicy",
    "QuestionBridge",
    "TimedOut",
    "Tool",
    "ToolConflictError",
    "ToolContext",
    "ToolError",
    "ToolFolders",
    "ToolOutput",
    "ToolRegistry",
    "ToolRunResult",
    "builtin_tools",
    "canonical_shell",
    "question",
    "redact_secrets",
    "resolve_inside",
    "run_tool",
    "run_tool_call",
    "scan_tool_folders",
    "scrubbed_env",
    "secret_values",
    "tool",
]

if TYPE_CHECKING:
    from tether.errors import PathDeniedError as PathDeniedError
    from tether.errors import PathOutsideError as PathOutsideError
    from tether.errors import ToolError as ToolError
    from tether.sandbox.paths import resolve_inside as resolve_inside
    from tether.sandbox.policy import PathPolicy as PathPolicy
    from tether.tools.base import TimedOut as TimedOut
    from tether.tools.base import Tool as Tool
    from tether.tools.base import tool as tool
    from tether.tools.builtin.question import question as question
    from tether.tools.builtin.toolset import builtin_tools as builtin_tools
    from tether.tools.context import QuestionBridge as QuestionBridge
    from tether.tools.context import ToolContext as ToolContext
    from tether.tools.context import ToolOutput as ToolOutput
    from tether.tools.env import DEFAULT_REFUSED as DEFAULT_REFUSED
    from tether.tools.env import redact_secrets as redact_secrets
    from tether.tools.env import scrubbed_env as scrubbed_env
    from tether.tools.env import secret_values as secret_values
    from tether.tools.exec.hygiene import DedupRule as DedupRule
    from tether.tools.exec.hygiene import Hygiene as Hygiene
    from tether.tools.exec.hygiene import HygieneConfig as HygieneConfig
    from tether.tools.exec.hygiene import canonical_shell as canonical_shell
    from tether.tools.exec.run import NO_OUTPUT as NO_OUTPUT
    from tether.tools.exec.run import ToolRunResult as ToolRunResult
    from tether.tools.exec.run import run_tool as run_tool
    from tether.tools.exec.run import run_tool_call as run_tool_call
    from tether.tools.registry import ToolRegistry as ToolRegistry
    from tether.tools.scan import ToolConflictError as ToolConflictError
    from tether.tools.scan import ToolFolders as ToolFolders
    from tether.tools.scan import scan_tool_folders as scan_tool_folders


def __getattr__(name: str) -> Any:
    """Import a name from its module on first use (PEP 562)."""
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'tether.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_NAMES])
