"""The wire-only `tail` strategy and the user-compactor hook (pure).

Owns: `shorten_old_results` — on every request, tool_result text above a byte threshold in the
turns before a boundary (at least `keep_recent_turns` from the end, advanced in steps of
`step_turns`) is cut to its head plus a note naming the turn for `recall`. A shortened turn is a
pure function of the turn alone and the boundary only moves forward as turns are appended, so a
turn's rendering changes at most once and the view stays byte-stable across requests for prompt
caching (only one request in `step_turns` sees a change inside its prefix). A `<persisted-output` stub is never cut. The stored turns are not changed.
Also `Compactor`: the protocol of a user-supplied function that replaces the LLM summarizer, and
`WireCompactor` with its `CompactContext` (`compact_context`): a user function that takes the
tail strategy's place on the wire view, told the same knobs (threshold, keep-turns) and the
view's total bytes.
Does not own: the LLM summary (`tether.compaction.summarize`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from tether.compaction.prompt import PERSISTED_OUTPUT_TAG
from tether.messages import ContentBlock, ImageBlock, TextBlock, ToolResultBlock, Turn


@dataclass(frozen=True, slots=True, kw_only=True)
class TailPolicy:
    """Settings of the tail strategy.

    Attributes:
        max_result_bytes: tool_result text longer than this (UTF-8 bytes) is shortened.
        keep_bytes: how many leading bytes of a shortened text are kept.
        keep_recent_turns: the newest turns are never shortened (the model is still using them).
        step_turns: the boundary between old and recent turns advances in steps of this many
            turns, so the view changes inside its prefix only once per `step_turns` appended
            turns (the other requests repeat the previous one as an exact prefix).
    """

    max_result_bytes: int = 8_192
    keep_bytes: int = 2_048
    keep_recent_turns: int = 6
    step_turns: int = 8


def shorten_text(text: str, policy: TailPolicy, turn_id: str) -> str:
    """`text` cut to `policy.keep_bytes` bytes plus a note, if it is above the threshold and not
    a persisted-output stub; else `text` itself."""
    data = text.encode("utf-8")
    if len(data) <= policy.max_result_bytes or PERSISTED_OUTPUT_TAG in text:
        return text
    head = data[: policy.keep_bytes].decode("utf-8", "ignore")
    omitted = len(data) - len(head.encode("utf-8"))
    return (
        f"{head}\n[… {omitted} bytes of this old tool result omitted from context; "
        f"recall turn {turn_id} for the full text]"
    )


def _shorten_part(
    part: TextBlock | ImageBlock, policy: TailPolicy, turn_id: str
) -> TextBlock | ImageBlock:
    if not isinstance(part, TextBlock):
        return part
    text = shorten_text(part.text, policy, turn_id)
    return part if text is part.text else TextBlock(text=text)


def _shorten_turn(turn: Turn, policy: TailPolicy) -> Turn:
    if ToolResultBlock not in map(type, turn.content):
        return turn
    changed = False
    blocks: list[ContentBlock] = []
    for b in turn.content:
        if isinstance(b, ToolResultBlock):
            parts = tuple(_shorten_part(p, policy, turn.id) for p in b.content)
            if any(x is not y for x, y in zip(parts, b.content, strict=True)):
                changed = True
                b = replace(b, content=parts)
        blocks.append(b)
    return replace(turn, content=tuple(blocks)) if changed else turn


def shorten_old_results(view: Sequence[Turn], policy: TailPolicy) -> tuple[Turn, ...]:
    """The view with old large tool_result texts shortened (see the module docstring).

    Returns the input (as a tuple) when nothing changes; unchanged turns pass by reference.
    """
    seq = view if isinstance(view, tuple) else tuple(view)
    step = max(policy.step_turns, 1)
    cut = (len(seq) - policy.keep_recent_turns) // step * step
    if cut <= 0:
        return seq
    out = [_shorten_turn(t, policy) for t in seq[:cut]]
    if all(a is b for a, b in zip(out, seq, strict=False)):
        return seq
    return (*out, *seq[cut:])


class Compactor(Protocol):
    """A user-supplied summarizer replacing the LLM call.

    Called with the selected turns (oldest first), the previous summary (or None) and the
    user's focus (or None); returns the summary text (or an awaitable of it).
    """

    def __call__(
        self, turns: Sequence[Turn], previous_summary: str | None, focus: str | None
    ) -> str | Awaitable[str]: ...


@dataclass(frozen=True, slots=True)
class CompactContext:
    """What a `WireCompactor` is told besides the view: the knobs the built-in tail strategy
    uses, so a host can reuse them, and the view's size, so it can return early.

    Attributes:
        threshold: `TailPolicy.max_result_bytes` (bytes).
        keep_turns: `TailPolicy.keep_recent_turns`.
        total_bytes: the UTF-8 bytes of the view's text (text blocks and tool results' text),
            before the compactor runs.
    """

    threshold: int
    keep_turns: int
    total_bytes: int


class WireCompactor(Protocol):
    """A user function that shapes the wire view in place of the tail strategy
    (`AutoCompaction(wire_compactor=...)`): it gets the view about to be sent and a
    `CompactContext`, and returns the view to send (the input itself when it changes nothing).
    The stored turns are never changed. What it returns is repaired like any transformed view
    (every call answered, a user turn last); it may be called more than once per request, so
    it should be pure and cheap."""

    def __call__(self, view: tuple[Turn, ...], ctx: CompactContext) -> Sequence[Turn]: ...


def view_bytes(view: Sequence[Turn]) -> int:
    """The UTF-8 bytes of the text in `view` (text blocks and tool results' text parts)."""
    total = 0
    for turn in view:
        for b in turn.content:
            if isinstance(b, TextBlock):
                total += len(b.text.encode("utf-8"))
            elif isinstance(b, ToolResultBlock):
                total += sum(
                    len(p.text.encode("utf-8")) for p in b.content if isinstance(p, TextBlock)
                )
    return total


def compact_context(view: Sequence[Turn], policy: TailPolicy) -> CompactContext:
    """The `CompactContext` of `view` under `policy`'s knobs."""
    return CompactContext(policy.max_result_bytes, policy.keep_recent_turns, view_bytes(view))
