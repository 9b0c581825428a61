"""Test doubles for tether and for users' own agents: the scripted provider and a
deterministic runtime.

    from tether import Agent
    from tether.testing import ScriptedProvider, call, deterministic

    provider = ScriptedProvider([call("read", path="notes.txt"), "It says hello."])
    agent = Agent(provider, tools=builtin_tools(), runtime=deterministic())

`ScriptedProvider` replays a list of responses (or calls a function per request), records every
request it received, and fails loudly on a request it has no response for.

Example:
    >>> provider = ScriptedProvider([call("read", path="notes.txt"), "It says hello."])
    >>> # run an Agent with it, then inspect provider.requests

A response is one of:
    str                          a text answer
    ToolCallBlock                one tool call (see `call`)
    Reply(blocks, stop_reason, usage)   several blocks (text, thinking, tool calls) at once
    StreamError                   a provider fault, as the adapters report it
    list[StreamEvent]            raw events, yielded verbatim (for stream-level tests)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, overload

from tether.agent.runtime import Runtime
from tether.messages import (
    ContentBlock,
    ProviderStopReason,
    RedactedThinkingBlock,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    RedactedThinking,
    StreamDone,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageEvent,
)
from tether.providers.catalog import ModelInfo


class UnexpectedRequestError(AssertionError):
    """The scripted provider received a request it has no response for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A scripted reply of several blocks."""

    blocks: tuple[ContentBlock, ...]
    stop_reason: ProviderStopReason | None = None
    usage: Usage | None = None


Response = str | ToolCallBlock | Reply | StreamError | list[StreamEvent]


def call(name: str, /, *, id: str | None = None, **arguments: Any) -> ToolCallBlock:
    """A scripted tool call. `id=None` makes the stream carry no id (the assembler mints one)."""
    return ToolCallBlock(id=id or "", name=name, arguments=arguments)


def events_for(response: Response, usage: Usage | None = None) -> list[StreamEvent]:
    """The stream events a provider would send for `response`."""
    if isinstance(response, list):
        return response
    if isinstance(response, StreamError):
        return [response]
    if isinstance(response, str):
        reply = Reply(blocks=(TextBlock(text=response),))
    elif isinstance(response, ToolCallBlock):
        reply = Reply(blocks=(response,))
    else:
        reply = response
    events: list[StreamEvent] = []
    has_call = False
    for i, block in enumerate(reply.blocks):
        if isinstance(block, TextBlock):
            events += [TextStart(index=i), TextDelta(index=i, text=block.text), TextEnd(index=i)]
        elif isinstance(block, ThinkingBlock):
            events += [
                ThinkingStart(index=i, producer=block.producer, item_id=block.item_id),
                ThinkingDelta(index=i, text=block.text),
                ThinkingEnd(
                    index=i,
                    signature=block.signature,
                    encrypted_content=block.encrypted_content,
                    summary=block.summary,
                ),
            ]
        elif isinstance(block, RedactedThinkingBlock):
            events.append(RedactedThinking(index=i, data=block.data))
        elif isinstance(block, ToolCallBlock):
            has_call = True
            events += [
                ToolCallStart(
                    index=i, id=block.id or None, name=block.name, provider_meta=block.provider_meta
                ),
                ToolCallDelta(
                    index=i,
                    arguments_delta=block.raw_arguments
                    if block.raw_arguments is not None
                    else json.dumps(block.arguments),
                ),
                ToolCallEnd(index=i),
            ]
    final_usage = reply.usage or usage
    if final_usage is not None:
        events.append(UsageEvent(usage=final_usage))
    stop: ProviderStopReason = reply.stop_reason or ("tool_use" if has_call else "end_turn")
    events.append(StreamDone(stop_reason=stop, raw_stop_reason=stop))
    return events


_REQUEST_FIELDS = tuple(f.name for f in fields(ModelRequest) if f.init and f.name != "messages")


def _without_messages(request: ModelRequest) -> ModelRequest:
    """`replace(request, messages=())`, in half its time (`replace` walks the fields' specs on
    every call; a request is logged per turn)."""
    return ModelRequest(messages=(), **{n: getattr(request, n) for n in _REQUEST_FIELDS})


class RequestLog(Sequence[ModelRequest]):
    """The requests a `ScriptedProvider` received, stored compactly: a request whose messages
    extend the previous request's (the agent loop's requests do, between compactions) stores
    only its new turns, so a long run keeps O(turns) memory, not O(turns²). Reads give the
    requests back as received (equal fields and messages)."""

    def __init__(self, requests: Sequence[ModelRequest] = ()) -> None:
        self._spine: list[Turn] = []
        self._items: list[tuple[ModelRequest, int, int]] = []  # (request sans messages, start, n)
        self._last: tuple[Turn, ...] = ()  # the last request's messages (== its spine run)
        for r in requests:
            self.append(r)

    def append(self, request: ModelRequest) -> None:
        """Record one request. Its messages are compared with the last request's tuple (by
        identity first, at C speed), not with a copy of the spine."""
        m, spine = request.messages, self._spine
        start = len(spine)
        if self._items:
            _, s, n = self._items[-1]
            if s + n == len(spine) and len(m) >= n and m[:n] == self._last:
                start = s
                m = m[n:]
        spine.extend(m)
        self._last = request.messages
        self._items.append((_without_messages(request), start, len(spine) - start))

    def clear(self) -> None:
        """Forget every request."""
        self._spine.clear()
        self._items.clear()
        self._last = ()

    def _get(self, i: int) -> ModelRequest:
        request, s, n = self._items[i]
        return replace(request, messages=tuple(self._spine[s : s + n]))

    @overload
    def __getitem__(self, index: int) -> ModelRequest: ...
    @overload
    def __getitem__(self, index: slice) -> list[ModelRequest]: ...
    def __getitem__(self, index: int | slice) -> ModelRequest | list[ModelRequest]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(len(self._items))[index]]
        return self._get(index)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[ModelRequest]:
        return (self._get(i) for i in range(len(self._items)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RequestLog | list | tuple):
            return list(self) == list(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RequestLog({list(self)!r})"


@dataclass
class ScriptedProvider:
    """A provider that replays scripted responses.

    Args:
        script: a sequence of responses (one per request, in order) or a function
            `(request) -> Response`.
        target: the wire target the loop builds views for (default `anthropic`, the strictest).
        model: the model name reported in provenance.
        usage: usage reported with every reply that has none of its own; None for none.
        context_window: the window it reports (tokens; an agent's compaction reads it).
        max_output_tokens: the output cap it reports (tokens).
        image_input: whether its model takes images (`ModelInfo.image_input`; None: unknown).

    Attributes:
        requests: every request received, in order (a `RequestLog`: list-like, compact).

    Raises (from `stream`):
        UnexpectedRequestError: more requests than scripted responses.

    After a run, `assert_consumed()` checks that no scripted response was left unused.
    """

    script: Sequence[Response] | Callable[[ModelRequest], Response]
    target: Target = "anthropic"
    model: str = "scripted"
    usage: Usage | None = None
    name: str = "scripted"
    supports_prefill: bool = False
    context_window: int = 200_000
    max_output_tokens: int = 32_000
    image_input: bool | None = None
    requests: RequestLog = field(default_factory=RequestLog)
    _info: tuple[tuple[int, int, bool, bool | None], ModelInfo] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def info(self) -> ModelInfo:
        """Its window, output cap and prefill as it reports them (source `provider`); built
        again only when one of them changed (the request path asks twice per request)."""
        key = (self.context_window, self.max_output_tokens, self.supports_prefill, self.image_input)
        kept = self._info
        if kept is None or kept[0] != key:
            info = ModelInfo(
                context_window=self.context_window,
                max_output_tokens=self.max_output_tokens,
                supports_prefill=self.supports_prefill,
                source="provider",
                image_input=self.image_input,
            )
            kept = self._info = (key, info)
        return kept[1]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Record `request` and yield the events of the next scripted response."""
        self.requests.append(request)
        script = self.script
        if callable(script):
            response = script(request)
        else:
            n = len(self.requests)
            if n > len(script):
                raise UnexpectedRequestError(
                    f"scripted provider got request #{n} but has only {len(script)} responses"
                )
            response = script[n - 1]
        for event in events_for(response, self.usage):
            yield event

    @property
    def remaining(self) -> int:
        """Scripted responses not yet used (0 for a function script)."""
        return 0 if callable(self.script) else len(self.script) - len(self.requests)

    def assert_consumed(self) -> None:
        """Check that every scripted response was asked for (a function script always is).

        Raises:
            AssertionError: responses were left unused; the message counts them and shows the
                first one left (a run that stopped early, or a script longer than the test
                meant).
        """
        left = self.remaining
        if left > 0:
            assert not callable(self.script)
            first = self.script[len(self.requests)]
            raise AssertionError(
                f"scripted provider used {len(self.requests)} of {len(self.script)} responses; "
                f"{left} left unused, the next being {first!r}"
            )


def deterministic(
    *,
    env: Mapping[str, str] | None = None,
    id_prefix: str = "t",
    jitter: float = 0.5,
    sleeps: list[float] | None = None,
) -> Runtime:
    """A `Runtime` for reproducible tests: turn ids `<id_prefix>-1`, `-2`, ...; retry waits
    return at once (each wait, in seconds, appended to `sleeps` when given); retry jitter
    fixed at `jitter`; tool subprocesses start from `env` (None: this process's).

    Usage: `Agent(provider, runtime=deterministic())`.
    """
    counter = itertools.count(1)

    async def sleep(delay_s: float) -> None:
        if sleeps is not None:
            sleeps.append(delay_s)

    return Runtime(
        env=env,
        sleep=sleep,
        rng=lambda: jitter,
        new_id=lambda: f"{id_prefix}-{next(counter)}",
    )
