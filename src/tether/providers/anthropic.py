"""Anthropic Messages adapter (target `anthropic`).

Owns: sending a streaming Messages request, and translating the raw stream events
(`client.messages.create(..., stream=True)`) into tether's normalized `StreamEvent`s.
Does not own: the request parameters (prompt caching, thinking, the message conversion:
`tether.providers.anthropic_request`), transport and SSE decoding (the official `anthropic` SDK,
`AsyncAnthropic`), building the wire view (`tether.wire`), assembling events into a turn
(`tether.providers.assemble`), or fault classification (`tether.providers.errors`).

Raw stream events (Messages streaming reference) → events:
    message_start        usage (input + cache fields); content already in it (a continuation of
                         a programmatic tool call) is emitted as complete blocks
    content_block_start  text → TextStart · thinking → ThinkingStart(producer "anthropic") ·
                         redacted_thinking → one RedactedThinking · tool_use → ToolCallStart
    content_block_delta  text_delta → TextDelta · thinking_delta → ThinkingDelta ·
                         signature_delta → kept for ThinkingEnd · input_json_delta → ToolCallDelta
    content_block_stop   TextEnd / ThinkingEnd(signature) / ToolCallEnd
    message_delta        stop_reason; usage (cumulative: it replaces the message_start figures
                         it repeats, e.g. cache reads reported only at the end)
    message_stop         the stream is complete → StreamDone

Web search (Anthropic "Web search tool", `web_search_20250305`): a `server_tool_use` block named
`web_search` (its `input.query` streamed as `input_json_delta`) and the `web_search_tool_result`
that answers it (complete at its `content_block_start`: a list of `web_search_result`s with
`url`, `title`, `encrypted_content`, or a `web_search_tool_result_error` with its `error_code`)
become ONE `ServerToolUse` event (a `ServerToolBlock` keeping both blocks verbatim in `raw`) when
the result arrives; a call left without its result is emitted, incomplete, at `message_delta`.
`usage.server_tool_use.web_search_requests` → `Usage.web_search_requests`. `citations_delta` is
not kept (the cited pages are the search block's results). Other server-side tool blocks
(`code_execution_tool_result`, `web_fetch_tool_result`, ...) and unknown block types are skipped
with their deltas: tether does not offer those tools.

`stop_reason: pause_turn` (the server paused a long turn of server-tool use): `stream` sends the
request again with the reply so far as a final assistant message, as the API asks ("provide the
response back as-is in a subsequent request to let Claude continue"), at most
`MAX_PAUSE_CONTINUATIONS` times; the events of every part form one turn (indices continue, usage
summed). A stream without `message_stop` or without a stop reason is incomplete (the SDK raises
nothing, see `tether.providers.errors`): `StreamError(kind="network")`, never a `StreamDone`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import cast

import anthropic
from anthropic import types as at

from tether.errors import AuthError, ConfigError
from tether.messages import (
    Provenance,
    ProviderStopReason,
    SearchHit,
    ServerToolBlock,
    Target,
    Usage,
)
from tether.providers.anthropic_request import (
    MIN_THINKING_BUDGET,
    MessagesParams,
    build_params,
    continue_paused,
    to_anthropic_messages,
    to_anthropic_tools,
)
from tether.providers.assemble import Assembler
from tether.providers.base import (
    ModelRequest,
    ServerToolUse,
    StreamDone,
    StreamEvent,
    UsageEvent,
    is_vendor_url,
    wire_messages,
)
from tether.providers.catalog import ModelInfo, catalog_info
from tether.providers.plan_usage import PlanUsage, PlanWatch
from tether.providers.streaming import BlockCursor, drive_stream, incomplete

__all__ = [
    "MIN_THINKING_BUDGET",
    "AnthropicProvider",
    "AnthropicStreamTranslator",
    "merge_delta_usage",
    "normalize_usage",
    "to_anthropic_messages",
    "to_anthropic_tools",
]

PRODUCER = "anthropic"
ANTHROPIC_HOST = "api.anthropic.com"
"""Anthropic's own endpoint (`ModelInfo.vendor_endpoint`)."""

