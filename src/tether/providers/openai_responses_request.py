"""Responses request conversion (target `openai-responses`): wire view → `input` items, tools
and the request's parameters.

Owns: converting a wire view into stateless (`store=false`) Responses `input` items (reasoning
items replayed as produced), the tool list, whether a model is a reasoning model, and the
parameters of `client.responses.create`. Pure: data in, data out.
Does not own: the stream or the provider (`tether.providers.openai_responses`), the wire passes
(which reasoning items may be replayed, T10).

Request shape (`POST /responses`, OpenAI "Responses API" reference):
    {"model", "instructions": <system prompt>, "stream": true, "store": false,
     "include": ["reasoning.encrypted_content"],          # reasoning models only
     "reasoning"?: {"effort", "summary"}, "max_output_tokens"?, "temperature"?,
     "tools": [{"type": "function", "name", "description", "parameters", "strict": false},
               {"type": "web_search", "filters"?: {"allowed_domains"}}],   # `web_search` set
     "include"?: [..., "web_search_call.action.sources"],                 # `web_search` set
     "input": [
        {"role": "user", "content": [{"type": "input_text"|"input_image"|"input_file", ...}]},
        {"role": "system", "content": str},
        {"type": "reasoning", "id": "rs_…", "summary": [{"type": "summary_text", "text"}],
         "encrypted_content"},                             # replayed as produced (store=false)
        {"role": "assistant", "content": str},
        {"type": "function_call", "call_id", "name", "arguments": <JSON text>, "id"?: "fc_…"},
        {"type": "function_call_output", "call_id", "output": str}]}

Web search (OpenAI "Web search" guide): the `web_search` tool takes an allow list only
(`filters.allowed_domains`, subdomains included); it has no deny list, so a request whose
`WebSearch` has blocked domains and no allow list does not offer the tool (denied hosts are
never searched behind the user's back). Earlier searches reach this API as text (the wire view,
`tether.wire.server_tools`), never as `web_search_call` items.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any

from tether.effort import openai_effort
from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ModelRequest, ToolSpec
from tether.providers.images import fit_image

ENCRYPTED_REASONING = "reasoning.encrypted_content"

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|gpt-oss|codex)|codex", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Whether `model` is an OpenAI reasoning model (o1/o3/o4…, gpt-5…, codex, gpt-oss): those
    accept `include: ["reasoning.encrypted_content"]` and `reasoning`; others reject them."""
    return _REASONING_MODEL.search(model.rsplit("/", 1)[-1]) is not None


def _data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def _user_part(block: TextBlock | ImageBlock | DocumentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, ImageBlock):
        fitted = fit_image(block, "openai-responses")  # within OpenAI's image limits
        return {"type": "input_image", "image_url": _data_url(fitted.media_type, fitted.data)}
    if block.media_type.startswith("text/"):
        try:
            text = base64.b64decode(block.data).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            text = block.data
        return {"type": "input_text", "text": f"{block.title}\n\n{text}" if block.title else text}
    return {
        "type": "input_file",
        "filename": block.title or "document.pdf",
        "file_data": _data_url(block.media_type, block.data),
    }


def _user_items(turn: Turn) -> list[dict[str, Any]]:
    """Tool results first (each a `function_call_output` right after its calls), then one user
    message with the rest. Images a tool returned follow in a user message."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            text = block.text or ("error" if block.is_error else "")
            out.append(
                {"type": "function_call_output", "call_id": block.tool_call_id, "output": text}
            )
            parts.extend(_user_part(p) for p in block.content if isinstance(p, ImageBlock))
        elif isinstance(block, TextBlock | ImageBlock | DocumentBlock):
            if not isinstance(block, TextBlock) or block.text:
                parts.append(_user_part(block))
        elif isinstance(block, CompactSummaryBlock):
            parts.append({"type": "input_text", "text": block.summary})
    if parts:
        out.append({"role": "user", "content": parts})
    return out


def _reasoning_item(block: ThinkingBlock) -> dict[str, Any]:
    summary = block.summary or ((block.text,) if block.text else ())
    return {
        "type": "reasoning",
        "id": block.item_id,
        "summary": [{"type": "summary_text", "text": s} for s in summary],
        "encrypted_content": block.encrypted_content,
    }


def _assistant_items(turn: Turn) -> list[dict[str, Any]]:
    """Assistant blocks in order: reasoning items (only those the wire pass kept, which carry an
    `item_id` and `encrypted_content`), text as assistant messages, calls as `function_call`.
    Other thinking (another provider's, already stripped by the wire pass) is not sent: the
    Responses input has no item for foreign reasoning text."""
    out: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            out.append({"role": "assistant", "content": "".join(text)})
            text.clear()

    for block in turn.content:
        if isinstance(block, TextBlock):
            text.append(block.text)
        elif isinstance(block, ThinkingBlock):
            if block.item_id and block.encrypted_content:
                flush()
                out.append(_reasoning_item(block))
        elif isinstance(block, ToolCallBlock):
            flush()
            item: dict[str, Any] = {
                "type": "function_call",
                "call_id": block.id,
                "name": block.name,
                "arguments": json.dumps(block.arguments),
            }
            item_id = (block.provider_meta or {}).get("item_id")
            if isinstance(item_id, str):
                item["id"] = item_id
            out.append(item)
    flush()
    return out


def to_responses_input(messages: Sequence[Turn]) -> list[dict[str, Any]]:
    """Convert a wire view (target `openai-responses`) into Responses `input` items (shapes in
    the module docstring), in order."""
    out: list[dict[str, Any]] = []
    for turn in messages:
        if turn.role == "assistant":
            out.extend(_assistant_items(turn))
        elif turn.role == "system":
            if turn.text:
                out.append({"role": "system", "content": turn.text})
        else:
            out.extend(_user_items(turn))
    return out


WEB_SEARCH_SOURCES = "web_search_call.action.sources"
"""The `include` value that makes a `web_search_call` item list the pages it found."""


def to_responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools → `[{"type": "function", "name", "description", "parameters", "strict": false}]`
    (non-strict: tether's schemas are not written for strict mode's rules)."""
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,
        }
        for t in tools
    ]


def build_params(
    request: ModelRequest,
    view: Sequence[Turn],
    *,
    model: str,
    reasoning: bool | None,
    reasoning_effort: str | None,
    reasoning_summary: str | None,
) -> dict[str, Any]:
    """The keyword arguments of `client.responses.create` (without `stream`) for `request`
    whose wire view is `view`, sent to `model`; `reasoning` None guesses from the model name
    (`is_reasoning_model`)."""
    params: dict[str, Any] = {"model": model, "input": to_responses_input(view), "store": False}
    if request.system:
        params["instructions"] = request.system
    tools = to_responses_tools(request.tools)
    include: list[str] = []
    search = request.web_search
    if search is not None and (search.allowed_domains or not search.blocked_domains):
        tool: dict[str, Any] = {"type": "web_search"}
        if search.allowed_domains:
            tool["filters"] = {"allowed_domains": list(search.allowed_domains)}
        tools.append(tool)
        include.append(WEB_SEARCH_SOURCES)
    if tools:
        params["tools"] = tools
    if request.max_output_tokens is not None:
        params["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if reasoning if reasoning is not None else is_reasoning_model(model):
        include.insert(0, ENCRYPTED_REASONING)
        if request.effort is not None:  # the request's effort wins over the provider's
            reasoning_effort = openai_effort(request.effort)
        config = {
            k: v
            for k, v in (("effort", reasoning_effort), ("summary", reasoning_summary))
            if v is not None
        }
        if config:
            params["reasoning"] = config
    if include:
        params["include"] = include
    return params
