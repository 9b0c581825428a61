"""OpenAI Chat Completions adapter (target `openai-chat`), also for OpenAI-compatible servers.

Owns: converting a wire view into a Chat Completions streaming request, and translating the
streamed `ChatCompletionChunk`s into tether's normalized `StreamEvent`s.
Does not own: transport and SSE decoding (the official `openai` SDK, `AsyncOpenAI`), building the
wire view (`tether.wire`), assembling events into a turn (`tether.providers.assemble`), or fault
classification (`tether.providers.errors`).

Request shape (`POST /chat/completions`, `stream=true`, `stream_options.include_usage=true`):
    {"model", "messages": [
        {"role": "system", "content": <system prompt>},
        {"role": "user", "content": str | [{"type": "text"|"image_url"|"file", ...}]},
        {"role": "assistant", "content": str | None,
         "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]},
        {"role": "tool", "tool_call_id", "content": str},  # one per tool result, in order
     ], "tools": [{"type": "function", "function": {"name", "description", "parameters"}}]}

Stream rules (Chat Completions streaming reference):
    - Text arrives in `choices[0].delta.content`; reasoning text that compatible servers send in
      `delta.reasoning_content` (vLLM, DeepSeek, llama.cpp) or `delta.reasoning` (Groq,
      OpenRouter) becomes a thinking block with producer `openai-compat`.
    - Tool calls arrive as `delta.tool_calls[*]` fragments keyed by `index`; `id` and
      `function.name` only on the first fragment of a call. A fragment without id starts a call
      with `id=None` (the assembler mints one); a repeated id on another index is another call.
    - `finish_reason` ends the choice; the usage chunk (`choices: []`) may come after it. Every
      open tool call is ended then, except on `length`: a call cut by the token limit is left
      unended so the assembler marks it truncated (case T30).
    - A stream that ends without any `finish_reason` is incomplete (the SDK raises nothing, see
      `notes/sdk-fault-behaviour.md`): an `StreamError(kind="network")`, never a `StreamDone`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall
from openai.types.chat.chat_completion_message_function_tool_call_param import (
    ChatCompletionMessageFunctionToolCallParam,
)
from openai.types.completion_usage import CompletionUsage

from tether.errors import AuthError
from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    Provenance,
    Target,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    StopReason,
    StreamDone,
    StreamEvent,
    ToolCallStart,
    ToolSpec,
    UsageEvent,
    wire_messages,
)
from tether.providers.streaming import TEXT, THINKING, BlockCursor, drive_stream, incomplete

COMPAT_PRODUCER = "openai-compat"
"""Producer tag of thinking blocks built from a compatible server's `reasoning_content`."""

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


# ---------------------------------------------------------------------------------------------
# Request conversion


def _data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


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
                    {"type": "image_url", "image_url": {"url": _data_url(p.media_type, p.data)}}
                    for p in images
                )
        elif isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            url = _data_url(block.media_type, block.data)
            parts.append({"type": "image_url", "image_url": {"url": url}})
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
    compatible servers parse `arguments` when rendering their chat template.
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
        return {"role": "assistant", "content": text or None, "tool_calls": calls}
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


