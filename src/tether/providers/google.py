"""Google Gemini adapter (target `google`), over the official `google-genai` SDK.

Owns: converting a wire view into `generate_content_stream` contents/config, and translating the
streamed `GenerateContentResponse` chunks into tether's normalized `StreamEvent`s.
Does not own: transport and SSE decoding (`google.genai.Client(...).aio.models.
generate_content_stream`), the wire passes (`tether.wire`: Gemini signatures are replayed only
to the route that issued them), assembly (which also mints the ids Gemini does not send), or
fault classification (`tether.providers.errors`).

Request building: `tether.providers.google_request`.

Chunks → events (each chunk carries whole parts; text parts continue one another):
    text part                 TextStart/TextDelta (consecutive text parts form one block)
    text part, thought: true  ThinkingStart(producer "google")/ThinkingDelta; a signature on it
                              → ThinkingEnd(signature)
    thoughtSignature on a non-thought text part (Gemini 2.5/3 put it on the first answer part,
        or on a trailing empty text part): a signature-only thinking block (empty text) at the
        position of that part. Replayed (Gemini "Thought signatures" guide: return every
        signature in the part it came with) on the text part that follows it, or the one before
        it when it was trailing.
    functionCall{name, args}  ToolCallStart(id or None → minted)/ToolCallDelta(whole args)/
                              ToolCallEnd; its thoughtSignature → provider_meta
                              {"thought_signature": <base64>}
    functionCall{name, willContinue} then functionCall{partialArgs[{jsonPath, stringValue|
        numberValue|boolValue|nullValue, willContinue}], willContinue} ... then a functionCall
        without willContinue (Vertex streamed arguments): the arguments are built from the
        paths (string values concatenate) and sent whole when the call ends.
    finishReason              STOP → end_turn (tool_use when calls were made), MAX_TOKENS →
                              max_tokens, SAFETY/RECITATION/... → refusal, else other
    usageMetadata             cumulative; promptTokenCount includes cachedContentTokenCount
                              (subtracted from input), output = candidates + thoughts tokens
A stream without a finishReason is incomplete: `StreamError(kind="network")`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, cast

from google import genai
from google.genai import types as gt

from tether.effort import gemini_budget
from tether.errors import AuthError
from tether.messages import Provenance, ProviderStopReason, Target, Usage
from tether.providers.base import (
    ModelRequest,
    StreamDone,
    StreamEvent,
    UsageEvent,
    wire_messages,
)
from tether.providers.catalog import ModelInfo, catalog_info
from tether.providers.google_request import (
    SIGNATURE_KEY,
    encode_signature,
    is_thinking_model,
    to_gemini_contents,
    to_gemini_tools,
)
from tether.providers.streaming import TEXT, THINKING, BlockCursor, drive_stream, incomplete

PRODUCER = "google"
_STOP_REASONS: dict[str, ProviderStopReason] = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
}


def normalize_usage(meta: gt.GenerateContentResponseUsageMetadata) -> Usage:
    """Gemini usage → tether `Usage`: `promptTokenCount` includes `cachedContentTokenCount`
    (subtracted from input); thinking tokens (`thoughtsTokenCount`) count as output."""
    cached = meta.cached_content_token_count or 0
    return Usage(
        input_tokens=max(0, (meta.prompt_token_count or 0) - cached),
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_tokens=cached,
    )


# ---------------------------------------------------------------------------------------------
# Stream translation

_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


def set_json_path(target: dict[str, Any], path: str, value: object, *, append: bool) -> None:
    """Set `value` at a `$.a.b[0]` path inside `target`, creating objects/lists on the way;
    with `append`, a string value is appended to the string already there.

    Raises:
        ValueError: a path that is not `$` followed by `.key`, `[n]` or `['key']` steps.
    """
    if not path.startswith("$"):
        raise ValueError(f"not a JSON path: {path!r}")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if m is None:
            raise ValueError(f"unsupported JSON path: {path!r}")
        key, index, quoted = m.groups()
        steps.append(int(index) if index is not None else (key if key is not None else quoted))
        pos = m.end()
    if not steps:
        raise ValueError(f"JSON path names no member: {path!r}")
    node: Any = target
    for step, nxt in zip(steps, [*steps[1:], None], strict=True):
        container: Any = [] if isinstance(nxt, int) else {}
        if isinstance(step, int):
            while len(node) <= step:
                node.append(None)
            if nxt is None:
                break
            if node[step] is None:
                node[step] = container
            node = node[step]
        else:
            if nxt is None:
                break
            node = node.setdefault(step, container)
    last = steps[-1]
    current: Any = node[last] if isinstance(last, int) else node.get(last)
    if append and isinstance(value, str) and isinstance(current, str):
        value = current + value
    node[last] = value


def _partial_value(arg: gt.PartialArg) -> object:
    if arg.string_value is not None:
        return arg.string_value
    if arg.number_value is not None:
        n = arg.number_value
        return int(n) if n.is_integer() else n
    if arg.bool_value is not None:
        return arg.bool_value
    return None


CALL = "call"
"""The cursor key of a call whose arguments stream (Vertex `partialArgs`)."""


@dataclass(slots=True)
class GeminiStreamTranslator:
    """Translates `GenerateContentResponse` chunks (candidate 0) into normalized events.

    At most one block is open at a time: the text (`TEXT`), the thinking (`THINKING`) or a
    call whose arguments stream (`CALL`, its arguments gathered in `_args`)."""

    _blocks: BlockCursor = field(default_factory=BlockCursor)
    _args: dict[str, Any] | None = None
    _calls: int = 0
    _finish: str | None = None
    _usage: Usage | None = None

    def _close_call(self) -> Iterator[StreamEvent]:
        args = self._args
        if args is not None:
            self._args = None
            yield from self._blocks.close(CALL, arguments=json.dumps(args))

    def _close_all(self) -> Iterator[StreamEvent]:
        yield from self._close_call()
        yield from self._blocks.finish()

    def _gather(self, fc: gt.FunctionCall) -> None:
        assert self._args is not None
        for arg in fc.partial_args or ():
            if arg.json_path:
                set_json_path(self._args, arg.json_path, _partial_value(arg), append=True)

    def _function_call(self, fc: gt.FunctionCall, sig: str | None) -> Iterator[StreamEvent]:
        if self._args is not None and not fc.name:
            # A continuation of a call whose arguments stream (Vertex `partialArgs`).
            self._gather(fc)
            if not fc.will_continue:
                yield from self._close_call()
            return
        yield from self._close_all()
        self._calls += 1
        meta = {SIGNATURE_KEY: sig} if sig else None
        if fc.will_continue and fc.args is None:
            yield self._blocks.open_call(CALL, id=fc.id or None, name=fc.name or "", meta=meta)
            self._args = {}
            self._gather(fc)
            return
        yield from self._blocks.whole_call(
            id=fc.id or None, name=fc.name or "", arguments=json.dumps(fc.args or {}), meta=meta
        )

    def _part(self, part: gt.Part) -> Iterator[StreamEvent]:
        blocks = self._blocks
        sig = encode_signature(part.thought_signature) if part.thought_signature else None
        if part.function_call is not None:
            yield from self._function_call(part.function_call, sig)
            return
        if part.text is None:
            return  # inline data, executable code, ...: not produced by tether's requests
        if part.thought:
            yield from blocks.close(TEXT)
            yield from self._close_call()
            thinking = blocks.get(THINKING)
            if thinking is None or (sig and thinking.signature):
                yield from blocks.close(THINKING)
                yield blocks.open_thinking(producer=PRODUCER)
            yield from blocks.thinking(part.text)
            if sig:
                blocks.sign(THINKING, sig)
            return
        yield from blocks.close(THINKING)
        yield from self._close_call()
        if sig:
            if part.text:
                yield from blocks.close(TEXT)
            yield from blocks.whole_thinking("", producer=PRODUCER, signature=sig)
        if part.text:
            yield from blocks.text(part.text)

    def on_item(self, chunk: gt.GenerateContentResponse) -> Iterator[StreamEvent]:
        """Events for one streamed chunk."""
        candidates = chunk.candidates or []
        cand = candidates[0] if candidates else None
        if cand is not None and cand.content is not None:
            for part in cand.content.parts or ():
                yield from self._part(part)
        if chunk.usage_metadata is not None:
            usage = normalize_usage(chunk.usage_metadata)
            if usage != self._usage:
                self._usage = usage
                yield UsageEvent(usage=usage)
        if cand is not None and cand.finish_reason is not None:
            self._finish = str(cand.finish_reason.value)
        elif not candidates and chunk.prompt_feedback is not None:
            reason = chunk.prompt_feedback.block_reason
            if reason is not None:
                self._finish = "SAFETY"
        if self._finish is not None:
            yield from self._close_all()  # the blocks end with the candidate

    def finish(self) -> StreamEvent:
        """`StreamDone` once a finishReason arrived, else a network `StreamError` (incomplete)."""
        if self._finish is None:
            return incomplete("finishReason")
        stop = _STOP_REASONS.get(self._finish, "other")
        if stop == "end_turn" and self._calls:
            stop = "tool_use"
        return StreamDone(stop_reason=stop, raw_stop_reason=self._finish)


def _env_key() -> str | None:
    return os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or None


class GoogleProvider:
    """The Gemini API (`google-genai`).

    Args:
        model: the default model name (a request's `model` wins), e.g. `gemini-2.5-flash`.
        api_key: the API key; defaults to `GEMINI_API_KEY`, then `GOOGLE_API_KEY`.
        base_url: another endpoint speaking the Gemini API (a proxy, a gateway).
        client: a ready `genai.Client` (tests pass one whose `http_options.httpx_async_client`
            has a mocked transport).
        thinking_budget: `thinkingConfig.thinkingBudget` in tokens when the request sets none,
            or None for the model's default.
        include_thoughts: the model thinks: ask for thought summaries
            (`thinkingConfig.includeThoughts`) and send the thinking budget; None guesses from
            the model name (`is_thinking_model`). False sends no `thinkingConfig` at all.
        name: the provider name recorded in provenance.

    Raises:
        AuthError: no API key (argument or environment) and no `client`.
    """

    target: Target = "google"
    info: ModelInfo
    """The catalog's entry for `model` (no prefill)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: genai.Client | None = None,
        thinking_budget: int | None = None,
        include_thoughts: bool | None = None,
        name: str = "google",
    ) -> None:
        self.name = name
        self.model = model
        self.info = catalog_info(model)
        self.thinking_budget = thinking_budget
        self.include_thoughts = include_thoughts
        self._route = Provenance(provider=name, api="google", model=model)
        if client is None and not base_url:  # Google's own endpoint
            self.info = replace(self.info, vendor_endpoint=True)
        if client is None:
            key = api_key or _env_key()
            if not key:
                raise AuthError("no Gemini API key: pass api_key or set GEMINI_API_KEY")
            options = gt.HttpOptions(base_url=base_url) if base_url else None
            client = genai.Client(api_key=key, http_options=options)
        self._client = client

    def request_config(
        self, request: ModelRequest
    ) -> tuple[list[gt.Content], gt.GenerateContentConfig]:
        """The `contents` and `config` of `generate_content_stream` for `request`."""
        model = request.model or self.model
        view = wire_messages(
            request, "google", route=self._route, vendor_endpoint=self.info.vendor_endpoint
        )
        contents, extra_system = to_gemini_contents(view)
        system = "\n\n".join([s for s in (request.system, *extra_system) if s])
        budget = request.thinking_budget_tokens
        if budget is None:
            budget = self.thinking_budget
        thoughts = self.include_thoughts
        if thoughts is None:
            thoughts = is_thinking_model(model)
        if request.effort is not None and thoughts:  # the effort wins
            budget = gemini_budget(request.effort)
        # Models that do not think reject `thinkingConfig`: a budget is sent only to those that do.
        thinking = (
            gt.ThinkingConfig(include_thoughts=True, thinking_budget=budget) if thoughts else None
        )
        config = gt.GenerateContentConfig(
            system_instruction=system or None,
            tools=cast(Any, to_gemini_tools(request.tools)) or None,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
            thinking_config=thinking,
            automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
        )
        return contents, config

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one request; yields events, then exactly one `StreamDone` or `StreamError`.

        Provider faults (HTTP errors, an error object inside the stream) are yielded as a
        classified `StreamError`; cancellation propagates.
        """
        contents, config = self.request_config(request)
        models = self._client.aio.models
        model = request.model or self.model

        async def open_stream() -> AsyncIterator[gt.GenerateContentResponse]:
            return await models.generate_content_stream(  # pyright: ignore[reportUnknownMemberType]
                model=model, contents=cast(Any, contents), config=config
            )

        async for event in drive_stream(
            open_stream, GeminiStreamTranslator(), idle_s=request.stream_idle_timeout_s
        ):
            yield event
