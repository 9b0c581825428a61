"""Chat Completions request conversion (target `openai-chat`): wire view → `messages` and tools.

Owns: converting a wire view into Chat Completions `messages` (tool results as `tool` messages,
documents and images as content parts) and the tool list. Pure: data in, data out.
Does not own: the stream or the provider (`tether.providers.openai_chat`), the wire passes.

Request shape (`POST /chat/completions`, `stream=true`, `stream_options.include_usage=true`):
    {"model", "messages": [
        {"role": "system", "content": <system prompt>},
        {"role": "user", "content": str | [{"type": "text"|"image_url"|"file", ...}]},
        {"role": "assistant", "content": str,   # "" beside calls: never null (below)
         "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]},
        {"role": "tool", "tool_call_id", "content": str},  # one per tool result, in order
     ], "tools": [{"type": "function", "function": {"name", "description", "parameters"}}]}
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Literal, cast

from openai.types.chat import (
    ChatCompletionContentPartParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)
from openai.types.chat.chat_completion_message_function_tool_call_param import (
    ChatCompletionMessageFunctionToolCallParam,
)

from tether.effort import openai_effort
from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ModelRequest, ToolSpec
from tether.providers.catalog import reasons
from tether.providers.images import fit_image


def _data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def _image_url(block: ImageBlock) -> str:
    """The image as a data URL, fitted to OpenAI's image limits (`tether.providers.images`)."""
    fitted = fit_image(block, "openai-chat")
    return _data_url(fitted.media_type, fitted.data)


def _document_part(block: DocumentBlock) -> ChatCompletionContentPartParam:
    """A document as a user content part.

    Chat Completions accepts PDFs as `{"type": "file", "file": {"file_data": <data URL>}}`; text
    documents are sent as text parts (compatible servers rarely accept `file` parts).
    """
    if block.media_type.startswith("text/"):
        try:
            text = base64.b64decode(block.data).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            text = block.data
        title = f"{block.title}\n\n" if block.title else ""
        return {"type": "text", "text": f"{title}{text}"}
    file: dict[str, str] = {"file_data": _data_url(block.media_type, block.data)}
    if block.title:
        file["filename"] = block.title
    return cast(ChatCompletionContentPartParam, {"type": "file", "file": file})


def _user_content(
    parts: Sequence[ChatCompletionContentPartParam],
) -> str | list[ChatCompletionContentPartParam]:
    """A plain string when every part is text (what every compatible server accepts), else the
    list of parts."""
    texts: list[str] = []
    for part in parts:
        if part["type"] != "text":
            return list(parts)
        texts.append(part["text"])
    return "\n\n".join(texts)


def _user_messages(turn: Turn) -> list[ChatCompletionMessageParam]:
    """A user turn → its tool messages (in order, first), then one user message for the rest.

    Chat Completions requires each `tool` message to directly follow the assistant message that
    issued its call, so the tool results go before any user text of the same turn. A `tool`
    message carries text only; images a tool returned follow in a user message.
    """
    out: list[ChatCompletionMessageParam] = []
    parts: list[ChatCompletionContentPartParam] = []
    tool_images: list[ChatCompletionContentPartParam] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            text = block.text
            if block.is_error and not text:
                text = "error"
            out.append({"role": "tool", "tool_call_id": block.tool_call_id, "content": text})
            images = [p for p in block.content if isinstance(p, ImageBlock)]
            if images:
                tool_images.append(
                    {"type": "text", "text": f"Images returned by tool call {block.tool_call_id}:"}
                )
                tool_images.extend(
                    {"type": "image_url", "image_url": {"url": _image_url(p)}} for p in images
                )
        elif isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append({"type": "image_url", "image_url": {"url": _image_url(block)}})
        elif isinstance(block, DocumentBlock):
            parts.append(_document_part(block))
        elif isinstance(block, CompactSummaryBlock):
            parts.append({"type": "text", "text": block.summary})
        # thinking / redacted thinking / tool calls in a user turn: not representable; dropped.
    parts = tool_images + parts
    if parts:
        out.append({"role": "user", "content": _user_content(parts)})
    return out


def _assistant_message(turn: Turn) -> ChatCompletionMessageParam | None:
    """An assistant turn → one assistant message (text + `tool_calls`).

    Thinking and redacted thinking are not sent: Chat Completions has no field for them. A call
    whose arguments were invalid is replayed with the parsed arguments (`{}`), never the raw text:
    compatible servers parse `arguments` when rendering their chat template. A reply with calls
    and no text has `content: ""`, never null: OpenAI's API accepts both, but
    llama-cpp-python's server answers HTTP 500 to null (its schema allows only a string there).
    """
    text = "".join(b.text for b in turn.content if isinstance(b, TextBlock))
    calls: list[ChatCompletionMessageFunctionToolCallParam] = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.arguments)},
        }
        for b in turn.content
        if isinstance(b, ToolCallBlock)
    ]
    if not text and not calls:
        return None
    if calls:
        return {"role": "assistant", "content": text, "tool_calls": calls}
    return {"role": "assistant", "content": text}


def to_chat_messages(
    messages: Sequence[Turn], system: str | None = None
) -> list[ChatCompletionMessageParam]:
    """Convert a wire view into Chat Completions messages.

    Args:
        messages: the wire view (tool results are `ToolResultBlock`s inside user turns).
        system: the system prompt, sent as the first message (`role: system`).

    Returns:
        The `messages` array, in order; see the module docstring for the shapes.
    """
    out: list[ChatCompletionMessageParam] = []
    if system:
        out.append({"role": "system", "content": system})
    for turn in messages:
        if turn.role == "assistant":
            msg = _assistant_message(turn)
            if msg is not None:
                out.append(msg)
        elif turn.role == "system":
            out.append({"role": "system", "content": turn.text})
        else:
            out.extend(_user_messages(turn))
    return out


def to_chat_tools(tools: Sequence[ToolSpec]) -> list[ChatCompletionToolParam]:
    """Tools → `[{"type": "function", "function": {name, description, parameters}}]`."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def reasoning_effort(request: ModelRequest, model: str) -> Literal["low", "medium", "high"] | None:
    """`reasoning_effort` for a request with an effort sent to a model that reasons
    (`tether.effort`; other models reject the field), else None (not sent)."""
    if request.effort is None or not reasons(model):
        return None
    return openai_effort(request.effort)
