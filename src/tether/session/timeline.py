"""A session's timeline: tokens per request, with compactions, persisted outputs and model
switches marked (`tether sessions timeline`, the TUI's `/timeline`).

Owns: `session_timeline(turns)` and its value types (`TimelinePoint`, `TimelineMark`,
`Timeline`), and `persisted_output(text)` (the size and path a persisted-output stub or note
names). Does not own: drawing the chart (`tether.tui.chart`), loading the session
(`tether.session.store`).

Pure: data in (the loaded turns), data out; no I/O, no clock; the input is never mutated.

Rules:
    * One point per request: each assistant turn that carries a `usage` is one request, in the
      order of the turns. `prompt_tokens` = input + cache read + cache write (`Usage`); an
      assistant turn without usage (an interrupted reply, a scripted one) is counted in
      `Timeline.unmeasured`, not drawn.
    * A mark sits between requests: `at` = the number of points before it (0 = before the
      first request; `len(points)` = after the last).
    * `compaction`: one per marker turn (`tether.wire.markers.is_marker`), with the estimated
      wire-view size (`tether.compaction.pressure.estimate_tokens` of the marker-elided turns,
      the estimate the compaction itself reports) just before and just after it.
    * `persisted`: one per tool result whose text holds a persisted-output stub
      (`<persisted-output size_bytes="N" path="P">`, `tether.tools.exec.normalize.render_stub`) or
      a saved-output note (`[full output (N bytes, L lines) saved at P; …]`).
    * `model`: one where an assistant turn's provenance (`provider/model`) differs from the
      previous assistant turn's that had one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tether.messages import Turn
from tether.tokens import estimate_tokens
from tether.wire.markers import is_marker, marker_blocks, render_marker

MarkKind = Literal["compaction", "persisted", "model"]

_STUB_RE = re.compile(r'<persisted-output size_bytes="(\d+)" path="([^"]*)"')
_NOTE_RE = re.compile(r"\[(?:full|kept) output \((\d+) bytes, \d+ lines\) saved at ([^;\]]+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelinePoint:
    """One request.

    Attributes:
        index: 0-based request number.
        turn_index: position of its assistant turn in the input turns.
        turn_id: the assistant turn's id.
        prompt_tokens: input + cache read + cache write tokens (the whole prompt).
        cache_read_tokens / cache_write_tokens: the cached parts of `prompt_tokens`.
        output_tokens: tokens of the reply.
        model: `provider/model` of the turn's provenance, or None when unknown.
    """

    index: int
    turn_index: int
    turn_id: str
    prompt_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    model: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineMark:
    """Something that happened between two requests.

    Attributes:
        kind: `compaction`, `persisted` or `model`.
        at: the number of requests (points) before it.
        turn_index: position of the turn it comes from in the input turns.
        label: one line for a legend, e.g. `compaction 2: ~48211 → ~3120 tokens`.
        tokens_before / tokens_after: for a compaction, the estimated wire-view size (tokens)
            before and after the marker; else None.
        size_bytes: for a persisted output, the saved file's size (bytes); else None.
    """

    kind: MarkKind
    at: int
    turn_index: int
    label: str
    tokens_before: int | None = None
    tokens_after: int | None = None
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """The points in request order and the marks in turn order (see the module rules)."""

    points: tuple[TimelinePoint, ...]
    marks: tuple[TimelineMark, ...]
    unmeasured: int = 0

    def marks_of(self, kind: MarkKind) -> tuple[TimelineMark, ...]:
        """The marks of one kind, in order."""
        return tuple(m for m in self.marks if m.kind == kind)


def persisted_output(text: str) -> tuple[int, str] | None:
    """`(size_bytes, path)` named by the first persisted-output stub or saved-output note in
    `text`, or None."""
    found = _STUB_RE.search(text) or _NOTE_RE.search(text)
    if found is None:
        return None
    return int(found.group(1)), found.group(2).strip()


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


class _WireSize:
    """The estimated tokens of `elide_markers(prefix)` as the prefix grows one turn at a time,
    in O(1) per turn (plus the ids a marker lists), by the rules of `tether.wire.markers`: a
    non-marker turn counts unless any marker of the prefix lists its id; a marker counts as its
    rendered summary while no later marker lists its id. The estimate is additive, so where a
    summary is placed does not change the sum."""

    def __init__(self) -> None:
        self.elided: set[str] = set()
        self.counted: dict[str, int] = {}  # id -> tokens of the counted non-marker turns with it
        self.active: list[tuple[str, int]] = []  # (marker id, tokens of its rendered summary)
        self.total = 0

    def add(self, turn: Turn) -> None:
        if not is_marker(turn):
            if turn.id not in self.elided:
                n = estimate_tokens((turn,))
                self.counted[turn.id] = self.counted.get(turn.id, 0) + n
                self.total += n
            return
        ids = {x for b in marker_blocks(turn) for x in b.replaces_turn_ids}
        for x in ids - self.elided:
            self.total -= self.counted.pop(x, 0)
        self.elided |= ids
        keep = [(mid, n) for mid, n in self.active if mid not in ids]
        self.total -= sum(n for mid, n in self.active if mid in ids)
        rendered = estimate_tokens((render_marker(turn),))
        self.active = [*keep, (turn.id, rendered)]
        self.total += rendered


def session_timeline(turns: Sequence[Turn]) -> Timeline:
    """The timeline of `turns` (a loaded session's turns, in stored order).

    Returns:
        `Timeline` (see the module rules). Never raises on well-typed turns.
    """
    turns = tuple(turns)
    wire = _WireSize()
    points: list[TimelinePoint] = []
    marks: list[TimelineMark] = []
    unmeasured = 0
    last_model: str | None = None
    compactions = 0
    for i, turn in enumerate(turns):
        before = wire.total
        wire.add(turn)
        if is_marker(turn):
            compactions += 1
            after = wire.total
            generation = max((b.generation for b in marker_blocks(turn)), default=1)
            marks.append(
                TimelineMark(
                    kind="compaction",
                    at=len(points),
                    turn_index=i,
                    label=f"compaction {compactions} (generation {generation}): "
                    f"~{before} → ~{after} tokens",
                    tokens_before=before,
                    tokens_after=after,
                )
            )
            continue
        for result in turn.tool_results:
            found = persisted_output(result.text)
            if found is not None:
                size, path = found
                marks.append(
                    TimelineMark(
                        kind="persisted",
                        at=len(points),
                        turn_index=i,
                        label=f"persisted output {_size(size)} ({result.tool_call_id}): {path}",
                        size_bytes=size,
                    )
                )
        if turn.role != "assistant":
            continue
        model = f"{turn.provenance.provider}/{turn.provenance.model}" if turn.provenance else None
        if model is not None:
            if last_model is not None and model != last_model:
                marks.append(
                    TimelineMark(
                        kind="model",
                        at=len(points),
                        turn_index=i,
                        label=f"model {last_model} → {model}",
                    )
                )
            last_model = model
        usage = turn.usage
        if usage is None:
            unmeasured += 1
            continue
        points.append(
            TimelinePoint(
                index=len(points),
                turn_index=i,
                turn_id=turn.id,
                prompt_tokens=usage.prompt_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                output_tokens=usage.output_tokens,
                model=model,
            )
        )
    return Timeline(points=tuple(points), marks=tuple(marks), unmeasured=unmeasured)
