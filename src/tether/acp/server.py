"""`tether acp`: tether as an Agent Client Protocol agent, one host among the CLI and the TUI.

Owns: `TetherAcp`, the SDK's `Agent` side (initialize, session/new, session/load, session/prompt,
session/cancel, session/set_mode, authenticate), one `AcpSession` per ACP session (an
`Agent.from_settings` with this host's callbacks: its events become session updates, its
approval requests become `session/request_permission`, its `question` tool a form or a
permission prompt: `tether.acp.questions`), and the session updates it sends;
`tether.acp.stdio.serve` runs it over stdin/stdout.
Does not own: the translations (`tether.acp.convert`), the agent (built through the front door:
`tether.Agent.from_settings`, as `tether run` builds it).

Sessions are tether sessions: the ACP session id is the stored session's id, so
`session/load` continues what `session/new` started (in this process or an earlier one).
A prompt runs as a task; `session/cancel` cancels it, and the loop persists the partial turn as
on Ctrl+C. Updates are sent in order through one queue per session, and a prompt's response
(and a permission request) goes out only once the updates before it are sent.

Seams for features landing elsewhere: a `todo` event (the todo tool's list) becomes a `plan`
update (`convert.plan_update`); `session_commands` lists the commands and skills a session
offers, sent as `available_commands_update`, and a prompt that is `/name args` runs the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentThoughtChunk,
    AuthenticateResponse,
    AvailableCommand,
    AvailableCommandsUpdate,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SetSessionModeResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallUpdate,
)

import acp
from tether.acp import convert
from tether.acp.questions import AcpQuestions
from tether.agent.agent import Agent
from tether.agent.approval import APPROVAL_MODES, ApprovalDecision, ApprovalRequest
from tether.agent.assembly.prompting import mention_refusal
from tether.agent.events import (
    AgentEvent,
    EnvEvent,
    ServerToolEvent,
    SubagentEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolStartEvent,
    WarningEvent,
)
from tether.agent.host import Host
from tether.agent.mentions import mention_content, resolve_mentions
from tether.agent.sessions import AgentSession
from tether.errors import AuthError, ConfigError, RunError, SessionError
from tether.session import SessionStore

__all__ = [
    "AcpSession",
    "TetherAcp",
    "command_prompt",
    "session_commands",
]

STDIO_LIMIT_BYTES = 50 * 1024 * 1024
"""The longest protocol line read (images arrive inline, base64)."""

AnyUpdate = convert.Update | AvailableCommandsUpdate


def session_commands(agent: Agent) -> list[AvailableCommand]:
    """The `/name` commands a session offers the client (`available_commands_update`): its
    prompt files and skills (`tether.agent.assembly.prompting.session_commands`), each with its
    description and argument hint."""
    from acp.schema import AvailableCommandInput, UnstructuredCommandInput

    from tether.agent.assembly.prompting import session_commands as find_commands

    found = find_commands(agent.root, agent.session.context, warn=_err)
    return [
        AvailableCommand(
            name=c.name,
            description=c.description or c.name,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.argument_hint))
            if c.argument_hint
            else None,
        )
        for c in found.values()
    ]


def command_prompt(agent: Agent, text: str) -> str:
    """`text`, or the prompt of the `/name args` command it is (`tether.skills.commands`).

    Raises:
        ConfigError: an unknown or broken command (nothing is sent).
    """
    from tether.agent.assembly.prompting import command_prompt as expanded

    return expanded(agent.root, agent.session.context, text, warn=_err)[0]


def _kind(event: AgentEvent) -> str:
    return event.type


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(slots=True, eq=False)
class AcpSession:
    """One ACP session: its agent, its stored session, the update queue and the running prompt.

    Attributes:
        id: the session id (the stored session's).
        agent: the agent, built once per session.
        session: its stored session.
        updates: session updates waiting to be sent, in order.
        pump: the task that sends them.
        run: the running prompt's task, or None.
        question_call: the ACP id of the latest `question` call (what a question prompt is
            about), or None.
    """

    id: str
    agent: Agent
    session: AgentSession
    updates: asyncio.Queue[AnyUpdate]
    pump: asyncio.Task[None]
    run: asyncio.Task[Any] | None = None
    question_call: str | None = None

    async def flushed(self) -> None:
        """Wait until every queued update was sent."""
        await self.updates.join()

    async def close(self) -> None:
        """Cancel a running prompt (its partial turn is persisted), stop the MCP servers, send
        what is queued, close the session file."""
        if self.run is not None and not self.run.done():
            self.run.cancel()
            with contextlib.suppress(BaseException):
                await self.run
        with contextlib.suppress(Exception):
            await self.agent.aclose()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flushed(), timeout=5)
        self.pump.cancel()
        self.session.close()


class TetherAcp:
    """The ACP agent (the SDK's `acp.Agent` protocol). One instance serves one connection.

    Args:
        model: pins the model (`--model`), else the settings' selection (as `tether run`).
        store: where sessions are stored (default: the user data folder).
        note: where one-line diagnostics go (default: stderr).
        overrides: dotted config fields for every session's agent (`--add-dir`).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        store: SessionStore | None = None,
        note: Callable[[str], None] = _err,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.overrides = dict(overrides or {})
        self.store = store or SessionStore()
        self.note = note
        self.sessions: dict[str, AcpSession] = {}
        self.client_capabilities: ClientCapabilities | None = None
        self._conn: acp.Client | None = None

    def on_connect(self, conn: acp.Client) -> None:
        """The SDK hands over the client side of the connection."""
        self._conn = conn

    @property
    def conn(self) -> acp.Client:
        assert self._conn is not None, "not connected"
        return self._conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Capabilities: session/load, image and embedded-context prompts, HTTP MCP servers."""
        from importlib.metadata import version

        del client_info, kwargs
        self.client_capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="tether", title="tether", version=version("tether")),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        """Nothing to authenticate: provider keys come from tether's own credentials."""
        del method_id, kwargs
        return AuthenticateResponse()

    # -- sessions -----------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """A new stored session in `cwd`, its agent built from the settings there plus the
        client's MCP servers."""
        del additional_directories, kwargs
        root = self._root(cwd)
        try:
            opened = await self._open(
                root, lambda: AgentSession.new(self.store, cwd=root), mcp_servers
            )
        except SessionError as exc:
            raise acp.RequestError.invalid_params({"details": str(exc)}) from None
        return NewSessionResponse(
            session_id=opened.id, modes=convert.mode_state(opened.agent.approval_mode)
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        """Continue stored session `session_id`: its turns are sent as updates first (user and
        agent messages, thoughts, tool calls with their results), then the response."""
        del additional_directories, kwargs
        root = self._root(cwd)
        if (old := self.sessions.pop(session_id, None)) is not None:
            await old.close()
        try:
            opened = await self._open(
                root, lambda: AgentSession.resume(self.store, session_id), mcp_servers
            )
        except SessionError as exc:
            raise acp.RequestError.resource_not_found(session_id) from exc
        loaded = opened.session.loaded
        turns = loaded.turns if loaded is not None else opened.session.history
        started = loaded.header.cwd if loaded is not None else ""
        # the replay shows the paths as they were (where the session ran), not rebased here
        shown_root = Path(started) if started else opened.agent.root
        for update in convert.replay_updates(turns, shown_root):
            opened.updates.put_nowait(update)
        if started and Path(started) != opened.agent.root:
            # ACP's cwd is the editor's: tools work there now; say so, as `tether run --resume`
            line = f"(note: session {session_id} was started in {started}; tools now work in {root})\n"
            text = TextContentBlock(type="text", text=line)
            opened.updates.put_nowait(
                AgentMessageChunk(session_update="agent_message_chunk", content=text)
            )
            self.note(f"note: session {session_id} was started in {started}; tools now work in {root}")
        await opened.flushed()
        return LoadSessionResponse(modes=convert.mode_state(opened.agent.approval_mode))

    def _root(self, cwd: str) -> Path:
        root = Path(cwd)
        if not root.is_absolute() or not root.is_dir():
            raise acp.RequestError.invalid_params({"details": f"cwd {cwd} is not a folder"})
        return root.resolve()

    async def _open(
        self,
        root: Path,
        make_session: Callable[[], AgentSession],
        mcp_servers: Sequence[Any] | None,
    ) -> AcpSession:
        servers, notes = convert.mcp_server_settings(list(mcp_servers or ()))
        for line in notes:
            self.note(line)
        overrides = {f"mcp.servers.{name}": value for name, value in servers.items()}
        overrides |= self.overrides  # `tether acp --add-dir`
        session = make_session()
        holder: list[AcpSession] = []
        queue: asyncio.Queue[AnyUpdate] = asyncio.Queue()

        def on_event(event: AgentEvent) -> None:
            if holder:
                self._on_event(holder[0], event)

        async def approve(request: ApprovalRequest) -> ApprovalDecision:
            return await self._approve(holder[0], request)

        async def flushed() -> None:
            if holder:
                await holder[0].flushed()

        questions = AcpQuestions(
            conn=lambda: self.conn,
            session_id=session.id or "",
            capabilities=lambda: self.client_capabilities,
            call_id=lambda: holder[0].question_call if holder else None,
            flushed=flushed,
        )
        host = Host(on_event=on_event, approver=approve, note=self.note, questions=questions)
        try:
            agent = Agent.from_settings(
                root, model=self.model, overrides=overrides, host=host, session=session
            )
            session.open()
        except AuthError as exc:
            raise acp.RequestError.auth_required({"details": str(exc)}) from None
        except ConfigError as exc:
            raise acp.RequestError.invalid_params({"details": str(exc)}) from None
        sid = session.id
        assert sid is not None
        opened = AcpSession(
            id=sid,
            agent=agent,
            session=session,
            updates=queue,
            pump=asyncio.create_task(self._pump(sid, queue)),
        )
        holder.append(opened)
        self.sessions[sid] = opened
        commands = session_commands(agent)
        if commands:
            queue.put_nowait(
                AvailableCommandsUpdate(
                    session_update="available_commands_update", available_commands=commands
                )
            )
        return opened

    async def _pump(self, session_id: str, queue: asyncio.Queue[AnyUpdate]) -> None:
        while True:
            update = await queue.get()
            try:
                await self.conn.session_update(session_id=session_id, update=update)
            except Exception as exc:  # a closed connection: the rest is dropped
                self.note(f"acp: could not send an update: {exc}")
            finally:
                queue.task_done()

    def _session(self, session_id: str) -> AcpSession:
        found = self.sessions.get(session_id)
        if found is None:
            raise acp.RequestError.invalid_params({"details": f"no session {session_id}"})
        return found

    # -- events and approval ------------------------------------------------------------------

    def _on_event(self, s: AcpSession, event: AgentEvent) -> None:
        put = s.updates.put_nowait
        if isinstance(event, TextDeltaEvent):
            text = TextContentBlock(type="text", text=event.text)
            put(AgentMessageChunk(session_update="agent_message_chunk", content=text))
        elif isinstance(event, ThinkingDeltaEvent):
            text = TextContentBlock(type="text", text=event.text)
            put(AgentThoughtChunk(session_update="agent_thought_chunk", content=text))
        elif isinstance(event, ToolCallEvent | ToolStartEvent | ToolResultEvent):
            self._on_call(s, convert.MAIN_AGENT, event)
        elif isinstance(event, SubagentEvent):
            # a subagent's calls join the session's list of tool calls; its text reaches the
            # parent as the `task` call's result, its plan stays its own
            if isinstance(event.event, ToolCallEvent | ToolStartEvent | ToolResultEvent):
                self._on_call(s, event.agent_path, event.event)
            elif isinstance(event.event, WarningEvent):
                self.note(f"warning ({'/'.join(event.agent_path)}): {event.event.message}")
        elif isinstance(event, ServerToolEvent):
            put(convert.search_call(event.id, event.query, event.results, event.error))
        elif isinstance(event, WarningEvent):
            self.note(f"warning: {event.message}")
        elif isinstance(event, EnvEvent) and event.what == "model" and event.state != "loading":
            # no ACP notification for it: the agent's log
            self.note(f"model: {event.name} {event.detail}")
        elif _kind(event) == "todo":  # the todo tool's list, where that tool exists
            items: Sequence[Mapping[str, str]] = getattr(event, "items", ())
            put(convert.plan_update(items))

    def _on_call(
        self,
        s: AcpSession,
        path: Sequence[str],
        event: ToolCallEvent | ToolStartEvent | ToolResultEvent,
    ) -> None:
        if isinstance(event, ToolStartEvent):  # it runs now (not when approved: it may wait)
            s.updates.put_nowait(
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=convert.agent_call_id(path, event.tool_call_id),
                    status="in_progress",
                )
            )
            return
        if isinstance(event, ToolResultEvent):
            call_id = convert.agent_call_id(path, event.tool_call_id)
            s.updates.put_nowait(
                convert.result_update(call_id, event.content, is_error=event.is_error)
            )
            return
        if event.name == "question":
            s.question_call = convert.agent_call_id(path, event.id)
        change = convert.file_change(s.agent.tool_context, event.name, event.arguments)
        s.updates.put_nowait(
            convert.call_start(
                event.id, event.name, event.arguments, s.agent.root, change=change, agent_path=path
            )
        )

    async def _approve(self, s: AcpSession, request: ApprovalRequest) -> ApprovalDecision:
        call = request.call
        await s.flushed()  # the client has seen the `tool_call` this request is about
        call_id = convert.agent_call_id(request.agent_path, call.id)
        update = ToolCallUpdate(
            tool_call_id=call_id,
            title=convert.agent_title(
                request.agent_path, convert.tool_title(call.name, call.arguments)
            ),
            kind=convert.tool_kind(call.name),
            status="pending",
        )
        response = await self.conn.request_permission(
            session_id=s.id, tool_call=update, options=list(convert.PERMISSION_OPTIONS)
        )
        outcome = response.outcome
        chosen: str | None = getattr(outcome, "option_id", None)
        decision = convert.decision_for(
            chosen if outcome.outcome == "selected" else None, request.suggested
        )
        if decision.rules:  # "always allow": the rules saved for good, as the TUI does
            from tether.permissions.store import add_allow_rules

            try:
                add_allow_rules(decision.rules)
            except (OSError, ConfigError) as exc:
                _err(f"tether: could not save {', '.join(decision.rules)}: {exc}")
        return decision

    # -- prompts ------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: Sequence[Any], **kwargs: Any) -> PromptResponse:
        """Run the agent on the prompt; updates stream while it runs. A cancelled run answers
        `cancelled` (its partial turn persisted); a provider failure is a JSON-RPC error."""
        del kwargs
        s = self._session(session_id)
        if s.run is not None and not s.run.done():
            raise acp.RequestError.invalid_request({"details": "a prompt is already running"})
        try:
            blocks = convert.prompt_blocks(prompt)  # a bad image: refused, nothing stored
        except ConfigError as exc:
            raise acp.RequestError.invalid_params({"details": str(exc)}) from None
        if not any(getattr(b, "text", "x").strip() for b in blocks):
            # as `tether run ''`: nothing to ask, no paid request of "(no content)"
            raise acp.RequestError.invalid_params({"details": "empty prompt"})
        texts = [getattr(b, "text", None) for b in blocks]
        content: Any = (
            "\n\n".join(t for t in texts if t is not None)
            if all(t is not None for t in texts)
            else blocks
        )
        if isinstance(content, str):
            try:
                typed, content = content, command_prompt(s.agent, content)
                denied = mention_refusal(s.agent.config, s.agent.root)  # secrets, deny list
                found = resolve_mentions(  # `@path` inlined; a command's own only inside
                    content, s.agent.root, denied=denied, typed=typed if typed != content else None
                )
            except ConfigError as exc:
                raise acp.RequestError.invalid_params({"details": str(exc)}) from None
            for line in found.notes:  # refused or cut: the user reads it in the editor
                text = TextContentBlock(type="text", text=f"(note: {line})\n")
                s.updates.put_nowait(AgentMessageChunk(session_update="agent_message_chunk", content=text))
            content = mention_content(content, found)
        run = s.run = asyncio.create_task(s.agent.run(content))
        try:
            await asyncio.wait({run})
        except asyncio.CancelledError:  # the connection went away: stop the run too
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
            raise
        await s.flushed()
        if run.cancelled():
            return PromptResponse(stop_reason="cancelled")
        exc = run.exception()
        if isinstance(exc, RunError):
            raise acp.RequestError.internal_error({"details": str(exc), "kind": exc.kind})
        if isinstance(exc, (ConfigError, SessionError)):
            raise acp.RequestError.invalid_params({"details": str(exc)})
        if exc is not None:
            raise exc
        return PromptResponse(stop_reason=convert.stop_reason(run.result().stop_reason))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Cancel the session's running prompt (nothing when none runs)."""
        del kwargs
        s = self.sessions.get(session_id)
        if s is not None and s.run is not None and not s.run.done():
            s.run.cancel()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        """Switch the session's approval mode (`ask`, `auto-edit`, `read-only`, `auto`)."""
        del kwargs
        s = self._session(session_id)
        if mode_id not in APPROVAL_MODES:
            raise acp.RequestError.invalid_params({"details": f"unknown mode {mode_id}"})
        try:
            s.agent.set_approval_mode(mode_id)  # pyright: ignore[reportArgumentType]
        except ConfigError as exc:
            raise acp.RequestError.invalid_params({"details": str(exc)}) from None
        return SetSessionModeResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No extension methods."""
        del params
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""
        del method, params

    async def close(self) -> None:
        """Close every session (running prompts cancelled and persisted)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for s in sessions:
            await s.close()
