"""OpenAI Chat Completions adapter (target `openai-chat`), also for OpenAI-compatible servers.

Owns: converting a wire view into a Chat Completions streaming request, and translating the
streamed `ChatCompletionChunk`s into tether's normalized `StreamEvent`s.
Does not own: transport and SSE decoding (the official `openai` SDK, `AsyncOpenAI`), building the
wire view (`tether.wire`), assembling events into a turn (`tether.providers.assemble`), or fault
classification (`tether.providers.errors`).

Request conversion: `tether.providers.openai_chat_request`.

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
      `tether.providers.errors`): an `StreamError(kind="network")`, never a `StreamDone`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall
from openai.types.completion_usage import CompletionUsage

from tether.errors import AuthError
from tether.messages import (
    Provenance,
    ProviderStopReason,
    Target,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    StreamDone,
    StreamEvent,
    ToolCallStart,
    UsageEvent,
    is_vendor_url,
    wire_messages,
)
from tether.providers.catalog import ModelInfo, catalog_info
from tether.providers.openai_chat_request import (
    reasoning_effort,
    to_chat_messages,
    to_chat_tools,
)
from tether.providers.plan_usage import PlanUsage, PlanWatch
from tether.providers.streaming import TEXT, THINKING, BlockCursor, drive_stream, incomplete

OPENAI_HOST = "api.openai.com"
"""OpenAI's own endpoint: ids over 40 chars are refused there, also its own route's."""
COMPAT_PRODUCER = "openai-compat"
"""Producer tag of thinking blocks built from a compatible server's `reasoning_content`."""

_STOP_REASONS: dict[str, ProviderStopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


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
    info: ModelInfo
    """The catalog's entry for `model` (no prefill)."""

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
        self.plan = PlanWatch(name)
        """What the replies' rate-limit headers said of the plan (`plan_usage`)."""
        self.model = model
        self._route = Provenance(provider=name, api="openai-chat", model=model)
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
        vendor = is_vendor_url(str(client.base_url), OPENAI_HOST)
        self._compat = not vendor
        self.info = catalog_info(model, vendor_endpoint=vendor)
        self._client = client

    def request_messages(self, request: ModelRequest) -> list[ChatCompletionMessageParam]:
        """The `messages` array `stream` sends for `request`, built from its wire view."""
        view = wire_messages(
            request, "openai-chat", route=self._route, vendor_endpoint=self.info.vendor_endpoint
        )
        return to_chat_messages(view, request.system)

    def plan_usage(self) -> PlanUsage | None:
        """The plan's limits as the last reply's rate-limit headers stated them (this
        process's, else the last run's, kept in the user cache); None before any
        (`tether.providers.plan_usage`)."""
        return self.plan.latest()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one request; yields events, then exactly one `StreamDone` or `StreamError`.

        Provider faults are yielded as `StreamError` (see `tether.providers.errors`); cancellation
        propagates.
        """
        messages = self.request_messages(request)
        tools = to_chat_tools(request.tools)
        max_tokens = request.max_output_tokens
        effort = reasoning_effort(request, request.model or self.model)
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
                reasoning_effort=effort if effort is not None else openai.omit,
            )

        async for event in drive_stream(
            open_stream, ChatStreamTranslator(), self.plan.observe, idle_s=request.stream_idle_timeout_s
        ):
            yield event
