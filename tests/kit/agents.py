"""Agents for tests: `make_agent` builds one through the front door (`Agent(...)`, the builder a
library user gets), and `routed` scripts several agents (parent, subagents) at once.

Scripted replies are checked: every `ScriptedProvider` with a list script that `make_agent`
was given must have used all its replies by the end of the test (the suite's autouse fixture
calls `check_scripts`); pass `exact=False` where a test stops the run early on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from kit.events import first_user_text
from kit.sandbox import sandbox_or_skip
from tether import Agent, AgentConfig
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.agent.subagents import task_tool
from tether.providers.base import ModelRequest
from tether.testing import Response, ScriptedProvider, deterministic
from tether.tools.base import Tool
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.registry import ToolRegistry

_scripted: list[ScriptedProvider] = []


def make_agent(
    provider: Any,
    root: Path | str = ".",
    *,
    settings: Mapping[str, Any] | None = None,
    config: AgentConfig | None = None,
    sandbox: str | None = None,
    approval: str | None = None,
    tools: ToolRegistry | Sequence[Tool] = (),
    builtins: bool = False,
    subagents: bool = False,
    events: list[AgentEvent] | None = None,
    exact: bool = True,
    **kw: Any,
) -> Agent:
    """An `Agent` on `provider` (a model, a provider or a fallback list) in `root`.

    Args:
        settings: `AgentConfig` fields (the settings-file shape).
        config: a ready `AgentConfig` instead (`settings`, `sandbox` and `approval` unset).
        sandbox: `tools.sandbox`: `"any"` for a working OS sandbox (the test is skipped
            where none works), a kind, or None for the settings' own.
        approval: `tools.approval` (None: the settings' own).
        tools: tools offered besides the built-ins (a registry: offered as it is).
        builtins: offer the built-in tools too.
        subagents: offer the `task` tool (subagents from `settings["agents"]`).
        events: collects every event (through `Host(on_event=...)`; not with `host=`).
        exact: check at teardown that a scripted list was used up.
        kw: the rest of `Agent`'s keywords (`host`, `runtime`, `session`, `hooks`, ...).
    """
    data: dict[str, Any] = dict(settings or {})
    tool_settings = dict(data.get("tools", {}))
    if sandbox is not None:
        tool_settings["sandbox"] = sandbox_or_skip() if sandbox == "any" else sandbox
    if approval is not None:
        tool_settings["approval"] = approval
    if tool_settings:
        data["tools"] = tool_settings
    if config is not None:
        assert not data, "pass config= or settings=/sandbox=/approval=, not both"
    cfg = config if config is not None else AgentConfig.model_validate(data)
    offered: ToolRegistry | list[Tool]
    if isinstance(tools, ToolRegistry):
        assert not (builtins or subagents), "a registry is offered as it is"
        offered = tools
    else:
        offered = [*tools, *(builtin_tools() if builtins else ())]
        if subagents:
            offered.append(task_tool(cfg.agents))
    if events is not None:
        assert "host" not in kw, "pass events= or host=, not both"
        kw["host"] = Host(on_event=events.append)
    for p in _providers(provider):
        if exact and isinstance(p, ScriptedProvider) and not callable(p.script):
            _scripted.append(p)
    return Agent(provider, config=cfg, tools=offered, root=root, **kw)



def _providers(provider: Any) -> list[Any]:
    """`make_agent`'s `provider` as a list (a fallback list as it is)."""
    return cast("list[Any]", provider) if isinstance(provider, list) else [provider]


def subagent_agent(
    provider: ScriptedProvider,
    root: Path,
    *,
    tools: Sequence[Tool] = (),
    settings: Mapping[str, Any] | None = None,
    **kw: Any,
) -> Agent:
    """The subagent and hook tests' agent: a working OS sandbox (else skip), approval `auto`
    unless `settings` say otherwise, the `task` tool, a deterministic runtime."""
    merged: dict[str, Any] = {"tools": {"sandbox": sandbox_or_skip(), "approval": "auto"}}
    merged |= dict(settings or {})
    kw.setdefault("runtime", deterministic())
    return make_agent(provider, root, settings=merged, tools=tools, subagents=True, **kw)


def check_scripts() -> None:
    """Every scripted list given to `make_agent` since the last call was used up (and forget
    them). Raises AssertionError naming what was left."""
    pending = list(_scripted)
    _scripted.clear()
    for provider in pending:
        provider.assert_consumed()


def forget_scripts() -> None:
    """Drop the providers registered so far without checking them (a failed test)."""
    _scripted.clear()


def routed(plan: dict[str, list[Response]]) -> Callable[[ModelRequest], Response]:
    """A script keyed by the request's first user text (which agent is asking), then by how many
    assistant turns the request already holds (which step of that agent it is)."""

    def respond(request: ModelRequest) -> Response:
        key = first_user_text(request.messages)
        step = sum(1 for t in request.messages if t.role == "assistant")
        return plan[key][step]

    return respond
