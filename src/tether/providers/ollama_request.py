"""Ollama `/api/chat` request conversion (target `ollama`): wire view → messages, tools, and
tether's estimate of the prompt's size.

Owns: converting a wire view into `/api/chat` messages and tools, and `estimate_prompt_tokens`
(the local estimate silent-truncation detection compares with). Pure: data in, data out.
Does not own: the stream or the provider (`tether.providers.ollama`), the wire passes.

Request (Ollama API reference, "Generate a chat completion"):
    {"model", "stream": true, "think"?: bool,
     "options": {"num_ctx": <always sent>, "temperature"?, "num_predict"?},
     "tools": [{"type": "function", "function": {"name", "description", "parameters"}}],
     "messages": [{"role": "system"|"user"|"assistant"|"tool", "content": str,
                   "images"?: [base64],
                   "tool_calls"?: [{"function": {"name", "arguments": <object>}}],
                   "tool_name"?: str}]}             # a tool message names the tool it answers
Thinking is local-only: an assistant turn's thinking blocks (Ollama's own or any other
provider's) are kept in the session and never sent; an assistant turn with nothing else is not
sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ToolSpec
from tether.providers.images import fit_image
from tether.tokens import CHARS_PER_TOKEN


def _user_messages(turn: Turn, names: dict[str, str]) -> list[dict[str, Any]]:
    """Tool results first (one `tool` message each, in order), then one user message."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    images: list[str] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            text = block.text or ("error" if block.is_error else "")
            msg: dict[str, Any] = {"role": "tool", "content": text}
            if block.tool_call_id in names:
                msg["tool_name"] = names[block.tool_call_id]
            out.append(msg)
            images.extend(
                fit_image(p, "ollama").data for p in block.content if isinstance(p, ImageBlock)
            )
        elif isinstance(block, TextBlock):
            if block.text:
                texts.append(block.text)
        elif isinstance(block, ImageBlock):
            images.append(fit_image(block, "ollama").data)  # PNG or JPEG, as the runners read
        elif isinstance(block, DocumentBlock):
            texts.append(f"[document {block.title or block.media_type} omitted: not supported]")
        elif isinstance(block, CompactSummaryBlock):
            texts.append(block.summary)
    if texts or images:
        msg = {"role": "user", "content": "\n\n".join(texts)}
        if images:
            msg["images"] = images
        out.append(msg)
    return out


def _assistant_message(turn: Turn) -> dict[str, Any] | None:
    # thinking is local-only: stored in the session, never sent back (the seed's rule; it
    # would only fill a small local window with reasoning the model has finished with)
    text = "".join(b.text for b in turn.content if isinstance(b, TextBlock))
    calls = [
        {"function": {"name": b.name, "arguments": b.arguments}}
        for b in turn.content
        if isinstance(b, ToolCallBlock)
    ]
    if not text and not calls:
        return None
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = calls
    return msg


def to_ollama_messages(messages: Sequence[Turn], system: str | None = None) -> list[dict[str, Any]]:
    """Convert a wire view (target `ollama`) into `/api/chat` messages (shapes in the module
    docstring). Tool calls are sent with their arguments as an object, as Ollama requires. A
    `tool` message names the call it answers, taken from the assistant turn right before it
    (the view puts every result there), never from the whole history: an id a later turn
    reuses (local models often repeat `call_0`) must not lend its name to an earlier result,
    as Ollama has no call ids and matches results to calls by name."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for turn in messages:
        if turn.role == "assistant":
            names = {c.id: c.name for c in turn.tool_calls}
            msg = _assistant_message(turn)
            if msg is not None:
                out.append(msg)
        elif turn.role == "system":
            out.append({"role": "system", "content": turn.text})
        else:
            out.extend(_user_messages(turn, names))
    return out


def to_ollama_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools → `[{"type": "function", "function": {name, description, parameters}}]`."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def estimate_prompt_tokens(
    messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
) -> int:
    """tether's local estimate of a request's prompt: ceil(chars / 4) over message contents,
    thinking, tool-call arguments (as JSON) and the tools' JSON, in tokens."""
    chars = 0
    for m in messages:
        chars += len(m.get("content") or "") + len(m.get("thinking") or "")
        for call in m.get("tool_calls") or ():
            chars += len(json.dumps(call["function"]["arguments"]))
    if tools:
        chars += len(json.dumps(tools))
    return math.ceil(chars / CHARS_PER_TOKEN)