MAX_PAUSE_CONTINUATIONS = 4
"""How many times one request is sent again after `stop_reason: pause_turn` (each part may run
up to the server's own iteration limit, about 10 server-tool uses)."""


_STOP_REASONS: dict[str, ProviderStopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    # The output was cut by the context window: a truncation, like max_tokens.
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}

# ---------------------------------------------------------------------------------------------
# Stream translation


@dataclass(slots=True)
class AnthropicStreamTranslator:
    """Translates raw Messages stream events into normalized events.

    Feed every event to `on_item`, then call `finish` once the SDK stream is exhausted.
    Event indices are tether's own (a `BlockCursor`), not Anthropic's block indices (the
    cursor's keys).
    """

    _blocks: BlockCursor = field(default_factory=BlockCursor)
    _usage: Usage = field(default_factory=Usage)
    _stop_reason: str | None = None
    _stopped: bool = False
    base_usage: Usage = field(default_factory=Usage)
    """Usage of the earlier parts of a paused turn, added to this part's."""
    _searches: dict[int, _Search] = field(default_factory=lambda: {})
    """Open `server_tool_use` blocks by Anthropic index."""
    _calls: dict[str, dict[str, object]] = field(default_factory=lambda: {})
    """Ended web-search calls awaiting their result, by call id (the raw block)."""

    def continued(self) -> AnthropicStreamTranslator:
        """The translator of the next part of a paused turn: indices go on, usage adds up."""
        return AnthropicStreamTranslator(
            _blocks=self._blocks, base_usage=self.base_usage + self._usage
        )

    def _usage_event(self) -> UsageEvent:
        return UsageEvent(usage=self.base_usage + self._usage)

    def _search_result(self, block: at.WebSearchToolResultBlock) -> Iterator[StreamEvent]:
        call: dict[str, object] | None = self._calls.pop(block.tool_use_id, None)
        if call is None:  # a result whose call was not seen: keep it anyway (nothing lost)
            call = {
                "type": "server_tool_use",
                "id": block.tool_use_id,
                "name": "web_search",
                "input": {},
            }
        yield ServerToolUse(
            index=self._blocks.new_index(),
            block=search_block(call, block.model_dump(mode="json", exclude_none=True)),
        )

    def _flush_calls(self) -> Iterator[StreamEvent]:
        """Web-search calls that got no result (a cut or paused stream): incomplete blocks."""
        for call in self._calls.values():
            yield ServerToolUse(index=self._blocks.new_index(), block=search_block(call, None))
        self._calls.clear()

    def _complete_block(self, block: at.ContentBlock) -> Iterator[StreamEvent]:
        """A block that arrives whole (inside `message_start.message.content`)."""
        blocks = self._blocks
        if isinstance(block, at.TextBlock):
            yield from blocks.whole_text(block.text)
        elif isinstance(block, at.ThinkingBlock):
            yield from blocks.whole_thinking(
                block.thinking, producer=PRODUCER, signature=block.signature
            )
        elif isinstance(block, at.RedactedThinkingBlock):
            yield blocks.redacted(block.data)
        elif isinstance(block, at.ToolUseBlock):
            yield from blocks.whole_call(
                id=block.id, name=block.name, arguments=json.dumps(block.input), meta=_meta(block)
            )
        elif isinstance(block, at.ServerToolUseBlock) and block.name == "web_search":
            self._calls[block.id] = block.model_dump(mode="json", exclude_none=True)
        elif isinstance(block, at.WebSearchToolResultBlock):
            yield from self._search_result(block)
        else:
            blocks.new_index()  # other server-side blocks keep their place in the numbering

    def _start(self, event: at.RawContentBlockStartEvent) -> Iterator[StreamEvent]:
        block, key, blocks = event.content_block, event.index, self._blocks
        if isinstance(block, at.TextBlock):
            yield blocks.open_text(key)
            yield from blocks.text(block.text, key)
        elif isinstance(block, at.ThinkingBlock):
            yield blocks.open_thinking(key, producer=PRODUCER, signature=block.signature or None)
            yield from blocks.thinking(block.thinking, key)
        elif isinstance(block, at.RedactedThinkingBlock):
            yield blocks.redacted(block.data)  # complete already; nothing follows but its stop
        elif isinstance(block, at.ToolUseBlock):
            # A call whose input came whole here, with no deltas, sends it when it stops.
            whole = json.dumps(block.input) if block.input else None
            yield blocks.open_call(
                key, id=block.id, name=block.name, meta=_meta(block), arguments=whole
            )
        elif isinstance(block, at.ServerToolUseBlock) and block.name == "web_search":
            raw = block.model_dump(mode="json", exclude_none=True)
            self._searches[key] = _Search(raw, [json.dumps(block.input)] if block.input else [])
        elif isinstance(block, at.WebSearchToolResultBlock):
            yield from self._search_result(block)
        # other server tool use / results / unknown: skipped (module docstring)

    def _delta(self, event: at.RawContentBlockDeltaEvent) -> Iterator[StreamEvent]:
        key, delta, blocks = event.index, event.delta, self._blocks
        search = self._searches.get(key)
        if search is not None and isinstance(delta, at.InputJSONDelta):
            search.parts.append(delta.partial_json)
            return
        if not blocks.is_open(key):
            return
        if isinstance(delta, at.TextDelta):
            yield from blocks.text(delta.text, key)
        elif isinstance(delta, at.ThinkingDelta):
            yield from blocks.thinking(delta.thinking, key)
        elif isinstance(delta, at.SignatureDelta):
            blocks.sign(key, delta.signature, append=True)
        elif isinstance(delta, at.InputJSONDelta):
            yield from blocks.arguments(key, delta.partial_json)
        # citations_delta: not kept (module docstring).

    def on_item(self, event: object) -> Iterator[StreamEvent]:
        """Events for one raw stream event; unknown event types are ignored."""
        if isinstance(event, at.RawMessageStartEvent):
            message = event.message
            self._usage = normalize_usage(message.usage)
            if message.stop_reason is not None:
                self._stop_reason = message.stop_reason
            for block in message.content:
                yield from self._complete_block(block)
            yield self._usage_event()
        elif isinstance(event, at.RawContentBlockStartEvent):
            yield from self._start(event)
        elif isinstance(event, at.RawContentBlockDeltaEvent):
            yield from self._delta(event)
        elif isinstance(event, at.RawContentBlockStopEvent):
            search = self._searches.pop(event.index, None)
            if search is not None:
                self._calls[str(search.raw["id"])] = search.whole()
            yield from self._blocks.close(event.index)
        elif isinstance(event, at.RawMessageDeltaEvent):
            yield from self._flush_calls()
            if event.delta.stop_reason is not None:
                self._stop_reason = event.delta.stop_reason
            self._usage = merge_delta_usage(self._usage, event.usage)
            yield self._usage_event()
        elif isinstance(event, at.RawMessageStopEvent):
            self._stopped = True

    def finish(self) -> StreamEvent:
        """The terminal event once the stream is exhausted: `StreamDone`, or a network `StreamError`
        when `message_stop` or the stop reason never arrived."""
        if not self._stopped or self._stop_reason is None:
            return incomplete("message_stop / stop_reason")
        reason = self._stop_reason
        return StreamDone(stop_reason=_STOP_REASONS.get(reason, "other"), raw_stop_reason=reason)


