"""Assemble a stream of normalized events into one assistant turn.

Owns: block ordering by stream `index`, strict parsing of tool-call arguments when a call ends,
minting missing tool-call ids, and the partial turn an interrupted stream leaves.
Does not own: re-minting ids that collide with the session's earlier ids (the loop does that at
persist time, see `tether.wire.ids`), nor deciding what to do with a failed stream.

Rule (case T30): partial argument parsing is never used to finalize a call. At the end of a call
its argument text must be a JSON object under `json.loads`; otherwise the call is kept with
`invalid` set and is never executed. A call that never received its end event (stream cut,
`max_tokens`) is invalid too, and so is a call that is the last block of a `max_tokens` stop —
except in the partial turn of an interrupted stream (no terminal event: the run was cancelled),
where a call whose whole argument object had arrived keeps its arguments (it is not run: the
interrupted turn's calls are answered with `interrupted` results).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from tether.messages import (
    ContentBlock,
    Provenance,
    RedactedThinkingBlock,
    ServerToolBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    Usage,
)
from tether.providers.base import (
    EnvNotice,
    RedactedThinking,
    ServerToolUse,
    StreamDone,
    StreamError,
    StreamEvent,
    StreamWarning,
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

TRUNCATED = "the arguments were truncated before the call was complete"


@dataclass(slots=True)
class _Text:
    parts: list[str]


@dataclass(slots=True)
class _Thinking:
    parts: list[str]
    producer: str | None
    item_id: str | None
    signature: str | None = None
    encrypted_content: str | None = None
    summary: tuple[str, ...] = ()


@dataclass(slots=True)
class _Call:
    id: str | None
    name: str
    parts: list[str]
    provider_meta: dict[str, Any] | None
    ended: bool = False


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call argument text strictly.

    Returns:
        (arguments, None) when `text` is a JSON object (an empty string counts as `{}`, as sent
        by providers for a no-argument call); ({}, reason) otherwise.
    """
    if not text.strip():
        return {}, None
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"the arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, got {type(value).__name__}"
    args = cast(dict[str, Any], value)
    return args, None


class Assembler:
    """Feeds on `StreamEvent`s; builds the assistant turn.

    Args:
        turn_id: the id the assembled turn gets; minted call ids derive from it
            (`<turn_id>_call<k>`), so assembly is deterministic.
        provenance: provider/api/model recorded on the turn.
    """

    def __init__(self, turn_id: str, provenance: Provenance | None = None) -> None:
        self.turn_id = turn_id
        self.provenance = provenance
        self._blocks: dict[
            int, _Text | _Thinking | _Call | RedactedThinkingBlock | ServerToolBlock
        ] = {}
        self.usage: Usage | None = None
        self.done: StreamDone | None = None
        self.error: StreamError | None = None
        self.warnings: list[StreamWarning] = []

    @property
    def finished(self) -> bool:
        """True once the terminal event (StreamDone or StreamError) arrived."""
        return self.done is not None or self.error is not None

    def feed(self, event: StreamEvent) -> None:
        """Apply one event. Events after the terminal one are ignored."""
        if self.finished:
            return
        blocks = self._blocks
        match event:
            case TextStart(index=i):
                blocks.setdefault(i, _Text([]))
            case TextDelta(index=i, text=t):
                b = blocks.setdefault(i, _Text([]))
                if isinstance(b, _Text):
                    b.parts.append(t)
            case TextEnd():
                pass
            case ThinkingStart(index=i, producer=p, item_id=item):
                blocks.setdefault(i, _Thinking([], p, item))
            case ThinkingDelta(index=i, text=t):
                b = blocks.setdefault(i, _Thinking([], None, None))
                if isinstance(b, _Thinking):
                    b.parts.append(t)
            case ThinkingEnd(index=i):
                b = blocks.setdefault(i, _Thinking([], None, None))
                if isinstance(b, _Thinking):
                    b.signature = event.signature or b.signature
                    b.encrypted_content = event.encrypted_content or b.encrypted_content
                    b.summary = event.summary or b.summary
            case RedactedThinking(index=i, data=d):
                blocks[i] = RedactedThinkingBlock(data=d)
            case ServerToolUse(index=i, block=b):
                blocks[i] = b
            case ToolCallStart(index=i):
                existing = blocks.get(i)
                if isinstance(existing, _Call):
                    existing.id = existing.id or event.id
                    existing.name = existing.name or event.name
                else:
                    blocks[i] = _Call(event.id, event.name, [], event.provider_meta)
            case ToolCallDelta(index=i, arguments_delta=d):
                b = blocks.setdefault(i, _Call(None, "", [], None))
                if isinstance(b, _Call):
                    b.parts.append(d)
            case ToolCallEnd(index=i):
                b = blocks.get(i)
                if isinstance(b, _Call):
                    b.ended = True
            case UsageEvent(usage=u):
                self.usage = u
            case StreamWarning():
                self.warnings.append(event)
            case EnvNotice():
                pass  # the environment's, not the reply's (the loop emits it as an `env` event)
            case StreamDone():
                self.done = event
            case StreamError():
                self.error = event

    def turn(self, *, stop_reason: StopReason | None = None) -> Turn:
        """The assistant turn built so far.

        Args:
            stop_reason: overrides the stop reason (e.g. `interrupted` for a partial turn);
                defaults to the StreamDone event's, or `error`/`interrupted` when there is none.
        """
        content: list[ContentBlock] = []
        k = 0
        # A call that is the last block of a `max_tokens` stop was cut, whatever its text parses to.
        cut_last = self.done is not None and self.done.stop_reason == "max_tokens"
        last = list(self._blocks.values())[-1] if self._blocks else None
        for b in self._blocks.values():
            if isinstance(b, _Text):
                text = "".join(b.parts)
                if text:
                    content.append(TextBlock(text=text))
            elif isinstance(b, _Thinking):
                content.append(
                    ThinkingBlock(
                        text="".join(b.parts),
                        signature=b.signature,
                        producer=b.producer,
                        model=self.provenance.model if self.provenance else None,
                        item_id=b.item_id,
                        encrypted_content=b.encrypted_content,
                        summary=b.summary,
                    )
                )
            elif isinstance(b, _Call):
                k += 1
                raw = "".join(b.parts)
                if b.ended and not (cut_last and b is last):
                    args, invalid = parse_arguments(raw)
                elif self.done is None and raw.strip():
                    # Interrupted (no terminal event) after its whole argument object arrived:
                    # keep it; anything that does not parse as an object stays truncated.
                    args, invalid = parse_arguments(raw)
                    if invalid is not None:
                        args, invalid = {}, TRUNCATED
                else:
                    args, invalid = {}, TRUNCATED
                content.append(
                    ToolCallBlock(
                        id=b.id or f"{self.turn_id}_call{k}",
                        name=b.name,
                        arguments=args,
                        raw_arguments=raw if invalid else None,
                        invalid=invalid,
                        provider_meta=b.provider_meta,
                    )
                )
            else:
                content.append(b)
        if stop_reason is None:
            if self.done is not None:
                stop_reason = self.done.stop_reason
            else:
                stop_reason = "error" if self.error is not None else "interrupted"
        return Turn(
            id=self.turn_id,
            role="assistant",
            content=tuple(content),
            usage=self.usage,
            provenance=self.provenance,
            stop_reason=stop_reason,
        )
