"""Between tether's values and the Agent Client Protocol's (the `agent-client-protocol` SDK's
pydantic models): prompts in, tool calls, results, stored turns, modes, permissions and plans out.

Owns: `prompt_blocks` (an ACP prompt → tether content blocks: text, images, embedded files as
`<context>` text, resource links named), `tool_kind` / `tool_title` / `tool_locations`,
`call_start` and `result_update` (a tool call and its result as `tool_call` /
`tool_call_update` updates), `replay_updates` (a stored session as the updates that show it),
the approval modes as ACP session modes (`mode_state`), the permission options and the
decision each one means (`PERMISSION_OPTIONS`, `decision_for`), `plan_update` (the todo list's
items as a `plan` update), `mcp_server_settings` (the client's MCP servers as
`mcp.servers.<name>` settings) and `stop_reason` (a run's stop reason as ACP's). Pure: no I/O
except `file_change`, which reads the file an edit would change (through the tools' path
guard).
Does not own: the connection and the sessions (`tether.acp.server`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    PermissionOption,
    PlanEntry,
    PlanEntryStatus,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    SseMcpServer,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
    UserMessageChunk,
)

from tether.agent.approval import APPROVAL_MODES, ApprovalDecision, ApprovalMode
from tether.errors import ConfigError, ToolError
from tether.messages import (
    CompactSummaryBlock,
    ContentBlock,
    ImageBlock,
    SearchHit,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.tools.builtin.files import guard
from tether.tools.context import ToolContext

__all__ = [
    "MODE_INFO",
    "PERMISSION_OPTIONS",
    "Update",
    "call_start",
    "decision_for",
    "file_change",
    "mcp_server_settings",
    "mode_state",
    "plan_update",
    "prompt_blocks",
    "replay_updates",
    "result_update",
    "stop_reason",
    "tool_kind",
    "tool_locations",
    "tool_title",
]

Update = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)

MAX_DIFF_FILE_BYTES = 2 * 1024 * 1024
"""Files larger than this (bytes) get no diff in a tool call update."""

_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "ls": "read",
    "recall": "read",
    "write": "edit",
    "edit": "edit",
    "glob": "search",
    "grep": "search",
    "bash": "execute",
    "web_fetch": "fetch",
    "todo": "think",
    "question": "other",
    "task": "other",
}

MODE_INFO: dict[ApprovalMode, tuple[str, str]] = {
    "ask": ("Ask", "Every call that is not read-only is asked."),
    "auto-edit": ("Auto-edit", "File edits run; other calls that are not read-only are asked."),
    "read-only": ("Read-only", "Only read-only tools are offered and run."),
    "auto": ("Auto", "Every call runs unasked (the OS sandbox still contains it)."),
}

PERMISSION_OPTIONS = (
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow this tool", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
)
"""The options of every permission request: allow once, allow the tool for the rest of the
session, reject."""

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_turns": "max_turn_requests",
    "max_tool_calls": "max_turn_requests",  # run.max_tool_calls
    "cancelled": "cancelled",
    "refusal": "refusal",
}

_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
    "completed": "completed",
}


def prompt_blocks(blocks: Sequence[Any]) -> list[ContentBlock]:
    """An ACP prompt as tether content blocks: text as text, an image as an `ImageBlock`
    (its base64 decoded and the bytes checked as `--image` checks a file:
    `tether.agent.attachments.image_from_bytes`, the media type read from the bytes), an
    embedded text file as a text block `<context uri="...">…</context>`, an embedded binary
    image as an image, a resource link as a text line naming it. Other blocks (audio) are
    dropped.

    Raises:
        ConfigError: an image is not valid base64 or not an image a provider reads (one line
            naming it: "image 2 of the prompt: not a readable image"); nothing is sent.
    """
    out: list[ContentBlock] = []
    for n, block in enumerate(blocks, 1):
        if isinstance(block, TextContentBlock):
            out.append(TextBlock(text=block.text))
        elif isinstance(block, ImageContentBlock):
            out.append(checked_image(block.data, f"block {n} of the prompt (image)"))
        elif isinstance(block, EmbeddedResourceContentBlock):
            res = block.resource
            if isinstance(res, TextResourceContents):
                out.append(TextBlock(text=f'<context uri="{res.uri}">\n{res.text}\n</context>'))
            elif (res.mime_type or "").startswith("image/"):
                out.append(checked_image(res.blob, f"block {n} of the prompt ({res.uri})"))
            else:
                out.append(TextBlock(text=f"(attached: {res.uri}, {res.mime_type or 'binary'})"))
        elif isinstance(block, ResourceContentBlock):
            out.append(TextBlock(text=f"(see {block.name}: {block.uri})"))
    return out


def checked_image(data: str, name: str) -> ImageBlock:
    """The image whose base64 is `data`, checked as the CLI's `--image` checks a file.

    Raises:
        ConfigError: `data` is not base64, or its bytes are not an image (one line naming
            `name`).
    """
    import binascii

    from tether.agent.attachments import image_from_bytes

    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{name}: the data is not valid base64") from None
    return image_from_bytes(raw, name=name)


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of tool `name` (`read`, `edit`, `search`, `execute`, `fetch`, `think`,
    `other`; MCP tools are `other`)."""
    return _KINDS.get(name, "other")


