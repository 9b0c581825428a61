"""OpenAI Responses adapter (target `openai-responses`).

Owns: converting a wire view into a stateless (`store=false`) streaming Responses request, and
translating the streamed Responses events into tether's normalized `StreamEvent`s.
Does not own: transport and SSE decoding (the official `openai` SDK, `client.responses.create(
stream=True)`), the wire passes (`tether.wire`: which reasoning items may be replayed, T10),
assembly, or fault classification (`tether.providers.errors`).

Request conversion: `tether.providers.openai_responses_request`.

Stream events → events:
    response.output_item.added     reasoning → ThinkingStart(producer "openai-responses",
                                   item_id) · message → TextStart · function_call →
                                   ToolCallStart(id = call_id, provider_meta {"item_id": fc_…})
    response.reasoning_summary_text.delta / reasoning_text.delta → ThinkingDelta (summary parts
                                   separated by a blank line)
    response.output_text.delta / refusal.delta → TextDelta
    response.function_call_arguments.delta → ToolCallDelta
    response.output_item.done      ThinkingEnd(encrypted_content, summary) · TextEnd ·
                                   ToolCallEnd (the item's whole `arguments` when no delta came)
    response.output_item.done      web_search_call → one ServerToolUse (a `ServerToolBlock`: the
                                   query, the sources found, the item verbatim in `raw`)
    response.completed             usage (+ one web search per `web_search_call`) →
                                   StreamDone(tool_use when a call was made, else end_turn)
    response.incomplete            StreamDone(max_tokens | refusal | other)
    response.failed / error        StreamError, classified from the error's code and message
Reasoning items are `ThinkingBlock`s whose `encrypted_content` is the opaque payload (the field
the wire passes read; it plays the role of a signature) and whose `item_id` is the `rs_…` id.
A stream without `response.completed` / `incomplete` / `failed` is incomplete: a network error.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, cast

import openai
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseReasoningItem,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningTextDeltaEvent,
    ResponseRefusalDeltaEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
    ResponseUsage,
)

from tether.errors import AuthError
from tether.messages import (
    Provenance,
    ProviderStopReason,
    SearchHit,
    ServerToolBlock,
    Target,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    ServerToolUse,
    StreamDone,
    StreamError,
    StreamEvent,
    UsageEvent,
    is_vendor_url,
    wire_messages,
)
from tether.providers.catalog import ModelInfo, catalog_info
from tether.providers.errors import classify_status, error_code
from tether.providers.openai_chat import OPENAI_HOST
from tether.providers.openai_responses_request import build_params
from tether.providers.plan_usage import PlanUsage, PlanWatch
from tether.providers.streaming import BlockCursor, drive_stream, incomplete

PRODUCER = "openai-responses"

_INCOMPLETE_STOP: dict[str, ProviderStopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "refusal",
}

def web_search_block(item: ResponseFunctionWebSearch) -> ServerToolBlock:
    """A `web_search_call` item as a `ServerToolBlock`: its query (several joined by ` | `),
    the sources it lists (only with `include: ["web_search_call.action.sources"]`), an
    `open_page` / `find_in_page` action's url as its one result, `failed` as the error, the
    item verbatim in `raw`."""
    action = item.action
    query, urls = "", list[str]()
    if action.type == "search":
        queries = action.queries or ([action.query] if action.query else [])
        query = " | ".join(queries)
        urls = [src.url for src in action.sources or ()]
    elif action.type == "open_page":
        query, urls = "open page", [action.url] if action.url else []
    else:
        query, urls = f"find {action.pattern!r}", [action.url]
    return ServerToolBlock(
        name="web_search",
        producer=PRODUCER,
        id=item.id,
        query=query,
        results=tuple(SearchHit(url=u) for u in urls),
        error="failed" if item.status == "failed" else None,
        raw=(item.model_dump(mode="json", exclude_none=True),),
    )


def normalize_usage(usage: ResponseUsage) -> Usage:
    """Responses usage → tether `Usage`: `input_tokens` includes
    `input_tokens_details.cached_tokens` (and `cache_write_tokens`, when reported), so those
    are subtracted from input (case T19)."""
    # Compatible servers may omit the details object the SDK types as required.
    details = cast(Any, usage).input_tokens_details
    cached: int = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    written: int = (getattr(details, "cache_write_tokens", 0) or 0) if details is not None else 0
    return Usage(
        input_tokens=max(0, usage.input_tokens - cached - written),
        output_tokens=usage.output_tokens,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


# ---------------------------------------------------------------------------------------------
# Stream translation


@dataclass(slots=True)
class ResponsesStreamTranslator:
    """Translates Responses stream events into normalized events (blocks keyed by
    `output_index`)."""

    _blocks: BlockCursor = field(default_factory=BlockCursor)
    _parts: dict[int, int] = field(default_factory=lambda: {})
    """A reasoning item's `output_index` → the last summary index seen."""
    _calls: int = 0
    _searches: int = 0
    """`web_search_call` items seen (each one search, billed per call)."""

    def _usage(self, usage: ResponseUsage) -> UsageEvent:
        u = normalize_usage(usage)
        return UsageEvent(usage=replace(u, web_search_requests=self._searches))

    def _added(self, event: ResponseOutputItemAddedEvent) -> Iterator[StreamEvent]:
        raw, key = event.item, event.output_index
        if isinstance(raw, ResponseReasoningItem):
            yield self._blocks.open_thinking(key, producer=PRODUCER, item_id=raw.id)
        elif isinstance(raw, ResponseOutputMessage):
            yield self._blocks.open_text(key)
        elif isinstance(raw, ResponseFunctionToolCall):
            self._calls += 1
            meta = {"item_id": raw.id} if raw.id else None
            yield self._blocks.open_call(key, id=raw.call_id, name=raw.name, meta=meta)
        # Built-in tool items (web search, file search, ...) run server-side: skipped.

    def _done(self, event: ResponseOutputItemDoneEvent) -> Iterator[StreamEvent]:
        raw, key = event.item, event.output_index
        if isinstance(raw, ResponseReasoningItem):
            summary = tuple(s.text for s in raw.summary)
            yield from self._blocks.close(
                key, encrypted_content=raw.encrypted_content, summary=summary
            )
        elif isinstance(raw, ResponseFunctionToolCall):
            yield from self._blocks.close(key, arguments=raw.arguments)
        elif isinstance(raw, ResponseFunctionWebSearch):
            self._searches += 1
            yield ServerToolUse(index=self._blocks.new_index(), block=web_search_block(raw))
        else:
            yield from self._blocks.close(key)

    def _thinking(self, output_index: int, part: int, delta: str) -> Iterator[StreamEvent]:
        block = self._blocks.get(output_index)
        if block is None or block.kind != "thinking" or not delta:
            return
        last = self._parts.get(output_index, -1)
        if last >= 0 and part != last:
            yield from self._blocks.thinking("\n\n", output_index)
        self._parts[output_index] = part
        yield from self._blocks.thinking(delta, output_index)

    def on_item(self, event: ResponseStreamEvent) -> Iterator[StreamEvent]:
        """Events for one Responses stream event; unknown types are ignored."""
        if isinstance(event, ResponseOutputItemAddedEvent):
            yield from self._added(event)
        elif isinstance(event, ResponseOutputItemDoneEvent):
            yield from self._done(event)
        elif isinstance(event, ResponseTextDeltaEvent | ResponseRefusalDeltaEvent):
            if self._blocks.is_open(event.output_index):
                yield from self._blocks.text(event.delta, event.output_index)
        elif isinstance(event, ResponseReasoningSummaryTextDeltaEvent):
            yield from self._thinking(event.output_index, event.summary_index, event.delta)
        elif isinstance(event, ResponseReasoningTextDeltaEvent):
            yield from self._thinking(event.output_index, event.content_index, event.delta)
        elif isinstance(event, ResponseFunctionCallArgumentsDeltaEvent):
            yield from self._blocks.arguments(event.output_index, event.delta)
        elif isinstance(event, ResponseCompletedEvent):
            if event.response.usage is not None:
                yield self._usage(event.response.usage)
            stop = "tool_use" if self._calls else "end_turn"
            yield StreamDone(stop_reason=stop, raw_stop_reason="completed")
        elif isinstance(event, ResponseIncompleteEvent):
            if event.response.usage is not None:
                yield self._usage(event.response.usage)
            details = event.response.incomplete_details
            reason = details.reason if details is not None else None
            yield StreamDone(
                stop_reason=_INCOMPLETE_STOP.get(reason or "", "other"), raw_stop_reason=reason
            )
        elif isinstance(event, ResponseFailedEvent):
            err = event.response.error
            body: dict[str, Any] = err.model_dump(mode="json") if err is not None else {}
            message = err.message if err is not None else "the response failed"
            yield StreamError(
                kind=classify_status(None, body),
                message=message,
                status_code=200,
                code=error_code(body),
            )
        elif isinstance(event, ResponseErrorEvent):
            body = {"code": event.code, "message": event.message}
            yield StreamError(
                kind=classify_status(None, body),
                message=event.message,
                status_code=200,
                code=error_code(body),
            )

    def finish(self) -> StreamEvent:
        """Reached only when no terminal Responses event came: the stream is incomplete."""
        return incomplete("response.completed")