@dataclass(slots=True)
class _Search:
    """A streaming `server_tool_use` block: its start (raw) and its input's JSON fragments."""

    raw: dict[str, object]
    parts: list[str]

    def whole(self) -> dict[str, object]:
        """The raw block with its streamed input (`{}` when the fragments do not parse)."""
        text = "".join(self.parts)
        value: object
        try:
            value = json.loads(text) if text else {}
        except ValueError:
            value = {}
        return {**self.raw, "input": cast(object, value) if isinstance(value, dict) else {}}


def search_block(call: dict[str, object], result: dict[str, object] | None) -> ServerToolBlock:
    """A `ServerToolBlock` of an Anthropic web search: the raw `server_tool_use` block `call`
    and its raw `web_search_tool_result` (None: none arrived), both kept verbatim in `raw`."""
    raw_input = call.get("input")
    query = ""
    if isinstance(raw_input, dict):
        q = cast(dict[str, object], raw_input).get("query")
        query = q if isinstance(q, str) else ""
    hits: list[SearchHit] = []
    error: str | None = None
    content = result.get("content") if result is not None else None
    if isinstance(content, list):
        for item in cast(list[object], content):
            if isinstance(item, dict):
                d = cast(dict[str, object], item)
                url, title = d.get("url"), d.get("title")
                if isinstance(url, str):
                    hits.append(SearchHit(url=url, title=title if isinstance(title, str) else ""))
    elif isinstance(content, dict):
        code = cast(dict[str, object], content).get("error_code")
        error = str(code) if code is not None else "error"
    return ServerToolBlock(
        name=str(call.get("name") or "web_search"),
        producer=PRODUCER,
        id=str(call.get("id") or ""),
        query=query,
        results=tuple(hits),
        error=error,
        raw=(call,) if result is None else (call, result),
    )


