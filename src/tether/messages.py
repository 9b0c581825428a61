"""The vocabulary of tether: turns, content blocks, usage and provenance, and their one JSON codec.

Owns: the frozen data types every other layer speaks, and the codec used at the JSONL boundary
(pydantic's `TURN_CODEC`; `turn_to_json` writes its bytes through orjson).
Does not own: any I/O, clock or id generation (ids are given by the caller), nor any provider's
wire format (that is `tether.wire` and `tether.providers`).

Shapes:
    Turn(id, role, content: tuple[ContentBlock, ...], usage, provenance, stop_reason)
    ContentBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolCallBlock
                 | ToolResultBlock | ImageBlock | DocumentBlock | CompactSummaryBlock
                 | ServerToolBlock

Tool results live in `user` turns (the Anthropic shape); adapters for other targets split them
into their own `tool` messages. This module imports nothing of tether's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from orjson import dumps as _orjson_dumps
from pydantic import Field, TypeAdapter

Role = Literal["user", "assistant", "system"]
"""A turn's role. Tool results are carried by `user` turns."""

ProviderStopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "other"
]
"""How a provider's stream ended, normalized across providers."""

StopReason = ProviderStopReason | Literal["interrupted", "error"]
"""`Turn.stop_reason` of an assistant turn: the provider's, or `interrupted` (a partial turn
persisted on cancellation) or `error` (a partial turn of a failed attempt)."""

RunStopReason = (
    StopReason | Literal["max_turns", "cancelled", "context_runaway", "prompt_denied", "max_budget"]
    | Literal["schema_invalid", "max_tool_calls"]  # run.output_schema, run.max_tool_calls
)
"""Why a run ended (`RunResult.stop_reason`, the `done` event's `stop_reason`): the last
turn's stop reason, or `max_turns`, `cancelled`, `context_runaway`, `error`, `max_budget` (the
next request would have passed `run.max_budget_usd`), `schema_invalid` (the final answer did not
validate against `run.output_schema`), `max_tool_calls` (a call would have passed
`run.max_tool_calls`)."""

Target = Literal["anthropic", "openai-chat", "openai-responses", "google", "ollama"]
"""The wire API a request goes to."""

TARGETS: tuple[Target, ...] = ("anthropic", "openai-chat", "openai-responses", "google", "ollama")