class OpenAIResponsesProvider:
    """The OpenAI Responses API, stateless (`store=false`; reasoning replayed encrypted).

    Args:
        model: the default model name (a request's `model` wins).
        api_key: the API key; defaults to `OPENAI_API_KEY`.
        base_url: another endpoint speaking the Responses API (Azure, a gateway, vLLM).
        client: a ready `openai.AsyncOpenAI` (tests pass one with a mocked transport).
        reasoning: whether the model is a reasoning model (sends `include:
            ["reasoning.encrypted_content"]` and `reasoning`); None guesses from the name
            (`is_reasoning_model`).
        reasoning_effort: `reasoning.effort` (`minimal`/`low`/`medium`/`high`), or None.
        reasoning_summary: `reasoning.summary` (`auto`/`concise`/`detailed`), or None; `auto`
            by default so reasoning models stream a visible summary.
        name: the provider name recorded in provenance.
        max_retries: SDK-level retries; 0 by default since the loop owns retries.

    Raises:
        AuthError: no API key (neither `api_key` nor `OPENAI_API_KEY`) for the official endpoint.
    """

    target: Target = "openai-responses"
    info: ModelInfo
    """The catalog's entry for `model` (no prefill)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        reasoning: bool | None = None,
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = "auto",
        name: str = "openai-responses",
        max_retries: int = 0,
    ) -> None:
        self.name = name
        self.plan = PlanWatch(name)
        """What the replies' rate-limit headers said of the plan (`plan_usage`)."""
        self.model = model
        self.reasoning = reasoning
        self.reasoning_effort = reasoning_effort
        self.reasoning_summary = reasoning_summary
        self._route = Provenance(provider=name, api="openai-responses", model=model)
        if client is None:
            key = api_key or os.environ.get("OPENAI_API_KEY")
            if not key and base_url is None:
                raise AuthError("no OpenAI API key: pass api_key or set OPENAI_API_KEY")
            client = openai.AsyncOpenAI(
                api_key=key or "not-needed", base_url=base_url, max_retries=max_retries
            )
        self.info = catalog_info(
            model, vendor_endpoint=is_vendor_url(str(client.base_url), OPENAI_HOST)
        )
        self._client = client

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `client.responses.create` for `request` (without
        `stream`), built from its wire view."""
        view = wire_messages(
            request,
            "openai-responses",
            route=self._route,
            vendor_endpoint=self.info.vendor_endpoint,
        )
        return build_params(
            request,
            view,
            model=request.model or self.model,
            reasoning=self.reasoning,
            reasoning_effort=self.reasoning_effort,
            reasoning_summary=self.reasoning_summary,
        )

    def plan_usage(self) -> PlanUsage | None:
        """The plan's limits as the last reply's rate-limit headers stated them (this
        process's, else the last run's, kept in the user cache); None before any
        (`tether.providers.plan_usage`)."""
        return self.plan.latest()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one request; yields events, then exactly one `StreamDone` or `StreamError`.

        Provider faults (HTTP errors, the in-stream `error` / `response.failed` events) are
        yielded as a classified `StreamError`; cancellation propagates.
        """
        params = self.request_params(request)
        client = self._client

        async def open_stream() -> openai.AsyncStream[ResponseStreamEvent]:
            return await client.responses.create(stream=True, **cast(Any, params))

        async for event in drive_stream(
            open_stream, ResponsesStreamTranslator(), self.plan.observe, idle_s=request.stream_idle_timeout_s
        ):
            yield event
