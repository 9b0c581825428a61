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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tether.agent.runtime import Runtime
from tether.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    Target,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)
from tether.providers.base import (
    ModelRequest,
    RedactedThinking,
    StopReason,
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


class UnexpectedRequestError(AssertionError):
    """The scripted provider received a request it has no response for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A scripted reply of several blocks."""

    blocks: tuple[ContentBlock, ...]
    stop_reason: StopReason | None = None
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
    stop: StopReason = reply.stop_reason or ("tool_use" if has_call else "end_turn")
    events.append(StreamDone(stop_reason=stop, raw_stop_reason=stop))
    return events


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

    Attributes:
        requests: every request received, in order.

    Raises (from `stream`):
        UnexpectedRequestError: more requests than scripted responses.
    """

    script: Sequence[Response] | Callable[[ModelRequest], Response]
    target: Target = "anthropic"
    model: str = "scripted"
    usage: Usage | None = None
    name: str = "scripted"
    supports_prefill: bool = False
    context_window: int = 200_000
    max_output_tokens: int = 32_000
    requests: list[ModelRequest] = field(default_factory=lambda: [])

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