def _meta(block: at.ToolUseBlock) -> dict[str, object] | None:
    """`caller` of a tool_use issued from server-side code (programmatic tool calling), kept as
    provider metadata; None for a direct call."""
    caller = block.caller
    if caller is None or caller.type == "direct":
        return None
    return {"caller": caller.model_dump(mode="json", exclude_none=True)}


def normalize_usage(usage: at.Usage) -> Usage:
    """Anthropic usage → tether `Usage`. Anthropic reports cache reads/writes beside
    `input_tokens` (they add to it), so the fields map one to one; web searches come from
    `server_tool_use.web_search_requests`."""
    server = usage.server_tool_use
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
        web_search_requests=server.web_search_requests if server is not None else 0,
    )


def merge_delta_usage(current: Usage, delta: at.MessageDeltaUsage) -> Usage:
    """Apply `message_delta.usage`: its figures are cumulative, so each present field replaces
    the one from `message_start` (Anthropic may report cache reads only here)."""
    return Usage(
        input_tokens=delta.input_tokens if delta.input_tokens is not None else current.input_tokens,
        output_tokens=delta.output_tokens,
        cache_read_tokens=delta.cache_read_input_tokens
        if delta.cache_read_input_tokens is not None
        else current.cache_read_tokens,
        cache_write_tokens=delta.cache_creation_input_tokens
        if delta.cache_creation_input_tokens is not None
        else current.cache_write_tokens,
        web_search_requests=delta.server_tool_use.web_search_requests
        if delta.server_tool_use is not None
        else current.web_search_requests,
    )


def _env_credentials() -> bool:
    """Whether the environment holds credentials the anthropic SDK reads by itself."""
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


