"""Small shared helpers of the wire passes (private)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from tether.messages import ContentBlock, Turn

_TURN_FIELDS = ("id", "role", "content", "usage", "provenance", "stop_reason")
if tuple(f.name for f in fields(Turn)) != _TURN_FIELDS:  # pragma: no cover - guards with_content
    raise ImportError("tether.messages.Turn changed its fields; update tether.wire._util")


def with_content(turn: Turn, content: tuple[ContentBlock, ...]) -> Turn:
    """`dataclasses.replace(turn, content=content)`, several times faster (hot path)."""
    return Turn(
        id=turn.id,
        role=turn.role,
        content=content,
        usage=turn.usage,
        provenance=turn.provenance,
        stop_reason=turn.stop_reason,
    )


def map_turns(turns: tuple[Turn, ...], fn: Callable[[Turn], Turn]) -> tuple[Turn, ...]:
    """`tuple(map(fn, turns))`, copy-on-write: `fn` is called once per turn, in order, and
    returns the turn itself when it leaves it unchanged. Returns `turns` itself when every
    turn is unchanged, else a new tuple in which unchanged turns are the same objects (no
    list is built before the first change)."""
    out: list[Turn] | None = None
    for i, t in enumerate(turns):
        nt = fn(t)
        if out is None:
            if nt is t:
                continue
            out = list(turns[:i])
        out.append(nt)
    return turns if out is None else tuple(out)


def blank(text: str) -> bool:
    """True for an empty or whitespace-only text (which Anthropic rejects as a text block)."""
    return not text or text.isspace()
