"""The provider protocol: one request in, a stream of normalized events out.

Owns: `ModelRequest`, the `StreamEvent` union and the `Provider` protocol.
Does not own: transport (the vendor SDKs own it), building the wire view (`tether.wire`, called by
the loop before the request reaches an adapter), or assembling events into a turn
(`tether.providers.assemble`).

Event contract of `Provider.stream(request)`:
    any number of TextStart/TextDelta/TextEnd, ThinkingStart/ThinkingDelta/ThinkingEnd,
    RedactedThinking, ToolCallStart/ToolCallDelta/ToolCallEnd, ServerToolUse (a web search
    the provider ran, whole), UsageEvent, StreamWarning and EnvNotice events (the last: a
    change of the provider's environment, e.g. the embedded model loaded; the loop emits it as
    an `env` event and the reply ignores it), each block keyed by an
    `index` unique within the stream, then EXACTLY ONE terminal
    event: `StreamDone` or `StreamError`. Provider faults are values (an `StreamError`), never raised; an
    adapter raises only for configuration mistakes and bugs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable
from urllib.parse import urlsplit

from tether.effort import Effort
from tether.errors import ErrorKind
from tether.messages import (
    Provenance,
    ProviderStopReason,
    ServerToolBlock,
    Target,
    ToolSpec,
    Turn,
    Usage,
)
from tether.wire import build_view

__all__ = [
    "EnvNotice",
    "ErrorKind",
    "ModelRequest",
    "Provider",
    "RedactedThinking",
    "ServerToolUse",
    "StreamDone",
    "StreamError",
    "StreamEvent",
    "StreamWarning",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "UsageEvent",
    "WarningKind",
    "WebSearch",
    "wire_messages",
]

@dataclass(frozen=True, slots=True, kw_only=True)
class WebSearch:
    """The provider's server-side web search, offered with a request (`ModelRequest.web_search`).

    Attributes:
        max_uses: searches per request at most (Anthropic `max_uses`), or None for no cap.
        allowed_domains: when not empty, only results from these hosts (and their subdomains).
        blocked_domains: results from these hosts never appear. Anthropic takes one list or the
            other, never both ("cannot be used alongside"); OpenAI takes only an allow list.
    """

    max_uses: int | None = None
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One provider request.

    Attributes:
        model: the model name as the provider knows it.
        messages: the wire view (already built by `tether.wire` for the provider's target).
        system: the system prompt, or None.
        tools: the tools offered.
        max_output_tokens: cap on generated tokens, or None for the provider default.
        temperature: sampling temperature, or None for the provider default.
        is_wire_view: True when `messages` is already the wire view for the provider's
            target (the agent loop builds it incrementally and sets this); otherwise the
            adapter builds it with `tether.wire.build_view` (see `wire_messages`), so every
            request goes through the wire passes either way.
        thinking_budget_tokens: the reasoning budget for this request in tokens (the loop's
            thinking-budget decay sets it per turn), or None for the provider's own setting
            (Anthropic `thinking.budget_tokens`, Gemini `thinkingConfig.thinkingBudget`;
            adapters whose API has no budget ignore it).
        web_search: the provider's own web search tool to offer beside `tools`, or None (the
            loop sets it only for a model whose catalog entry has one; an adapter whose API has
            none ignores it).
        effort: the reasoning effort (`tether.effort`: each adapter maps it onto its
            API's field, for a model that reasons; it wins over `thinking_budget_tokens`), or
            None for the provider's own setting.
        stream_idle_timeout_s: the longest silence of an open stream, seconds
            (`retry.stream_idle_timeout`); past it the attempt fails as a `network` fault
            (`tether.providers.streaming.stalled`). 0: no limit.
    """

    model: str
    messages: tuple[Turn, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    temperature: float | None = None
    is_wire_view: bool = False
    thinking_budget_tokens: int | None = None
    web_search: WebSearch | None = None
    effort: Effort | None = None
    stream_idle_timeout_s: float = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TextStart:
    type: Literal["text_start"] = "text_start"
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    type: Literal["text_delta"] = "text_delta"
    index: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextEnd:
    type: Literal["text_end"] = "text_end"
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingStart:
    type: Literal["thinking_start"] = "thinking_start"
    index: int
    producer: str | None = None
    item_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    type: Literal["thinking_delta"] = "thinking_delta"
    index: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingEnd:
    """Closes a thinking block; carries the signature / encrypted content when the provider
    sends them (Anthropic `signature_delta`, Gemini `thoughtSignature`, OpenAI
    `encrypted_content`)."""

    type: Literal["thinking_end"] = "thinking_end"
    index: int
    signature: str | None = None
    encrypted_content: str | None = None
    summary: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactedThinking:
    """A complete `redacted_thinking` block (it has no deltas)."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    index: int
    data: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStart:
    """A tool call begins. `id` is None when the provider sent none (the assembler mints one)."""

    type: Literal["tool_call_start"] = "tool_call_start"
    index: int
    id: str | None
    name: str
    provider_meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDelta:
    """A fragment of the call's JSON argument text."""

    type: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    arguments_delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnd:
    type: Literal["tool_call_end"] = "tool_call_end"
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolUse:
    """A tool the provider ran on its servers (a web search), call and result as one complete
    block: it has no deltas."""

    type: Literal["server_tool"] = "server_tool"
    index: int
    block: ServerToolBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageEvent:
    """Cumulative usage of the request so far (normalized; see `tether.messages.Usage`).
    A later UsageEvent replaces an earlier one."""

    type: Literal["usage"] = "usage"
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamDone:
    """The stream completed. `stop_reason` normalized; `raw_stop_reason` as the provider sent it."""

    type: Literal["done"] = "done"
    stop_reason: ProviderStopReason
    raw_stop_reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """The request failed (before or during the stream).

    Attributes:
        kind: the taxonomy class.
        message: a human-readable explanation.
        status_code: the HTTP status, when one applies (200 for an in-stream error event).
        retry_after_s: the server's Retry-After, in seconds, when given.
        code: the provider's exact error type/code when it sent one (`overloaded_error`,
            `insufficient_quota`, `billing_error`, ...); retry decisions read it, never prose.
    """

    type: Literal["error"] = "error"
    kind: ErrorKind
    message: str
    status_code: int | None = None
    retry_after_s: float | None = None
    code: str | None = None


WarningKind = Literal["truncated_prompt"]
"""`truncated_prompt`: the server evaluated far fewer prompt tokens than the request holds, i.e.
it silently cut the prompt (Ollama truncates to `num_ctx` without an error)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamWarning:
    """Something went wrong that the provider did not report as an error; the stream goes on.

    Attributes:
        kind: what it is (see `WarningKind`).
        message: a human-readable explanation.
        estimated_prompt_tokens: tether's local estimate of the prompt, in tokens, when relevant.
        reported_prompt_tokens: the prompt size the provider reported, in tokens, when relevant.
    """

    type: Literal["warning"] = "warning"
    kind: WarningKind
    message: str
    estimated_prompt_tokens: int | None = None
    reported_prompt_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvNotice:
    """A change of the provider's environment during a request, not part of the reply (the
    embedded model's child process loaded, or loaded again after a crash). The agent loop
    emits it as an `env` event (`tether.agent.events.EnvEvent`, same fields); the assembler
    ignores it. This is how a provider reaches the host's events without importing the agent.

    Attributes:
        what: the kind of thing (`model`).
        name: which one (the model file's name).
        state: what happened to it (`loaded`, `reloaded`).
        detail: one line for people.
        data: JSON-ready facts (for `model`: file, load seconds, configuration, ...).
    """

    type: Literal["env"] = "env"
    what: str
    name: str
    state: str
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict[str, Any])


StreamEvent = (
    TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | RedactedThinking
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | ServerToolUse
    | UsageEvent
    | StreamWarning
    | EnvNotice
    | StreamDone
    | StreamError
)


def wire_messages(
    request: ModelRequest,
    target: Target,
    *,
    supports_prefill: bool = False,
    route: Provenance | None = None,
    vendor_endpoint: bool = False,
) -> tuple[Turn, ...]:
    """The messages an adapter sends: `request.messages` as they are when the loop already
    built the wire view (`is_wire_view`), else `tether.wire.build_view` of them for `target`
    (pairing repaired, reasoning sanitized, ids sanitized, user-terminated tail)."""
    if request.is_wire_view:
        return request.messages
    return build_view(
        request.messages,
        target,
        supports_prefill=supports_prefill,
        route=route,
        vendor_endpoint=vendor_endpoint,
    )


def is_vendor_url(url: str, host: str) -> bool:
    """Whether `url` (an SDK client's base URL) is on the API vendor's own `host`
    (`api.openai.com`): a compatible server or gateway is not."""
    return urlsplit(url).hostname == host


@runtime_checkable
class Provider(Protocol):
    """A model endpoint.

    Attributes:
        name: the provider name (`local`, `openai`, `anthropic`, `scripted`, ...).
        target: the wire API its requests use; the loop builds the wire view for it.
        model: the default model name.
    """

    name: str
    target: Target
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send `request` and yield normalized events, ending with exactly one StreamDone/StreamError."""
        ...


def inline_refs(schema: dict[str, Any], *, depth: int = 8) -> dict[str, Any]:
    """A tool's parameter schema with every local `{"$ref": "#/<path>"}` replaced by what it
    points to (JSON Pointer from the schema's root), its `$defs` / `definitions` dropped:
    grammar-constrained local models and some providers do not follow references, and a
    schema nested in another (the embedded model's reply schema) no longer resolves them. A
    reference nested deeper than `depth` (a recursive definition) becomes `{}`, any value: a
    grammar admits more there and the tool's own validation still checks the call. Pure;
    unknown targets and remote references also become `{}`."""
    root = schema

    def target(ref: str) -> dict[str, Any] | None:
        if not ref.startswith("#/"):
            return None
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return None
            node = cast(dict[str, Any], node)[part]
        return cast(dict[str, Any], node) if isinstance(node, dict) else None

    def walk(node: Any, level: int) -> Any:
        if isinstance(node, list):
            return [walk(v, level) for v in cast(list[Any], node)]
        if not isinstance(node, dict):
            return node
        d = cast(dict[str, Any], node)
        ref = d.get("$ref")
        if isinstance(ref, str):
            found = target(ref) if level < depth else None
            if found is None:
                return {}
            merged = {**found, **{k: v for k, v in d.items() if k != "$ref"}}
            return walk(merged, level + 1)
        return {k: walk(v, level) for k, v in d.items()}

    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    return cast(dict[str, Any], walk(body, 0))