class AnthropicProvider:
    """The Anthropic Messages API.

    Args:
        model: the default model name (a request's `model` wins).
        api_key: the API key; defaults to `ANTHROPIC_API_KEY`.
        base_url: another endpoint speaking the Messages API (a proxy, a gateway).
        client: a ready `anthropic.AsyncAnthropic` (tests pass one with a mocked transport);
            `api_key`, `base_url` and `max_retries` are then ignored.
        max_output_tokens: `max_tokens` when the request sets none (Anthropic requires one).
        thinking_budget: enables extended thinking with this `budget_tokens`, or None.
        max_retries: SDK-level retries; 0 by default since the loop owns retries.
        name: the provider name recorded in provenance.
        supports_prefill: the model accepts an assistant-final request (never with thinking on).
        prompt_caching: send `cache_control` breakpoints (see `anthropic_request`).

    Raises:
        ConfigError: a thinking budget below Anthropic's minimum of 1024 tokens.
        AuthError: no key, for any endpoint (neither `api_key` nor the
            `ANTHROPIC_API_KEY` / `ANTHROPIC_AUTH_TOKEN` variables the SDK reads).
    """

    target: Target = "anthropic"
    info: ModelInfo
    """The catalog's entry for `model`; `supports_prefill` as configured (never with thinking on)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        max_output_tokens: int = 8192,
        thinking_budget: int | None = None,
        max_retries: int = 0,
        name: str = "anthropic",
        supports_prefill: bool = False,
        prompt_caching: bool = True,
    ) -> None:
        if thinking_budget is not None and thinking_budget < MIN_THINKING_BUDGET:
            raise ConfigError(
                f"thinking_budget must be at least {MIN_THINKING_BUDGET} tokens (Anthropic's minimum)"
            )
        self.name = name
        self.plan = PlanWatch(name)
        """What the replies' rate-limit headers said of the plan (`plan_usage`)."""
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.thinking_budget = thinking_budget
        self.prompt_caching = prompt_caching
        # Newer models reject an assistant-final request ("This model does not support
        # assistant message prefill"), and none accepts prefill with thinking on.
        self.info = catalog_info(model, supports_prefill=supports_prefill and thinking_budget is None)
        self._route = Provenance(provider=name, api="anthropic", model=model)
        if client is None and not (api_key or _env_credentials()):
            # With a base_url too: the SDK cannot send a request without a key or token (it
            # raises a TypeError at the first request), so say so before anything runs.
            where = f" (also for base_url {base_url})" if base_url else ""
            raise AuthError(f"no Anthropic API key{where}: pass api_key or set ANTHROPIC_API_KEY")
        self._client = client or anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries
        )
        if is_vendor_url(str(self._client.base_url), ANTHROPIC_HOST):
            self.info = replace(self.info, vendor_endpoint=True)

    def request_params(self, request: ModelRequest) -> MessagesParams:
        """The Messages parameters of `request` as `stream` sends them (built from its wire
        view by `anthropic_request.build_params`).

        Raises:
            ConfigError: as `build_params`.
        """
        view = wire_messages(
            request,
            "anthropic",
            supports_prefill=self.info.supports_prefill,
            route=self._route,
            vendor_endpoint=self.info.vendor_endpoint,
        )
        return build_params(
            request,
            view,
            default_max_tokens=self.max_output_tokens,
            default_thinking_budget=self.thinking_budget,
            prompt_caching=self.prompt_caching,
            cache_system=self.info.vendor_endpoint,
        )

    def plan_usage(self) -> PlanUsage | None:
        """The plan's limits as the last reply's rate-limit headers stated them (this
        process's, else the last run's, kept in the user cache); None before any
        (`tether.providers.plan_usage`)."""
        return self.plan.latest()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one request; yields events, then exactly one `StreamDone` or `StreamError`.

        Provider faults are yielded as `StreamError` (see `tether.providers.errors`); cancellation
        propagates. The request is built by `anthropic_request.build_params` (prompt caching,
        thinking budget: `request.thinking_budget_tokens` or this provider's).

        Raises:
            ConfigError: the thinking budget is below 1024 or not below the request's
                `max_tokens` (Anthropic's rules).
        """
        p = self.request_params(request)
        client = self._client
        messages = p.messages

        async def open_stream() -> anthropic.AsyncStream[at.RawMessageStreamEvent]:
            return await client.messages.create(
                model=request.model or self.model,
                max_tokens=p.max_tokens,
                messages=messages,
                stream=True,
                system=p.system or anthropic.omit,
                tools=p.tools or anthropic.omit,
                thinking=p.thinking or anthropic.omit,
                # anthropic 2.x has no `temperature` keyword; the API still takes the field.
                extra_body={"temperature": p.temperature} if p.temperature is not None else None,
            )

        translator = AnthropicStreamTranslator()
        so_far = Assembler("paused")  # the reply so far, to send back after a pause_turn
        for part in range(MAX_PAUSE_CONTINUATIONS + 1):
            paused = False
            async for event in drive_stream(
                open_stream, translator, self.plan.observe, idle_s=request.stream_idle_timeout_s
            ):
                so_far.feed(event)
                if (
                    isinstance(event, StreamDone)
                    and event.raw_stop_reason == "pause_turn"
                    and part < MAX_PAUSE_CONTINUATIONS
                ):
                    paused = True  # the stream is over: drive_stream returns after it
                    continue
                yield event
            if not paused:
                return
            messages = continue_paused(p.messages, so_far.turn())
            so_far.done = None
            translator = translator.continued()