def _arg(arguments: Mapping[str, Any], *keys: str) -> str | None:
    for k in keys:
        v = arguments.get(k)
        if isinstance(v, str) and v:
            return v
    return None


def tool_title(name: str, arguments: Mapping[str, Any]) -> str:
    """A one-line title for a call: `bash: pytest -q`, `edit src/app.py`, `web_fetch https://…`."""
    if name == "bash" and (cmd := _arg(arguments, "command", "cmd")):
        first = cmd.strip().splitlines()[0] if cmd.strip() else cmd
        return f"bash: {first[:120]}"
    detail = _arg(arguments, "path", "url", "pattern", "description", "prompt")
    return f"{name} {detail[:120]}" if detail else name


def tool_locations(name: str, arguments: Mapping[str, Any], root: Path) -> list[ToolCallLocation]:
    """The files a call touches (`path` arguments of the file tools, made absolute under
    `root`), for the client's follow-along; `read`'s `offset` becomes the line."""
    path = arguments.get("path")
    if name not in ("read", "write", "edit", "ls", "grep", "glob") or not isinstance(path, str):
        return []
    where = Path(path) if Path(path).is_absolute() else root / path
    line = arguments.get("offset") if name == "read" else None
    return [ToolCallLocation(path=str(where), line=line if isinstance(line, int) else None)]


def file_change(
    ctx: ToolContext, name: str, arguments: Mapping[str, Any]
) -> tuple[str, str | None, str] | None:
    """`(absolute path, old text or None for a new file, new text)` that a `write` or `edit`
    call would make; None for other tools, invalid arguments, a refused path, a large, binary or
    unreadable file, or an edit whose `old_string` does not match as the tool requires."""
    path = arguments.get("path")
    if name not in ("write", "edit") or not isinstance(path, str):
        return None
    try:
        real = guard(ctx, path, write=True)
        if real.exists():
            if not real.is_file() or real.stat().st_size > MAX_DIFF_FILE_BYTES:
                return None
            old: str | None = real.read_text(encoding="utf-8")
        else:
            old = None
    except (ToolError, OSError, UnicodeDecodeError):
        return None
    if name == "write":
        new = arguments.get("content")
        return (str(real), old, new) if isinstance(new, str) else None
    a, b = arguments.get("old_string"), arguments.get("new_string")
    if old is None or not isinstance(a, str) or not isinstance(b, str) or not a:
        return None
    count = old.count(a)
    if count == 0 or (count > 1 and arguments.get("replace_all") is not True):
        return None
    return str(real), old, old.replace(a, b)


