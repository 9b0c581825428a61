"""Subagents: the `task` tool runs a child agent to completion and returns its final answer.

Owns: the `task` tool (`task_tool`), and `Subagents`, one per agent, which runs that agent's
children: the depth limit (`agents.max_depth`: the main agent is depth 0; a depth-limit child
is not offered `task`, and a call that would go deeper is refused), the limit on children
running at once (`agents.max_concurrent`; more calls wait), named subagents (`agents.<name>`,
from the settings or an agent file, `tether.settings.agent_files`: system prompt, tools (its
`tools` bound what a `task` call may ask for, `disallowed_tools` are never offered), model), the child's own session (its header names the caller's session
and the `task` call id; resumable on its own with `tether run --resume <child id>`), its own
context window and compaction, forwarding its events to the host tagged with the agent path
(`SubagentEvent`, `["main", "task:<call id>"]`), and its usage (added to the caller's run,
reported separately as `children_usage`).
Does not own: the spawn permission (`agents.spawn`, in `tether.agent.turn.gate`: through the
approval gate, `kind="spawn"`), building agents (the child is built through the front door:
the caller's own class, `type(agent)(...)`), cancellation mechanics: cancelling the caller's run cancels its running `task`
calls (asyncio), which cancels each child's run; the child persists its partial turn, as any
cancelled run does.

A child inherits its caller's config (tools policy, sandbox, approval mode, hooks, compaction
settings; not its MCP servers: the caller's MCP tools are among the tools it gets), model chain (unless `model` or the named agent says otherwise), working folder,
question bridge and approver (the host sees the child's `agent_path` in each request).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import Field

from tether import worktrees
from tether.agent.approval import ApprovalDecision, ApprovalMode, ApprovalRequest
from tether.agent.assembly import build
from tether.agent.assembly.parts import AgentParts
from tether.agent.events import AgentEvent, DoneEvent, SubagentEvent
from tether.agent.host import Host
from tether.agent.sessions import AgentSession
from tether.agent.turn.budget import Budget
from tether.agent.turn.state import RunResult
from tether.errors import ConfigError, RunError, SessionError
from tether.messages import Usage
from tether.session.store import SessionStore
from tether.settings.model import AgentConfig, AgentsSettings, McpSettings
from tether.tools.base import Tool, tool
from tether.tools.context import ToolContext, ToolOutput

TASK_TOOL = "task"
TASK_TIMEOUT_S = 3600.0
"""The time limit of one `task` call (seconds): the child's whole run."""
SUBAGENT_SYSTEM = (
    "You are a subagent: another agent gave you the task below. Do it with the tools you "
    "have, then reply with a complete, self-contained final answer: it is all the other agent "
    "will see of your work."
)
"""The system prompt of a child without one of its own (`agents.<name>.system`)."""


def _describe(agents: AgentsSettings) -> str:
    text = (
        "Run a subagent: a separate agent with its own context window does the task and "
        "returns its final answer as this tool's result (only that answer, not its steps). "
        "Use it for self-contained work (a search across many files, a review, an "
        "independent part of a change); several `task` calls in one reply run in parallel. "
        "The subagent does not see this conversation: put everything it needs in `prompt`."
    )
    if agents.named:
        lines = [
            f"- {name}: {a.description or ' '.join((a.system or '').split())[:100] or 'a subagent'}"
            for name, a in agents.named.items()
        ]
        text += "\n\nNamed subagents (`agent`):\n" + "\n".join(lines)
    return text


def task_tool(agents: AgentsSettings | None = None) -> Tool:
    """The `task` tool; its description lists the named subagents of `agents`.

    The calling agent must be a `tether.Agent` (it puts its `Subagents.spawn` in the tool
    context); elsewhere a call is an is_error result. The tool's schema is built once per
    process (a `Tool` is frozen and holds no per-agent state); only the description varies.
    """
    return replace(_task_tool(), description=_describe(agents or AgentsSettings()))


