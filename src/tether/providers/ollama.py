"""Ollama adapter (target `ollama`): the native `/api/chat` endpoint via the `ollama` client.

Owns: converting a wire view into an `/api/chat` streaming request, translating its NDJSON
`ChatResponse` frames into tether's normalized `StreamEvent`s, and detecting silent prompt
truncation.
Does not own: transport and NDJSON decoding (`ollama.AsyncClient.chat(stream=True)`), the wire
passes, assembly (which mints the tool-call ids Ollama never sends), or fault classification.

Request conversion: `tether.providers.ollama_request`.
Frames → events: `message.thinking` → thinking block (producer "ollama"), `message.content` →
text, each `message.tool_calls[*]` → one complete call (Ollama sends whole calls, no ids: the
assembler mints `<turn id>_call<k>`), the `done: true` frame → usage (`prompt_eval_count` in,
`eval_count` out) and `StreamDone(done_reason)`. No `done: true` frame: a network error.

Silent truncation: Ollama cuts a prompt longer than `num_ctx` without an error (it keeps the
end). It is treated as what it is, a context overflow, so the loop compacts and retries (or
stops with `context_overflow`); the reply is never kept and its token count never trusted:
    * before sending: when tether's estimate of the request (ceil(chars / 4) over message
      texts, thinking, call arguments, system prompt and tool schemas) exceeds `num_ctx`, an
      `StreamError(kind="context_overflow")` is the whole stream (nothing is sent);
    * after the `done` frame: when the reported prompt (`prompt_eval_count`) reaches
      `FULL_WINDOW_RATIO` of `num_ctx` (the prompt was cut to the window, or filled it so that
      no room was left for the reply), or when it is far below the estimate of what was sent
      (below `TRUNCATION_RATIO` of it and at least `TRUNCATION_MIN_TOKENS` short: 16,387 of
      160,689, or 30,000 of 40,000; the window Ollama really allocated was smaller than
      `num_ctx`, e.g. the model's own limit or `OLLAMA_CONTEXT_LENGTH`), the stream ends with
      that error instead of `StreamDone`. The count includes the tokens served from Ollama's
      prompt cache (its runner reports cached + evaluated, ollama/ollama#16428), so a cache hit
      is not a cut. The reply and its count are dropped: the loop never calibrates its
      estimate or measures its pressure from a truncated count.

`num_ctx` is the window the run is configured with (`--context-window`, `context.windows`):
`tether run` sets it from the resolved limits; `info` reports it back, so the
compaction monitor measures against the window Ollama really allocates.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import ollama

from tether.effort import ollama_think
from tether.messages import (
    Provenance,
    ProviderStopReason,
    Target,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    StreamDone,
    StreamError,
    StreamEvent,
    UsageEvent,
    wire_messages,
)
from tether.providers.catalog import ModelInfo, lookup, reasons
from tether.providers.login import LoginIO
from tether.providers.ollama_request import (
    estimate_prompt_tokens,
    to_ollama_messages,
    to_ollama_tools,
)
from tether.providers.streaming import TEXT, THINKING, BlockCursor, drive_stream, incomplete

PRODUCER = "ollama"
DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_NUM_CTX = 8192
"""`options.num_ctx` when none is given. Ollama's own default is small (2048-4096 tokens,
depending on version) and it truncates silently beyond it, so tether always sends one."""
TRUNCATION_RATIO = 0.8
"""A reported prompt below this share of the estimate of what was sent was cut (the estimate,
ceil(chars / 4), is within a few tenths of real counts for text and code)."""
TRUNCATION_MIN_TOKENS = 1_024
"""... and at least this many tokens short of it (for small prompts the chat template's own
tokens and the estimate's error are of that order)."""
FULL_WINDOW_RATIO = 0.98
"""A reported prompt of at least this share of `num_ctx` filled the window: it was cut."""

_STOP_REASONS: dict[str, ProviderStopReason] = {"stop": "end_turn", "length": "max_tokens"}


def overflow_message(estimate: int, num_ctx: int, reported: int | None = None) -> str:
    """The context_overflow message for a request that does not fit `num_ctx`."""
    seen = f"; Ollama evaluated only {reported}" if reported is not None else ""
    return (
        f"prompt is too long: the request holds about {estimate} tokens but Ollama's num_ctx "
        f"is {num_ctx}{seen} (Ollama cuts such prompts silently)"
    )


def truncation_message(estimate: int, num_ctx: int, reported: int) -> str:
    """The context_overflow message for a prompt Ollama cut below `num_ctx`."""
    return (
        f"prompt is too long: Ollama evaluated only {reported} of the about {estimate} prompt "
        f"tokens sent (num_ctx {num_ctx}): it cut the prompt silently, so its real window is "
        "smaller (the model's own limit, or OLLAMA_CONTEXT_LENGTH)"
    )


# ---------------------------------------------------------------------------------------------
# Stream translation


@dataclass(slots=True)
class OllamaStreamTranslator:
    """Translates `/api/chat` NDJSON frames into normalized events.

    Args:
        estimated_prompt_tokens: the request's local estimate (`estimate_prompt_tokens`).
        num_ctx: the `options.num_ctx` sent.
    """

    estimated_prompt_tokens: int
    num_ctx: int
    _blocks: BlockCursor = field(default_factory=BlockCursor)
    _calls: int = 0
    _done: str | None = None
    _overflow: str | None = None

    def overflow(self, reported: int | None) -> str | None:
        """The context_overflow message when the reported prompt shows it was cut (it filled
        `FULL_WINDOW_RATIO` of `num_ctx`, or fell far below the estimate: module docstring),
        else None."""
        if reported is None:
            return None
        if reported >= self.num_ctx * FULL_WINDOW_RATIO:
            return overflow_message(self.estimated_prompt_tokens, self.num_ctx, reported)
        estimate = self.estimated_prompt_tokens
        if reported < estimate * TRUNCATION_RATIO and estimate - reported >= TRUNCATION_MIN_TOKENS:
            return truncation_message(estimate, self.num_ctx, reported)
        return None

    def on_item(self, frame: ollama.ChatResponse) -> Iterator[StreamEvent]:
        """Events for one NDJSON frame."""
        msg, blocks = frame.message, self._blocks
        if msg.thinking:
            if not blocks.is_open(THINKING):
                yield from blocks.finish()
            yield from blocks.thinking(msg.thinking, producer=PRODUCER)
        if msg.content:
            if not blocks.is_open(TEXT):
                yield from blocks.finish()
            yield from blocks.text(msg.content)
        for call in msg.tool_calls or ():
            yield from blocks.finish()
            self._calls += 1
            arguments = json.dumps(dict(call.function.arguments))
            yield from blocks.whole_call(id=None, name=call.function.name, arguments=arguments)
        if frame.done:
            yield from blocks.finish()
            self._done = frame.done_reason or "stop"
            prompt = frame.prompt_eval_count
            self._overflow = self.overflow(prompt)
            if self._overflow is not None:
                return  # the reply is dropped and its usage not trusted
            yield UsageEvent(
                usage=Usage(input_tokens=prompt or 0, output_tokens=frame.eval_count or 0)
            )

    def finish(self) -> StreamEvent:
        """`StreamDone` after the `done: true` frame, else a network `StreamError` (incomplete)."""
        if self._done is None:
            return incomplete("done frame")
        if self._overflow is not None:
            return StreamError(kind="context_overflow", message=self._overflow)
        stop = _STOP_REASONS.get(self._done, "other")
        if stop == "end_turn" and self._calls:
            stop = "tool_use"
        return StreamDone(stop_reason=stop, raw_stop_reason=self._done)


class OllamaProvider:
    """A local Ollama server's native API (no key).

    Args:
        model: the default model name (a request's `model` wins), e.g. `qwen3`.
        base_url: the server, e.g. `http://127.0.0.1:11434`; defaults to `OLLAMA_HOST`, then
            `DEFAULT_HOST`.
        client: a ready `ollama.AsyncClient` (tests pass one with a mocked httpx transport).
        num_ctx: `options.num_ctx`, the context window Ollama allocates, in tokens (always sent).
        think: `think` (reasoning models: True/False); None leaves the server default.
        name: the provider name recorded in provenance.
    """

    target: Target = "ollama"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        client: ollama.AsyncClient | None = None,
        num_ctx: int = DEFAULT_NUM_CTX,
        think: bool | None = None,
        name: str = "ollama",
    ) -> None:
        self.name = name
        self.model = model
        self.num_ctx = num_ctx
        self.think = think
        self.host = base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        self._route = Provenance(provider=name, api="ollama", model=model)
        self._client = client or ollama.AsyncClient(host=self.host)

    @staticmethod
    def login(name: str, io: LoginIO) -> None:
        """No login (the seed's no-auth procedure): nothing is stored. A local server takes no
        key; one that does (ollama.com) gets `OLLAMA_API_KEY` from the environment, which the
        `ollama` client reads itself."""
        io.say(
            f"{name}: no login needed: a local Ollama server takes no key (for one that does, "
            f"set OLLAMA_API_KEY: the Ollama client sends it); nothing stored"
        )

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `AsyncClient.chat` for `request` (without `stream`)."""
        view = wire_messages(request, "ollama", route=self._route)
        options: dict[str, Any] = {"num_ctx": self.num_ctx}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            options["num_predict"] = request.max_output_tokens
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_ollama_messages(view, request.system),
            "options": options,
        }
        tools = to_ollama_tools(request.tools)
        if tools:
            params["tools"] = tools
        if self.think is not None:
            params["think"] = self.think
        model = str(params["model"])
        if request.effort is not None and reasons(model):  # the effort wins
            params["think"] = ollama_think(request.effort, model)
        return params

    @property
    def info(self) -> ModelInfo:
        """The window Ollama allocates for this provider's requests (`num_ctx`, in tokens; a
        quarter of it as the output cap), reported as the provider's own figure; the server
        allocates it per request (`allocates_window`); whether the model takes images comes
        from the catalog (unknown for a model it does not list)."""
        known = lookup(self.model)
        return ModelInfo(
            context_window=self.num_ctx,
            max_output_tokens=max(self.num_ctx // 4, 1),
            allocates_window=True,
            source="provider",
            image_input=known.image_input if known is not None else None,
        )

    def use_context_window(self, tokens: int) -> None:
        """Send `num_ctx = tokens` from now on (the run's configured window).

        Raises:
            ValueError: `tokens` below 1.
        """
        if tokens < 1:
            raise ValueError(f"num_ctx must be at least 1, got {tokens}")
        self.num_ctx = tokens

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one request; yields events, then exactly one `StreamDone` or `StreamError`
        (`context_overflow` when the request cannot fit `num_ctx` or Ollama cut it).
        Cancellation propagates."""
        params = self.request_params(request)
        estimate = estimate_prompt_tokens(params["messages"], params.get("tools") or [])
        client = self._client

        async def open_stream() -> AsyncIterator[ollama.ChatResponse]:
            return await client.chat(stream=True, **cast(Any, params))  # pyright: ignore[reportUnknownMemberType]

        if estimate > self.num_ctx:
            yield StreamError(kind="context_overflow", message=overflow_message(estimate, self.num_ctx))
            return
        translator = OllamaStreamTranslator(estimated_prompt_tokens=estimate, num_ctx=self.num_ctx)
        async for event in drive_stream(
            open_stream, translator, idle_s=request.stream_idle_timeout_s
        ):
            yield event