MAIN_AGENT: tuple[str, ...] = ("main",)


def agent_call_id(agent_path: Sequence[str], call_id: str) -> str:
    """The ACP tool call id of call `call_id` of the agent at `agent_path`: the call id itself
    for the main agent; for a subagent its path and the id (`task:call_1/call_1`). ACP has
    one flat list of tool calls per session, and a subagent's ids (from another model reply)
    may repeat its parent's."""
    if tuple(agent_path) == MAIN_AGENT:
        return call_id
    return "/".join([*agent_path[1:], call_id])


def agent_title(agent_path: Sequence[str], title: str) -> str:
    """A call's title, marked `› ` once per subagent level."""
    return "› " * (len(agent_path) - 1) + title


def call_start(
    call_id: str,
    name: str,
    arguments: Mapping[str, Any],
    root: Path,
    *,
    change: tuple[str, str | None, str] | None = None,
    status: ToolCallStatus = "pending",
    agent_path: Sequence[str] = MAIN_AGENT,
) -> ToolCallStart:
    """The `tool_call` update announcing a call of the agent at `agent_path` (a subagent's
    calls are announced in the same list, see `agent_call_id`): kind, title, locations, the
    raw arguments, and for an edit the diff (`change`, from `file_change`)."""
    content: list[Any] | None = None
    if change is not None:
        path, old, new = change
        content = [FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)]
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=agent_call_id(agent_path, call_id),
        title=agent_title(agent_path, tool_title(name, arguments)),
        kind=tool_kind(name),
        status=status,
        locations=tool_locations(name, arguments, root) or None,
        raw_input=dict(arguments),
        content=content,
    )


def _text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def result_update(call_id: str, text: str, *, is_error: bool) -> ToolCallProgress:
    """The `tool_call_update` of a finished call: `completed` or `failed`, with the text the
    model saw."""
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if is_error else "completed",
        content=[_text_content(text)] if text else None,
    )


def search_call(
    call_id: str, query: str, results: Sequence[SearchHit], error: str | None
) -> ToolCallStart:
    """The `tool_call` of a web search the provider ran (it is over when announced): kind
    `fetch` (external data), title `web_search: QUERY`, status `completed` (or `failed` with
    the provider's error code), the results as `title — url` lines."""
    lines = [f"error {error}"] if error else [f"{h.title} — {h.url}" if h.title else h.url
                                               for h in results]
    text = "\n".join(lines) or "no results"
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=f"web_search: {query[:120]}",
        kind="fetch",
        status="failed" if error else "completed",
        raw_input={"query": query},
        content=[_text_content(text)],
    )


def _result_text(result: ToolResultBlock) -> str:
    return "\n".join(p.text for p in result.content if isinstance(p, TextBlock))


def replay_updates(turns: Sequence[Turn], root: Path) -> Iterator[Update]:
    """The updates that show a stored session, in order: user text as `user_message_chunk`,
    thinking as `agent_thought_chunk`, text as `agent_message_chunk`, each call as a
    `tool_call` with its final status and result (`completed`, `failed`, or `pending` when the
    session holds no result), a web search as its `search_call`, a compaction as one agent message naming it. Images are sent as
    images."""
    results = {r.tool_call_id: r for t in turns for r in t.tool_results}
    for turn in turns:
        for block in turn.content:
            if isinstance(block, TextBlock) and block.text:
                chunk = TextContentBlock(type="text", text=block.text)
                if turn.role == "user":
                    yield UserMessageChunk(session_update="user_message_chunk", content=chunk)
                elif turn.role == "assistant":
                    yield AgentMessageChunk(session_update="agent_message_chunk", content=chunk)
            elif isinstance(block, ImageBlock) and turn.role == "user":
                image = ImageContentBlock(type="image", data=block.data, mime_type=block.media_type)
                yield UserMessageChunk(session_update="user_message_chunk", content=image)
            elif isinstance(block, ThinkingBlock) and block.text:
                thought = TextContentBlock(type="text", text=block.text)
                yield AgentThoughtChunk(session_update="agent_thought_chunk", content=thought)
            elif isinstance(block, ToolCallBlock):
                yield from _replayed_call(block, results.get(block.id), root)
            elif isinstance(block, ServerToolBlock):
                yield search_call(block.id, block.query, block.results, block.error)
            elif isinstance(block, CompactSummaryBlock):
                note = TextContentBlock(
                    type="text",
                    text=f"(earlier turns compacted: {len(block.replaces_turn_ids)} replaced)",
                )
                yield AgentMessageChunk(session_update="agent_message_chunk", content=note)