@functools.cache
def _task_tool() -> Tool:
    async def task(
        name: Annotated[str, Field(min_length=1, max_length=80)],
        prompt: Annotated[str, Field(min_length=1)],
        agent: str | None = None,
        tools: list[str] | None = None,
        model: str | None = None,
        *,
        ctx: ToolContext,
    ) -> ToolOutput:
        """Run a subagent.

        Args:
            name: a short label for the task (3-6 words), shown to the user.
            prompt: the whole task, with every detail the subagent needs.
            agent: the name of a named subagent to run (see the list above); omit for a
                general-purpose one.
            tools: the names of the tools the subagent may use (a subset of yours); omit for
                all of them.
            model: the model to run it on (`provider/model`); omit for yours.
        """
        if ctx.spawn is None or ctx.call_id is None:
            return ToolOutput("subagents are not available in this agent", is_error=True)
        return await ctx.spawn(
            call_id=ctx.call_id, name=name, prompt=prompt, agent=agent, tools=tools, model=model
        )

    return tool(task, name=TASK_TOOL, description="", timeout_s=TASK_TIMEOUT_S)


class Child(Protocol):
    """What `Subagents` needs of a child agent (a `tether.Agent` is one)."""

    @property
    def agent_path(self) -> tuple[str, ...]: ...

    async def run(self, prompt: str) -> RunResult: ...

    def set_approval_mode(self, mode: ApprovalMode) -> None: ...

    def share_budget(self, budget: Budget | None) -> None: ...

    @property
    def subagents(self) -> Subagents: ...


class Caller(Protocol):
    """What `Subagents` reads of the agent whose `task` calls it runs (a `tether.Agent`)."""

    @property
    def parts(self) -> AgentParts: ...

    @property
    def session(self) -> AgentSession: ...

    @property
    def approval_mode(self) -> ApprovalMode: ...


def with_task_tool(tools: list[Tool], agents: AgentsSettings, note: Callable[[str], None]) -> None:
    """Add the `task` tool to `tools` unless `agents.task_tool` is off or a tool folder already
    defines one (then `note` says subagents are not offered)."""
    if not agents.task_tool:
        return
    if any(t.name == TASK_TOOL for t in tools):
        note(f"note: a tool folder defines `{TASK_TOOL}`: subagents are not offered")
    else:
        tools.append(task_tool(agents))


