"""Tools: definition, registry, execution, the path guard, environment scrubbing, built-ins.

Owns: everything between a model's tool call and its tool_result (the I/O edge).
Does not own: the loop that decides which calls run (`tether.agent`), or persisting oversized
results (the session layer).
"""

from tether.tools.base import Tool, ToolContext, ToolError, ToolOutput, tool
from tether.tools.builtins import builtin_tools
from tether.tools.env import DEFAULT_REFUSED, redact_secrets, scrubbed_env, secret_values
from tether.tools.paths import PathDeniedError, PathOutsideError, PathPolicy, resolve_inside
from tether.tools.registry import ToolRegistry
from tether.tools.run import NO_OUTPUT, run_tool_call

__all__ = [
    "DEFAULT_REFUSED",
    "NO_OUTPUT",
    "PathDeniedError",
    "PathOutsideError",
    "PathPolicy",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "ToolRegistry",
    "builtin_tools",
    "redact_secrets",
    "resolve_inside",
    "run_tool_call",
    "scrubbed_env",
    "secret_values",
    "tool",
]
