"""Anthropic Messages request building (target `anthropic`): wire view → request parameters.

Owns: converting a wire view into Messages API `messages` / `system` / `tools`, prompt-caching
breakpoints, and the `thinking` / `temperature` parameters.
Does not own: the stream (`tether.providers.anthropic`), the wire passes (`tether.wire`).

Request shape (`POST /v1/messages`, `stream: true`):
    {"model", "max_tokens", "system": str | [{"type": "text", "text", "cache_control"}],
     "thinking": {"type": "enabled", "budget_tokens"},
     "tools": [{"name", "description", "input_schema", "cache_control"?}],
     "messages": [{"role": "user"|"assistant", "content": [
        {"type": "text", "text"}, {"type": "image"|"document", "source": {"type": "base64", ...}},
        {"type": "thinking", "thinking", "signature"}, {"type": "redacted_thinking", "data"},
        {"type": "tool_use", "id", "name", "input"},
        {"type": "server_tool_use", ...}, {"type": "web_search_tool_result", ...} (verbatim),
        {"type": "tool_result", "tool_use_id", "is_error", "content": [text|image parts]}]}]}
    plus, with `ModelRequest.web_search`, the server tool `{"type": "web_search_20250305",
    "name": "web_search", "max_uses"?, "allowed_domains" | "blocked_domains"?}` after the
    function tools (Anthropic "Web search tool": the two domain lists cannot be combined; an
    allow list wins, as it already excludes every other host).

Prompt caching (Anthropic "Prompt caching" guide): a `cache_control: {"type": "ephemeral"}`
breakpoint caches the whole prefix up to and including its block (order: tools, system,
messages). tether sets at most `MAX_CACHE_BREAKPOINTS` (4, the API's limit): the last tool, the
system prompt's last block (on Anthropic's own endpoint only: to a compatible server the system
prompt goes as a plain string), the last block of the last message, and the last block of the user
message before it (so the next request, which appends after the last message, still hits the
prefix written one request earlier). Thinking and redacted_thinking blocks cannot carry
`cache_control` (the API rejects it), nor can empty text; the breakpoint goes on the last block
that can.

Thinking (Anthropic "Extended thinking" guide): `thinking: {"type": "enabled", "budget_tokens"}`
with `1024 <= budget_tokens < max_tokens`; `temperature` must not be set then. With thinking on,
every assistant message of the in-progress tool loop (back to the last user message holding
anything but tool results; system turns are lifted out, so they do not end the loop) must start
with a thinking block; when the wire view lost it (a model switch), the request is sent with
thinking off (`tether.wire.thinking_must_be_disabled` on the view, `loop_lacks_thinking` on the
messages as sent; case T08); so is a request ending with an assistant prefill, which
Anthropic refuses with thinking on.

Messages as sent: consecutive messages of one role (left by lifted system turns) are combined
here, as Anthropic would combine them ("consecutive user or assistant turns in your request will
be combined into a single turn"), so the checks above see what the API sees; the last text
block of a final assistant (prefill) message is right-stripped ("final assistant content
cannot end with trailing whitespace").
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from anthropic import types as at

from tether.effort import anthropic_budget
from tether.errors import ConfigError
from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ModelRequest, ToolSpec, WebSearch
from tether.providers.catalog import reasons
from tether.providers.images import fit_image
from tether.wire import thinking_must_be_disabled

MIN_THINKING_BUDGET = 1024
"""Anthropic requires `thinking.budget_tokens >= 1024` and below `max_tokens`."""

MAX_CACHE_BREAKPOINTS = 4
"""Anthropic allows at most 4 `cache_control` breakpoints per request."""

EPHEMERAL: at.CacheControlEphemeralParam = {"type": "ephemeral"}

_ToolResultPart = at.TextBlockParam | at.ImageBlockParam


# ---------------------------------------------------------------------------------------------
# Request conversion


def _image(block: ImageBlock) -> at.ImageBlockParam:
    block = fit_image(block, "anthropic")  # within the Vision page's limits
    return cast(
        at.ImageBlockParam,
        {
            "type": "image",
            "source": {"type": "base64", "media_type": block.media_type, "data": block.data},
        },
    )


def _document(block: DocumentBlock) -> at.DocumentBlockParam:
    """A document block. Anthropic accepts PDFs as base64 sources and plain text as a `text`
    source (decoded here); `title` is passed through."""
    doc: at.DocumentBlockParam
    if block.media_type.startswith("text/"):
        try:
            text = base64.b64decode(block.data).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            text = block.data
        doc = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    else:
        doc = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": block.data},
        }
    if block.title:
        doc["title"] = block.title
    return doc


def _tool_result(block: ToolResultBlock) -> at.ToolResultBlockParam:
    parts: list[_ToolResultPart] = []
    for part in block.content:
        if isinstance(part, TextBlock):
            if part.text:  # Anthropic rejects empty text blocks
                parts.append({"type": "text", "text": part.text})
        else:
            parts.append(_image(part))
    result: at.ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": block.tool_call_id,
        "content": parts,
    }
    if block.is_error:
        result["is_error"] = True
    return result


def _user_content(turn: Turn) -> list[at.ContentBlockParam]:
    """User blocks. Anthropic requires the tool_result blocks first in their user message."""
    results: list[at.ContentBlockParam] = []
    rest: list[at.ContentBlockParam] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            results.append(_tool_result(block))
        elif isinstance(block, TextBlock):
            if block.text:
                rest.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            rest.append(_image(block))
        elif isinstance(block, DocumentBlock):
            rest.append(_document(block))
        elif isinstance(block, CompactSummaryBlock):
            rest.append({"type": "text", "text": block.summary})
    return results + rest


def _assistant_content(turn: Turn) -> list[at.ContentBlockParam]:
    """Assistant blocks, verbatim. Thinking must be replayed with its signature (Anthropic
    verifies it); an unsigned thinking block cannot be sent and is dropped (the wire view's
    reasoning pass decides what reaches here)."""
    out: list[at.ContentBlockParam] = []
    for block in turn.content:
        if isinstance(block, TextBlock):
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingBlock):
            if block.signature is not None:
                out.append(
                    {"type": "thinking", "thinking": block.text, "signature": block.signature}
                )
        elif isinstance(block, RedactedThinkingBlock):
            out.append({"type": "redacted_thinking", "data": block.data})
        elif isinstance(block, ToolCallBlock):
            out.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
        elif isinstance(block, ServerToolBlock):
            # The provider's own blocks, unchanged (the wire view keeps only complete ones of
            # Anthropic's making: `tether.wire.server_tools`).
            out.extend(cast(at.ContentBlockParam, dict(r)) for r in block.raw)
    return out


def to_anthropic_messages(messages: Sequence[Turn]) -> tuple[list[at.MessageParam], list[str]]:
    """Convert a wire view into Messages API `messages`.

    Args:
        messages: the wire view.

    Returns:
        (messages, system_texts): `system`-role turns are not messages on this API; their texts
        are returned to be appended to the `system` parameter. Turns that end up empty are
        dropped (Anthropic rejects empty content).
    """
    out: list[at.MessageParam] = []
    system: list[str] = []
    for turn in messages:
        if turn.role == "system":
            if turn.text:
                system.append(turn.text)
            continue
        role: Literal["user", "assistant"] = turn.role
        content = _assistant_content(turn) if role == "assistant" else _user_content(turn)
        if not content:
            continue
        if out and out[-1]["role"] == role:
            # A lifted system turn (or a dropped one) left two messages of one role adjacent:
            # Anthropic combines consecutive same-role messages; do it here so that what is
            # checked below is what the API sees (tool results stay first, #18).
            prev = cast(list[at.ContentBlockParam], out[-1]["content"])
            merged = [*prev, *content]
            if role == "user":
                merged.sort(key=lambda b: b["type"] != "tool_result")
            out[-1] = _message(role, merged)
        else:
            out.append(_message(role, content))
    if out and out[-1]["role"] == "assistant":
        _strip_final(cast(list[at.ContentBlockParam], out[-1]["content"]))
    return out, system


def continue_paused(messages: list[at.MessageParam], reply: Turn) -> list[at.MessageParam]:
    """The messages of the request that continues a reply paused by `stop_reason: pause_turn`:
    `messages` (as first sent) and the reply so far as a final assistant message, its blocks
    as they came (Anthropic "Web search tool", "Pause turn": "provide the response back as-is
    in a subsequent request to let Claude continue its turn"). The last text block is
    right-stripped (a final assistant message cannot end with whitespace). Does not modify
    `messages`."""
    content = _assistant_content(reply)
    if not content:
        return list(messages)
    _strip_final(content)
    return [*messages, {"role": "assistant", "content": content}]


def _message(
    role: Literal["user", "assistant"], content: list[at.ContentBlockParam]
) -> at.MessageParam:
    if role == "user":
        return {"role": "user", "content": content}
    return {"role": "assistant", "content": content}


def _strip_final(content: list[at.ContentBlockParam]) -> None:
    """Anthropic: "final assistant content cannot end with trailing whitespace". Right-strip
    the last block of a final (prefill) assistant message when it is text (in place); the
    wire's tail pass does the same on the view, this covers what the conversion dropped."""
    last = content[-1] if content else None
    if last is not None and last["type"] == "text":
        text = last["text"].rstrip()
        if text:  # (a blank text block never reaches here: the pairing pass removes them)
            content[-1] = {"type": "text", "text": text}


def loop_lacks_thinking(messages: Sequence[at.MessageParam]) -> bool:
    """True when the trailing tool loop of `messages` (as sent) has an assistant message that
    does not start with a thinking block: Anthropic rejects such a request with thinking on
    (see `tether.wire.thinking_must_be_disabled`, which applies the rule to the view)."""
    in_loop = False
    for msg in reversed(messages):
        raw = msg["content"]
        blocks = [] if isinstance(raw, str) else cast(list[dict[str, Any]], list(raw))
        types = ["text"] if isinstance(raw, str) else [b.get("type") for b in blocks]
        if msg["role"] == "user":
            if "tool_result" in types:
                in_loop = True
                continue
            return False
        if "tool_use" not in types or not in_loop:
            return False
        if types[0] not in _UNCACHEABLE:
            return True
    return False


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[at.ToolUnionParam]:
    """Tools → `[{"name", "description", "input_schema"}]`."""
    return [
        cast(
            at.ToolParam,
            {"name": t.name, "description": t.description, "input_schema": t.parameters},
        )
        for t in tools
    ]


def web_search_tool(search: WebSearch) -> at.WebSearchTool20250305Param:
    """The server tool `web_search_20250305` (Anthropic "Web search tool"): `max_uses` when
    capped; `allowed_domains` when an allow list is given, else `blocked_domains` when a deny
    list is (the API refuses both at once)."""
    tool: at.WebSearchTool20250305Param = {"type": "web_search_20250305", "name": "web_search"}
    if search.max_uses is not None:
        tool["max_uses"] = search.max_uses
    if search.allowed_domains:
        tool["allowed_domains"] = list(search.allowed_domains)
    elif search.blocked_domains:
        tool["blocked_domains"] = list(search.blocked_domains)
    return tool


# ---------------------------------------------------------------------------------------------
# Prompt caching


_UNCACHEABLE = ("thinking", "redacted_thinking")


def _mark_last_cacheable(content: list[Any]) -> bool:
    """Put a breakpoint on the last block that may carry one; True when one was placed."""
    for k in range(len(content) - 1, -1, -1):
        block: dict[str, Any] = dict(content[k])
        if block.get("type") in _UNCACHEABLE:
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue
        block["cache_control"] = {"type": "ephemeral"}
        content[k] = block
        return True
    return False


def cache_messages(
    messages: list[at.MessageParam], budget: int = 2
) -> tuple[list[at.MessageParam], int]:
    """Breakpoints on the last message and the user message before it (see module docstring).

    Args:
        messages: the converted messages; not modified (marked messages are copied).
        budget: how many breakpoints may still be placed (the rest of the 4 went to tools/system).

    Returns:
        (messages with breakpoints, how many were placed).
    """
    out = list(messages)
    placed = 0
    candidates: list[int] = []
    if out:
        candidates.append(len(out) - 1)
        for i in range(len(out) - 2, -1, -1):
            if out[i]["role"] == "user":
                candidates.append(i)
                break
    for i in candidates:
        if placed >= budget:
            break
        msg = out[i]
        raw = msg["content"]
        content: list[Any] = [{"type": "text", "text": raw}] if isinstance(raw, str) else list(raw)
        if _mark_last_cacheable(content):
            out[i] = cast(at.MessageParam, {"role": msg["role"], "content": content})
            placed += 1
    return out, placed


@dataclass(frozen=True, slots=True, kw_only=True)
class MessagesParams:
    """The parameters of one Messages request, as sent (`system` / `tools` / `thinking` /
    `temperature` are None when omitted)."""

    messages: list[at.MessageParam]
    system: str | list[at.TextBlockParam] | None
    tools: list[at.ToolUnionParam] | None
    max_tokens: int
    thinking: at.ThinkingConfigEnabledParam | None
    temperature: float | None


def build_params(
    request: ModelRequest,
    view: Sequence[Turn],
    *,
    default_max_tokens: int,
    default_thinking_budget: int | None,
    prompt_caching: bool = True,
    cache_system: bool = True,
) -> MessagesParams:
    """Build the Messages parameters of one request from its wire view.

    Args:
        request: the request (`thinking_budget_tokens` wins over `default_thinking_budget`;
            its `effort`, for a model that reasons, over both: `tether.effort`).
        view: the wire view for target `anthropic`.
        default_max_tokens: `max_tokens` when the request sets none (Anthropic requires one).
        default_thinking_budget: the provider's budget, or None for thinking off.
        prompt_caching: place `cache_control` breakpoints (module docstring).
        cache_system: with `prompt_caching`, also one on the system prompt (which makes it a
            block list). Off for a compatible server (not Anthropic's own endpoint): some
            reject a list as the system prompt (llama-cpp-python's behind the LiteLLM proxy),
            and the breakpoints on the messages cache the prefix through the system prompt.

    A per-request budget (`request.thinking_budget_tokens`, e.g. from a decay policy) below
    Anthropic's minimum is raised to it (decay floors are generic; the minimum is this API's).

    Raises:
        ConfigError: the provider's own budget below 1024 tokens, or a budget not below
            `max_tokens`.
    """
    messages, extra_system = to_anthropic_messages(view)
    system_text = "\n\n".join([s for s in (request.system, *extra_system) if s])
    # A plain string unless a block must carry `cache_control`: some Anthropic-compatible
    # servers (llama-cpp-python's behind the LiteLLM proxy) reject a list as the system prompt
    system: str | list[at.TextBlockParam] | None = system_text or None
    tools = to_anthropic_tools(request.tools)
    if request.web_search is not None:
        tools.append(web_search_tool(request.web_search))
    tools = tools or None
    max_tokens = request.max_output_tokens or default_max_tokens
    asked = request.thinking_budget_tokens
    budget = default_thinking_budget if asked is None else max(asked, MIN_THINKING_BUDGET)
    if request.effort is not None and reasons(request.model):  # the effort wins
        budget = anthropic_budget(request.effort, max_tokens)
    if budget is not None:
        if budget < MIN_THINKING_BUDGET:
            raise ConfigError(
                f"thinking budget ({budget}) must be at least {MIN_THINKING_BUDGET} tokens "
                "(Anthropic's minimum)"
            )
        if budget >= max_tokens:
            raise ConfigError(f"thinking budget ({budget}) must be below max_tokens ({max_tokens})")
        if (
            thinking_must_be_disabled(tuple(view))
            or loop_lacks_thinking(messages)
            or (messages and messages[-1]["role"] == "assistant")
        ):
            budget = None  # T08; and Anthropic refuses thinking with an assistant prefill
    if prompt_caching:
        left = MAX_CACHE_BREAKPOINTS
        if tools:
            tools = [
                *tools[:-1],
                cast(at.ToolUnionParam, {**tools[-1], "cache_control": EPHEMERAL}),
            ]
            left -= 1
        if system and cache_system:
            system = [{"type": "text", "text": system_text, "cache_control": EPHEMERAL}]
            left -= 1
        messages, _ = cache_messages(messages, min(2, left))
    return MessagesParams(
        messages=messages,
        system=system,
        tools=tools,
        max_tokens=max_tokens,
        thinking={"type": "enabled", "budget_tokens": budget} if budget is not None else None,
        # Anthropic: thinking is incompatible with a modified temperature.
        temperature=request.temperature if budget is None else None,
    )
