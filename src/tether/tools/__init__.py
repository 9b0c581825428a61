"""Tools: definition, registry, execution, the path guard, environment scrubbing, built-ins.

Owns: everything between a model's tool call and its tool_result (the I/O edge).
Does not own: the loop that decides which calls run (`tether.agent`), or persisting oversized
results (the session layer).
"""

from tether.tools.base import TimedOut, Tool, ToolContext, ToolError, ToolOutput, tool
from tether.tools.builtins import builtin_tools
from tether.tools.env import DEFAULT_REFUSED, redact_secrets, scrubbed_env, secret_values
from tether.tools.hygiene import DedupRule, Hygiene, HygieneConfig, canonical_shell
from tether.tools.paths import PathDeniedError, PathOutsideError, PathPolicy, resolve_inside
from tether.tools.question import QuestionBridge, question
from tether.tools.registry import ToolRegistry
from tether.tools.run import NO_OUTPUT, ToolRunResult, run_tool, run_tool_call
from tether.tools.scan import ToolConflictError, ToolFolders, scan_tool_folders

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