def normalize_usage(usage: CompletionUsage) -> Usage:
    """OpenAI usage → tether `Usage`.

    OpenAI counts cached prompt tokens inside `prompt_tokens`
    (`prompt_tokens_details.cached_tokens`), so they are subtracted from input; a
    `cache_write_tokens` detail, when a server reports it, likewise.
    """
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    written = (details.cache_write_tokens or 0) if details is not None else 0
    return Usage(
        input_tokens=max(0, usage.prompt_tokens - cached - written),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


# ---------------------------------------------------------------------------------------------
# Stream translation


@dataclass(slots=True)
class ChatStreamTranslator:
    """Translates `ChatCompletionChunk`s (choice 0 only) into normalized events.

    Feed every chunk to `on_item`, then call `finish` once the SDK stream is exhausted. Blocks
    are keyed by `TEXT`, `THINKING` and each call's `tool_calls[].index`.
    """

    _blocks: BlockCursor = field(default_factory=BlockCursor)
    _calls: list[int] = field(default_factory=lambda: list[int]())
    """The Chat `tool_calls[].index` of each call, in order."""
    _named: set[int] = field(default_factory=lambda: set[int]())
    _finish_reason: str | None = None

    @staticmethod
    def _reasoning(delta: ChoiceDelta) -> str:
        extra = delta.model_extra or {}
        for key in ("reasoning_content", "reasoning"):
            value: object = extra.get(key)
            if isinstance(value, str) and value:
                return value
        return ""

    def _call(self, call: ChoiceDeltaToolCall) -> Iterator[StreamEvent]:
        blocks = self._blocks
        yield from blocks.close(THINKING)
        yield from blocks.close(TEXT)
        name = call.function.name if call.function is not None else None
        if call.index not in self._calls:
            self._calls.append(call.index)
            yield blocks.open_call(call.index, id=call.id or None, name=name or "")
            if name:
                self._named.add(call.index)
        elif name and call.index not in self._named and (block := blocks.get(call.index)):
            # A server that sends the name after the first fragment.
            self._named.add(call.index)
            yield ToolCallStart(index=block.index, id=call.id or None, name=name)
        args = call.function.arguments if call.function is not None else None
        yield from blocks.arguments(call.index, args or "")

    def on_item(self, chunk: ChatCompletionChunk) -> Iterator[StreamEvent]:
        """Events for one chunk (usage chunks included)."""
        blocks = self._blocks
        for choice in chunk.choices:
            if choice.index != 0 or self._finish_reason is not None:
                continue
            delta = choice.delta
            reasoning = self._reasoning(delta)
            if reasoning:
                if not blocks.is_open(THINKING):
                    yield from blocks.close(TEXT)
                yield from blocks.thinking(reasoning, producer=COMPAT_PRODUCER)
            text = (delta.content or "") + (delta.refusal or "")
            if text:
                yield from blocks.close(THINKING)
                yield from blocks.text(text)
            for call in delta.tool_calls or ():
                yield from self._call(call)
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
                yield from blocks.close(THINKING)
                yield from blocks.close(TEXT)
                if choice.finish_reason != "length":
                    yield from blocks.finish()
        if chunk.usage is not None:
            yield UsageEvent(usage=normalize_usage(chunk.usage))

    def finish(self) -> StreamEvent:
        """The terminal event once the stream is exhausted: `StreamDone`, or a network `StreamError`
        when no `finish_reason` ever arrived."""
        reason = self._finish_reason
        if reason is None:
            return incomplete("finish_reason")
        stop = _STOP_REASONS.get(reason, "other")
        if reason == "stop" and self._calls:
            # Some compatible servers (vLLM, older llama.cpp) finish a tool-calling turn with `stop`.
            stop = "tool_use"
        return StreamDone(stop_reason=stop, raw_stop_reason=reason)


class OpenAIChatProvider:
    """A Chat Completions endpoint: OpenAI itself or any OpenAI-compatible server.

    Args:
        model: the default model name (a request's `model` wins).
        api_key: the API key; defaults to `OPENAI_API_KEY`. With a `base_url` and no key at all,
            a placeholder is sent (local servers ignore it).
        base_url: e.g. `http://127.0.0.1:8000/v1` for vLLM, llama.cpp or LM Studio.
        client: a ready `openai.AsyncOpenAI` (tests pass one with a mocked transport); `api_key`,
            `base_url` and `max_retries` are then ignored.
        name: the provider name recorded in provenance.
        max_retries: SDK-level retries; 0 by default since the loop owns retries.

    Raises:
        AuthError: no API key for the official endpoint.
    """

    target: Target = "openai-chat"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        name: str = "openai",
        max_retries: int = 0,
    ) -> None:
        self.name = name
        self.model = model
        self.supports_prefill = False
        self._route = Provenance(provider=name, api="openai-chat", model=model)
        self._compat = base_url is not None
        if client is None:
            try:
                client = openai.AsyncOpenAI(
                    api_key=api_key, base_url=base_url, max_retries=max_retries
                )
            except openai.OpenAIError:
                if base_url is None:
                    raise AuthError(
                        "no OpenAI API key: pass api_key or set OPENAI_API_KEY"
                    ) from None
                client = openai.AsyncOpenAI(
                    api_key="not-needed", base_url=base_url, max_retries=max_retries
                )
        else:
            self._compat = str(client.base_url).rstrip("/") != "https://api.openai.com/v1"
        self._client = client

    def request_messages(self, request: ModelRequest) -> list[ChatCompletionMessageParam]:
        """The `messages` array `stream` sends for `request`, built from its wire view."""
        view = wire_messages(request, "openai-chat", route=self._route)
        return to_chat_messages(view, request.system)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one request; yields events, then exactly one `StreamDone` or `StreamError`.

        Provider faults are yielded as `StreamError` (see `tether.providers.errors`); cancellation
        propagates.
        """
        messages = self.request_messages(request)
        tools = to_chat_tools(request.tools)
        max_tokens = request.max_output_tokens
        client = self._client

        async def open_stream() -> openai.AsyncStream[ChatCompletionChunk]:
            return await client.chat.completions.create(
                model=request.model or self.model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                tools=tools or openai.omit,
                temperature=request.temperature if request.temperature is not None else openai.omit,
                # OpenAI deprecated `max_tokens` (its reasoning models reject it); compatible
                # servers (llama.cpp, LM Studio) know only `max_tokens`.
                max_tokens=max_tokens if max_tokens is not None and self._compat else openai.omit,
                max_completion_tokens=max_tokens
                if max_tokens is not None and not self._compat
                else openai.omit,
            )

        async for event in drive_stream(open_stream, ChatStreamTranslator()):
            yield event