PERSISTED_OUTPUT_OPEN = "<persisted-output"
"""How the text of a persisted tool output's stub starts (`tether.tools.exec.persist` writes it);
wire passes recognise stubs by it and keep them whole."""
PERSISTED_OUTPUT_CLOSE = "</persisted-output>"
"""The stub's closing tag."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Plain text."""

    type: Literal["text"] = "text"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock:
    """Model reasoning, stored and replayed byte-exact.

    Attributes:
        text: the visible reasoning text (may be empty, e.g. an encrypted OpenAI reasoning item).
        signature: the provider's opaque signature (Anthropic `signature`, Gemini
            `thoughtSignature`), or None when unsigned.
        producer: the provider that produced it (`anthropic`, `openai`, `google`, ...), or None
            for legacy/untagged blocks.
        model: the model that produced it, when known.
        item_id: OpenAI Responses reasoning item id.
        encrypted_content: OpenAI Responses `encrypted_content` (kept for `store=false` replay).
        summary: OpenAI Responses reasoning summary parts.
    """

    type: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None
    producer: str | None = None
    model: str | None = None
    item_id: str | None = None
    encrypted_content: str | None = None
    summary: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactedThinkingBlock:
    """Anthropic's encrypted `redacted_thinking` payload (opaque `data`)."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str
    producer: str | None = "anthropic"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallBlock:
    """A model's request to run a tool (Anthropic `tool_use`, OpenAI `tool_call`).

    Attributes:
        id: the call id, unique within a session (re-minted at persist time on collision).
        name: the tool name.
        arguments: the parsed JSON object of arguments. `{}` when `invalid` is set.
        raw_arguments: the argument text as streamed, kept only when it did not parse strictly.
        invalid: why the arguments are unusable (truncated stream, not JSON, not an object), or
            None when valid. An invalid call is never executed.
        provider_meta: provider-specific extras replayed on the same call (e.g. a Gemini
            `thoughtSignature`), or None.
    """

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=lambda: {})
    raw_arguments: str | None = None
    invalid: str | None = None
    provider_meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock:
    """An image, base64 `data` with its `media_type` (e.g. `image/png`).

    Attributes:
        media_type: the image's MIME type (`image/png`, `image/jpeg`, ...).
        data: the bytes, base64. Empty on a session line whose image is stored in the
            session's artifact folder (`file`); loading a session fills it back in.
        file: where a session stores the bytes, relative to the sessions root
            (`<session id>/images/<sha256>.<ext>`), or None (inline, or not stored yet).
    """

    type: Literal["image"] = "image"
    media_type: str
    data: str
    file: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentBlock:
    """A document (e.g. PDF), base64 `data` with its `media_type`, optional `title`."""

    type: Literal["document"] = "document"
    media_type: str
    data: str
    title: str | None = None


ResultPart = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultBlock:
    """The outcome of one tool call.

    Attributes:
        tool_call_id: the id of the call it answers.
        content: text and image parts; may be empty in storage (the wire view renders a
            non-empty placeholder, since Anthropic rejects an empty text block).
        is_error: True when the tool failed, timed out, was refused or never ran.
    """

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    content: tuple[ResultPart, ...] = ()
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text parts joined with newlines (images omitted)."""
        return "\n".join(p.text for p in self.content if isinstance(p, TextBlock))


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactSummaryBlock:
    """A compaction marker's payload: an LLM summary replacing older turns.

    Attributes:
        summary: the model-written summary text.
        replaces_turn_ids: ids of the turns this marker elides from the wire.
        generation: 1 for the first compaction, +1 for each re-compaction.
    """

    type: Literal["compact_summary"] = "compact_summary"
    summary: str
    replaces_turn_ids: tuple[str, ...] = ()
    generation: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One result of a server-side web search: its `url` and page `title` (may be empty)."""

    url: str
    title: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolBlock:
    """A tool the provider ran on its own servers (web search), its call and result in one
    block of an assistant turn. tether never executes it; it is stored so nothing is lost, and
    the wire view sends `raw` back verbatim only to the API that produced it
    (`tether.wire.server_tools`), as plain text to any other.

    Attributes:
        name: the server tool (`web_search`).
        producer: the wire API that ran it (`anthropic`, `openai-responses`).
        id: the provider's call id (Anthropic `srvtoolu_…`, OpenAI `ws_…`).
        query: the search query (queries joined by ` | ` when the provider sent several).
        results: the pages found, in the provider's order.
        error: the provider's error code (`max_uses_exceeded`, `unavailable`, …), or None.
        raw: the provider's own blocks, verbatim, in order (Anthropic: the `server_tool_use`
            block and its `web_search_tool_result`, `encrypted_content` included; OpenAI: the
            `web_search_call` item). Anthropic requires them back unchanged to continue.
    """

    type: Literal["server_tool"] = "server_tool"
    name: str
    producer: str
    id: str
    query: str = ""
    results: tuple[SearchHit, ...] = ()
    error: str | None = None
    raw: tuple[dict[str, Any], ...] = ()

    @property
    def summary(self) -> str:
        """`[web search: QUERY → url1, url2]` (or `→ error CODE`), the block as plain text."""
        found = f"error {self.error}" if self.error else ", ".join(h.url for h in self.results)
        return f"[{self.name.replace('_', ' ')}: {self.query} → {found or 'no results'}]"


ContentBlock = Annotated[
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolCallBlock
    | ToolResultBlock
    | ImageBlock
    | DocumentBlock
    | CompactSummaryBlock
    | ServerToolBlock,
    Field(discriminator="type"),
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage of one request, normalized across providers (all figures in tokens).

    `input_tokens` counts prompt tokens NOT served from or written to the cache, so that
    `prompt_tokens = input + cache_read + cache_write` is the whole prompt for every provider:
    Anthropic reports cache reads/writes beside `input_tokens` (they add to it); OpenAI reports
    `cached_tokens` inside `prompt_tokens` (adapters subtract it from input).
    `web_search_requests` counts server-side web searches (Anthropic
    `usage.server_tool_use.web_search_requests`; OpenAI: one per `web_search_call` item), billed
    per search, not per token.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    web_search_requests: int = 0

    @property
    def prompt_tokens(self) -> int:
        """All prompt tokens: input + cache_read + cache_write."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            web_search_requests=self.web_search_requests + other.web_search_requests,
        )

    @property
    def cache_hit_rate(self) -> float | None:
        """The share of the prompt served from the cache: cache_read / prompt_tokens, in
        [0, 1]; None when the usage counts no prompt tokens."""
        prompt = self.prompt_tokens
        return max(0, self.cache_read_tokens) / prompt if prompt > 0 else None

    def summary_line(self) -> str:
        """`in 52413 (cache 50000, 95 % hit) / 4075 out`; the cache part only when non-zero
        (the hit rate is `cache_hit_rate`), then ` · 3 searches` when web searches ran."""
        cache = self.cache_read_tokens + self.cache_write_tokens
        rate = self.cache_hit_rate
        hit = f", {rate:.0%} hit".replace("%", " %") if rate is not None else ""
        cache_part = f" (cache {cache}{hit})" if cache else ""
        n = self.web_search_requests
        searches = f" · {n} search{'es' if n != 1 else ''}" if n else ""
        return f"in {self.prompt_tokens}{cache_part} / {self.output_tokens} out{searches}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Where an assistant turn came from: provider name, wire api (target) and model."""

    provider: str
    api: str
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool as offered to the model: name, description and a JSON schema (an object schema,
    no `$schema` key) for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One stored message.

    Attributes:
        id: unique within the session.
        role: `user`, `assistant` or `system`.
        content: the content blocks, in order.
        usage: the provider's usage for the request that produced this assistant turn.
        provenance: provider/api/model of an assistant turn.
        stop_reason: normalized stop reason of an assistant turn (`end_turn`, `tool_use`,
            `max_tokens`, `stop_sequence`, `refusal`, `error`, `interrupted`, `other`).
    """

    id: str
    role: Role
    content: tuple[ContentBlock, ...] = ()
    usage: Usage | None = None
    provenance: Provenance | None = None
    stop_reason: StopReason | None = None

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The tool_call blocks of this turn, in order. The last turn with calls asked keeps
        its answer (a turn is frozen): a reply's calls are read by the loop and each policy in
        turn, ~14 reads per tool turn, and its tuple is built once."""
        global _last_calls
        kept = _last_calls
        if kept[0] is self:
            return kept[1]
        calls = tuple([b for b in self.content if isinstance(b, ToolCallBlock)])  # a list: no generator
        if calls:  # a turn without calls (the results between two replies) evicts nothing
            _last_calls = (self, calls)
        return calls

    @property
    def tool_results(self) -> tuple[ToolResultBlock, ...]:
        """The tool_result blocks of this turn, in order."""
        return tuple([b for b in self.content if isinstance(b, ToolResultBlock)])  # a list: no generator

    @property
    def server_tools(self) -> tuple[ServerToolBlock, ...]:
        """The server-side tool blocks (web searches) of this turn, in order."""
        return tuple([b for b in self.content if isinstance(b, ServerToolBlock)])  # a list: no generator

    @property
    def text(self) -> str:
        """The text blocks joined (no separator), as a reader would see the answer."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


_last_calls: tuple[Turn | None, tuple[ToolCallBlock, ...]] = (None, ())
"""The last turn with calls `Turn.tool_calls` read, and its calls (one tuple: read and replaced
whole, so a thread never sees one turn's calls paired with another turn)."""


def text_turn(turn_id: str, role: Role, text: str) -> Turn:
    """A turn holding one text block."""
    return Turn(id=turn_id, role=role, content=(TextBlock(text=text),))


def tool_result(tool_call_id: str, text: str, *, is_error: bool = False) -> ToolResultBlock:
    """A tool_result block holding one text part (no part when `text` is empty)."""
    parts: tuple[TextBlock, ...] = (TextBlock(text=text),) if text else ()
    return ToolResultBlock(tool_call_id=tool_call_id, content=parts, is_error=is_error)


TURN_CODEC: TypeAdapter[Turn] = TypeAdapter(Turn)
"""The one JSON codec for turns (pydantic). `dump_json` → bytes; `validate_json` raises
`pydantic.ValidationError` on malformed input."""

BLOCK_CODEC: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)


def turn_to_json(turn: Turn) -> bytes:
    """Encode a turn as compact JSON bytes (UTF-8): the bytes `TURN_CODEC.dump_json` gives,
    written by orjson straight from the dataclasses (the session writer encodes every turn it
    appends: 3 µs against 6.5 for a 2 KB tool result, 2 against 4 for a tool call). A turn
    orjson refuses (a lone surrogate, an integer beyond 64 bits, a key or value JSON has no
    form for in `arguments`) goes through the codec, which encodes it or raises as before."""
    try:
        return _orjson_dumps(turn)
    except TypeError:  # orjson.JSONEncodeError
        return TURN_CODEC.dump_json(turn)


def turn_to_dict(turn: Turn) -> dict[str, Any]:
    """Encode a turn as a JSON-ready dict."""
    return TURN_CODEC.dump_python(turn, mode="json")


def turn_from_json(data: str | bytes) -> Turn:
    """Decode a turn from JSON. Raises pydantic.ValidationError on malformed input."""
    return TURN_CODEC.validate_json(data)


def turn_from_dict(data: Any) -> Turn:
    """Decode a turn from a JSON-ready dict. Raises pydantic.ValidationError."""
    return TURN_CODEC.validate_python(data)
