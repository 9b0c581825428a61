"""Type stub of `tether`, generated from `PUBLIC_API` in `__init__.py` (do not edit: run
`PYTHONPATH=src python tests/architecture/test_public_api.py`)."""

from tether.agent.agent import Agent as Agent
from tether.agent.approval import ApprovalDecision as ApprovalDecision
from tether.agent.approval import ApprovalRequest as ApprovalRequest
from tether.agent.events import AgentEvent as AgentEvent
from tether.agent.events import CompactionEndEvent as CompactionEndEvent
from tether.agent.events import CompactionStartEvent as CompactionStartEvent
from tether.agent.events import DiscardEvent as DiscardEvent
from tether.agent.events import DoneEvent as DoneEvent
from tether.agent.events import EnvEvent as EnvEvent
from tether.agent.events import ErrorEvent as ErrorEvent
from tether.agent.events import FallbackEvent as FallbackEvent
from tether.agent.events import RetryEvent as RetryEvent
from tether.agent.events import ServerToolEvent as ServerToolEvent
from tether.agent.events import SessionStartEvent as SessionStartEvent
from tether.agent.events import SubagentEvent as SubagentEvent
from tether.agent.events import TextDeltaEvent as TextDeltaEvent
from tether.agent.events import ThinkingDeltaEvent as ThinkingDeltaEvent
from tether.agent.events import ToolCallEvent as ToolCallEvent
from tether.agent.events import ToolResultEvent as ToolResultEvent
from tether.agent.events import ToolStartEvent as ToolStartEvent
from tether.agent.events import TurnEndEvent as TurnEndEvent
from tether.agent.events import TurnStartEvent as TurnStartEvent
from tether.agent.events import WarningEvent as WarningEvent
from tether.agent.events import WireRepairEvent as WireRepairEvent
from tether.agent.host import Host as Host
from tether.agent.runtime import Runtime as Runtime
from tether.agent.sessions import AgentSession as AgentSession
from tether.agent.subagents import task_tool as task_tool
from tether.agent.turn.compacting import AutoCompaction as AutoCompaction
from tether.agent.turn.hooks import HookDecision as HookDecision
from tether.agent.turn.hooks import HookInput as HookInput
from tether.agent.turn.hooks import Hooks as Hooks
from tether.agent.turn.state import RunResult as RunResult
from tether.errors import AuthError as AuthError
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
from tether.settings.files import load_config as load_config
from tether.settings.model import AgentConfig as AgentConfig
from tether.tools.base import Tool as Tool
from tether.tools.base import tool as tool
from tether.tools.builtin.toolset import builtin_tools as builtin_tools
from tether.tools.context import ToolContext as ToolContext
from tether.tools.context import ToolOutput as ToolOutput

__version__: str
PUBLIC_API: dict[str, str]

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "AgentSession",
    "ApprovalDecision",
    "ApprovalRequest",
    "AuthError",
    "AutoCompaction",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "ConfigError",
    "DiscardEvent",
    "DoneEvent",
    "EnvEvent",
    "ErrorEvent",
    "FallbackEvent",
    "HookDecision",
    "HookInput",
    "Hooks",
    "Host",
    "LengthResumeExhausted",
    "RetryEvent",
    "RunError",
    "RunResult",
    "Runtime",
    "ServerToolEvent",
    "SessionBusyError",
    "SessionError",
    "SessionNotFoundError",
    "SessionStartEvent",
    "SessionStore",
    "SubagentEvent",
    "TetherError",
    "TextDeltaEvent",
    "ThinkingDeltaEvent",
    "Tool",
    "ToolCallEvent",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "ToolResultEvent",
    "ToolStartEvent",
    "Turn",
    "TurnEndEvent",
    "TurnStartEvent",
    "Usage",
    "WarningEvent",
    "WireError",
    "WireRepairEvent",
    "builtin_tools",
    "load_config",
    "task_tool",
    "tool",
]