def _replayed_call(
    call: ToolCallBlock, result: ToolResultBlock | None, root: Path
) -> Iterator[Update]:
    yield call_start(call.id, call.name, call.arguments, root)
    if result is not None:
        yield result_update(call.id, _result_text(result), is_error=result.is_error)


def mode_state(current: ApprovalMode) -> SessionModeState:
    """The approval modes as ACP session modes (ids are the mode names), `current` selected."""
    return SessionModeState(
        current_mode_id=current,
        available_modes=[
            SessionMode(id=m, name=MODE_INFO[m][0], description=MODE_INFO[m][1])
            for m in APPROVAL_MODES
        ],
    )


def decision_for(option_id: str | None, suggested: Sequence[str] = ()) -> ApprovalDecision:
    """The approval decision of a chosen permission option (None: the prompt was cancelled,
    which denies the call). "Always allow" adds the `suggested` permission rules
    (`ApprovalRequest.suggested`, e.g. `bash(pytest *)`), as the TUI's prompt does; with none
    suggested it allows the tool for the rest of the session."""
    if option_id == "allow_once":
        return ApprovalDecision.once()
    if option_id == "allow_always":
        return (
            ApprovalDecision.always(tuple(suggested))
            if suggested
            else ApprovalDecision.for_session()
        )
    if option_id is None:
        return ApprovalDecision.deny("the user cancelled the prompt")
    return ApprovalDecision.deny()


def plan_update(items: Sequence[Mapping[str, str]]) -> AgentPlanUpdate:
    """The todo list (`[{"text", "status": pending|in_progress|done}]`) as a `plan` update;
    every entry `medium` priority (the list has none)."""
    return AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(
                content=i.get("text", ""),
                priority="medium",
                status=_PLAN_STATUS.get(i.get("status", ""), "pending"),
            )
            for i in items
        ],
    )


def stop_reason(run_stop: str) -> StopReason:
    """ACP's stop reason for a run's (`max_turns` → `max_turn_requests`; a hook's refusal, a
    runaway context and other ends → `end_turn`)."""
    return _STOP.get(run_stop, "end_turn")


_NAME_RX = re.compile(r"[^A-Za-z0-9_-]+")


def mcp_server_settings(
    servers: Sequence[Any],
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The client's MCP servers as `mcp.servers.<name>` settings values, and a note per server
    left out (SSE servers: tether speaks stdio and streamable HTTP). Names are cut to letters,
    digits, `_` and `-`, starting with a letter or digit (the settings' rule)."""
    out: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for server in servers:
        name = _NAME_RX.sub("_", str(getattr(server, "name", "server"))).strip("_-") or "server"
        if isinstance(server, McpServerStdio):
            out[name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {e.name: e.value for e in server.env},
            }
        elif isinstance(server, HttpMcpServer):
            out[name] = {"url": server.url, "headers": {h.name: h.value for h in server.headers}}
        elif isinstance(server, SseMcpServer):
            notes.append(f"note: MCP server {name} skipped: SSE transport is not supported")
        else:
            notes.append(f"note: MCP server {name} skipped: unsupported transport")
    return out, notes