class Subagents:
    """The children of one agent (module docstring).

    Args:
        caller: the agent whose `task` calls this runs.
        make_child: builds a child with the `tether.Agent` constructor's arguments (the
            caller's own class: `type(agent)`).

    Attributes:
        usage: the usage of the children that ended since the last `take_usage` (tokens; a
            child's total, its own children included).
        running: the children running now, by `task` call id.
        parent: the agent that started this one (None: a main agent) — with `children`,
            `name` and `description`, the agent tree as a host or library sees it.
        name: the named subagent this agent is (`agents.<name>`), else None.
        description: that subagent's description (`agents.<name>.description`), else None.
    """

    def __init__(self, caller: Caller, make_child: Callable[..., Child]) -> None:
        self.caller = caller
        self.make_child = make_child
        self.usage = Usage()
        self.any_ran = False
        self.running: dict[str, Child] = {}
        self.parent: Caller | None = None
        self.name: str | None = None
        self.description: str | None = None
        self._slots: asyncio.Semaphore | None = None
        self._made = 0

    def children(self) -> tuple[Child, ...]:
        """The children running now, in the order they started (a snapshot)."""
        return tuple(self.running.values())

    async def run_child(
        self,
        prompt: str,
        *,
        agent: str | None = None,
        tools: Sequence[str] | None = None,
        model: str | None = None,
    ) -> ToolOutput:
        """Start a child from the library as the `task` tool would (same limits, session,
        approval, budget and events) and run it to its answer (an is_error output when it
        was refused or failed)."""
        self._made += 1
        return await self.spawn(
            call_id=f"lib_{self._made}",
            name=agent or "child",
            prompt=prompt,
            agent=agent,
            tools=tools,
            model=model,
        )

    @property
    def settings(self) -> AgentsSettings:
        return self.caller.parts.config.agents

    @property
    def depth(self) -> int:
        """This agent's depth: 0 for the main agent."""
        return len(self.caller.parts.agent_path) - 1

    def may_spawn(self) -> bool:
        """Whether a child of this agent stays within `agents.max_depth`."""
        return self.depth + 1 <= self.settings.max_depth

    def take_usage(self) -> Usage | None:
        """The children's usage since the last call (None when no child ended), reset."""
        usage, ran = self.usage, self.any_ran
        self.usage, self.any_ran = Usage(), False
        return usage if ran else None

    async def spawn(
        self,
        *,
        call_id: str,
        name: str,
        prompt: str,
        agent: str | None,
        tools: Sequence[str] | None,
        model: str | None,
    ) -> ToolOutput:
        """Run one child to completion (the `task` tool's body); a refusal or a failed child
        is an is_error result. Raises `asyncio.CancelledError` when cancelled (the child's
        partial turn is persisted first)."""
        limit = self.settings.max_depth
        if not self.may_spawn():
            return ToolOutput(
                f"refused: subagents nest at most {limit} deep (agents.max_depth) and this "
                f"agent is at depth {self.depth}; do the task yourself",
                is_error=True,
            )
        tree = None
        try:
            if agent is not None and self._isolated(agent):
                tree = worktrees.create(self.caller.parts.root, f"{agent}-{call_id[-8:]}")
            child, session = self._build(call_id, agent, tools, model, tree)
        except (ConfigError, SessionError, worktrees.WorktreeError) as exc:
            if tree is not None:
                worktrees.close(tree)
            return ToolOutput(f"the subagent could not start: {exc}", is_error=True)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.max_concurrent)
        self.running[call_id] = child
        try:
            async with self._slots:
                result = await child.run(prompt)
        except RunError as exc:
            return ToolOutput(
                f"the subagent {name!r} failed: {exc.kind}: {exc.message}",
                is_error=True,
                display=self._display(child, session),
            )
        finally:
            self.running.pop(call_id, None)
            session.close()
            where = None if tree is None else worktrees.close(tree)
        answer = result.text.strip()
        if result.stop_reason not in ("end_turn", "stop_sequence"):
            answer = (
                f"{answer}\n\n(the subagent stopped early: {result.stop_reason})"
                if answer
                else f"(the subagent stopped early without an answer: {result.stop_reason})"
            )
        answer = answer or "(the subagent gave no answer)"
        return ToolOutput(
            answer if where is None else f"{answer}\n\n({where})",
            display=self._display(child, session),
        )

    def _isolated(self, agent: str) -> bool:
        named = self.settings.named.get(agent)
        return named is not None and named.isolation == "worktree"

    def _display(self, child: Child, session: AgentSession) -> dict[str, Any]:
        return {
            "agent_path": list(child.agent_path),
            "session_id": None if session.writer is None else session.writer.id,
        }

    def _build(
        self,
        call_id: str,
        agent: str | None,
        tools: Sequence[str] | None,
        model: str | None,
        tree: worktrees.Worktree | None = None,
    ) -> tuple[Child, AgentSession]:
        """The child agent and its session (a file beside the caller's, opened; in memory when
        the caller has no session file).

        Raises:
            ConfigError: an unknown named agent, tool or model.
            SessionError: the child's session could not be created.
        """
        parts = self.caller.parts
        named = None
        if agent is not None:
            named = self.settings.named.get(agent)
            if named is None:
                known = ", ".join(self.settings.named) or "none are configured"
                raise ConfigError(f"no subagent named {agent!r} ({known})")
        path = (*parts.agent_path, f"task:{call_id}")
        offered = [t for t in parts.registry if tools is None or t.name in tools]
        if tools is not None:
            unknown = sorted(set(tools) - {t.name for t in offered})
            if unknown:
                raise ConfigError(
                    f"unknown tools {', '.join(unknown)} (yours: "
                    f"{', '.join(parts.registry.names())})"
                )
        if named is not None:  # its own list bounds it (a name the caller lacks: left out)
            own, never = named.tools, set(named.disallowed_tools)
            offered = [
                t for t in offered if (own is None or t.name in own) and t.name not in never
            ]
        if len(path) - 1 >= self.settings.max_depth:  # at the limit: not offered `task`
            offered = [t for t in offered if t.name != TASK_TOOL]
        pick = model if model is not None else (named.model if named is not None else None)
        chain = parts.chain if pick is None else build.resolve_models(pick, parts.config)
        approval = parts.tool_calls.approval

        async def ask_host(request: ApprovalRequest) -> ApprovalDecision:
            current = approval.approver  # the host may attach one later
            if current is None:
                return ApprovalDecision.once()
            return await current(request)

        session = self._session(call_id, path)
        try:
            child = self.make_child(
                chain,
                config=self.child_config(),
                tools=offered,
                system=(named.system if named is not None else None) or SUBAGENT_SYSTEM,
                root=parts.root if tree is None else worktrees.folder_in(tree, parts.root),
                host=Host(
                    on_event=lambda e: self._forward(path, e),
                    approver=None if approval.approver is None else ask_host,
                    questions=parts.tool_context.questions,
                    lsp=parts.tool_context.lsp,  # one set of language servers for the tree
                    agent_path=path,
                ),
                session=session,
                runtime=parts.runtime,
                hooks=parts.library_hooks,
            )
            child.set_approval_mode(self.caller.approval_mode)
            child.share_budget(parts.budget)  # the cap holds for the whole tree
            tree_node = child.subagents
            tree_node.parent = self.caller
            tree_node.name = agent
            tree_node.description = named.description if named is not None else None
        except BaseException:
            session.close()
            raise
        return child, session

    def child_config(self) -> AgentConfig:
        """The caller's config without MCP servers: a child gets its caller's tools, MCP tools
        included (bound to the caller's servers), and must not start servers of its own."""
        cfg = self.caller.parts.config
        if not cfg.mcp.servers:
            return cfg
        return cfg.model_copy(update={"mcp": McpSettings(start=cfg.mcp.start)})

    def _session(self, call_id: str, path: tuple[str, ...]) -> AgentSession:
        """A new session beside the caller's (same store), naming it and the call, opened now
        (so a failure is the `task` call's result); in memory without a caller's file. It
        carries the caller's facts (`AgentSession.context`): the child's system prompt has the
        same environment, instruction files and skills after its own base prompt."""
        caller = self.caller.session
        caller_id = caller.id
        store = getattr(caller.sink, "store", None)  # a database store's writer names its store
        if not isinstance(store, SessionStore):
            file = getattr(caller.sink, "path", None)
            if not isinstance(file, Path):
                return AgentSession(started=set(), context=caller.context)
            store = SessionStore(file.parent, migrate=False)
        if caller_id is None:
            return AgentSession(started=set(), context=caller.context)
        session = AgentSession.new(
            store,
            cwd=self.caller.parts.root,
            caller=(caller_id, call_id, path),
            context=caller.context,
        )
        session.open()
        return session

    def _forward(self, path: tuple[str, ...], event: AgentEvent) -> None:
        """A child's event to the caller's host, tagged with the child's path (a grandchild's
        event arrives tagged already and is passed on as is)."""
        if isinstance(event, DoneEvent):
            self.usage = self.usage + event.usage
            self.any_ran = True
        tagged = event if isinstance(event, SubagentEvent) else SubagentEvent(
            agent_path=path, event=event
        )
        self.caller.parts.emit(tagged)
