"""Marker elision: the wire cutoff for compact-summary markers (the first wire pass).

Owns: deciding which stored turns a compaction hides from the wire, how a marker's summary is
rendered in their place, and which turns the newest marker preserved keep their thinking
(`replayed_thinking_ids`, `without_thinking`).
Does not own: deciding *when* to compact or *what* a marker replaces (`tether.compaction`), nor
writing markers to the session (`tether.session`).

Shapes:
    marker = a Turn whose content holds at least one `CompactSummaryBlock`
    elide_markers(turns: tuple[Turn, ...]) -> tuple[Turn, ...]
    live_sequence(turns: tuple[Turn, ...]) -> tuple[Turn, ...]   # active markers kept as markers
    replayed_thinking_ids(turns: Sequence[Turn]) -> frozenset[str]
    without_thinking(turn: Turn) -> Turn
    LiveTurns().update(turns) -> tuple[Turn, ...]   # == live_sequence(turns), incrementally

Rules:
    * A turn whose id is listed in ANY marker's `replaces_turn_ids` never reaches the wire, whatever
      the marker's age (elision is monotone: a newer marker can only hide more).
    * A marker is *subsumed* when its own id is listed in a newer (later) marker's
      `replaces_turn_ids`; a subsumed marker only elides, it renders nothing.
    * An *active* marker (not subsumed) renders as ONE synthetic `user` text turn, id = the
      marker's id, placed at the slot of its first replaced turn still present in `turns` (the
      "first surviving" one), or at the marker's own position when none is present. Several
      active markers sharing a slot render in their stored order.
    * A marker turn never passes verbatim (its other blocks, if any, are dropped with it).
    * Every other turn passes by reference; with no marker the input tuple itself is returned.

Preserved turns lose their replayed thinking: an assistant turn stored before the newest marker
(a turn the compaction kept verbatim, or one an older compaction kept) is sent without its
thinking and redacted_thinking blocks (`replayed_thinking_ids`, applied by the view after
elision): the summary stands for that reasoning, and signed thinking replayed from before a
compaction costs window on every request after it. Kept: the turns of the tool loop that was in
progress when the marker was written (after the last plain user message before it), since
Anthropic requires the running loop's thinking back intact ("a final assistant message must
start with a thinking block" with thinking on); and every turn after the marker.

The summary is labelled as a model-written summary of earlier context, so the model does not
take it for something the user said (it is carried in a `user` turn only because every target
accepts user text anywhere).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence, Set

from tether.messages import (
    CompactSummaryBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire._util import with_content

SUMMARY_HEADER = (
    "[Context summary] The earlier part of this conversation was compacted to save space. "
    "The summary below was written by the assistant model, not by the user; the user's own "
    "messages are kept word for word outside it."
)
"""The label put before every rendered summary."""


def marker_blocks(turn: Turn) -> tuple[CompactSummaryBlock, ...]:
    """The `CompactSummaryBlock`s of `turn`, in order (empty when it is not a marker)."""
    return tuple(b for b in turn.content if type(b) is CompactSummaryBlock)


def top_generation(turns: Sequence[Turn]) -> int:
    """The highest generation among the markers in `turns` (0 when there is none)."""
    return max(
        (
            b.generation
            for t in turns
            if CompactSummaryBlock in map(type, t.content)  # C-level scan: most turns are not
            for b in t.content
            if type(b) is CompactSummaryBlock
        ),
        default=0,
    )


def is_marker(turn: Turn) -> bool:
    """True when `turn` holds a `CompactSummaryBlock`."""
    return CompactSummaryBlock in map(type, turn.content)


def render_marker(turn: Turn) -> Turn:
    """The synthetic `user` text turn an active marker renders as (id = the marker's id).

    Args:
        turn: a marker turn.

    Returns:
        `Turn(id=turn.id, role="user", content=(TextBlock(header + <summary>...</summary>),))`;
        several summary blocks in one marker are rendered one after the other.
    """
    parts = [SUMMARY_HEADER]
    for b in marker_blocks(turn):
        parts.append(f"<summary>\n{b.summary}\n</summary>")
    return Turn(id=turn.id, role="user", content=(TextBlock(text="\n\n".join(parts)),))


def elided_ids(turns: tuple[Turn, ...]) -> frozenset[str]:
    """The ids listed in any marker's `replaces_turn_ids` (the turns that never reach the wire)."""
    out: set[str] = set()
    for t in turns:
        for b in t.content:
            if type(b) is CompactSummaryBlock:
                out.update(b.replaces_turn_ids)
    return frozenset(out)


def elide_markers(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """Apply compaction markers: hide replaced turns, render active markers' summaries.

    Args:
        turns: stored turns, oldest first.

    Returns:
        The turns the wire may carry (see the module docstring for the rules); the input tuple
        itself when it holds no marker. Pure and idempotent (the output holds no marker).
    """
    markers: list[tuple[int, Turn, frozenset[str]]] = []
    for i, t in enumerate(turns):
        if CompactSummaryBlock in map(type, t.content):  # C-level scan: the common no-marker case
            ids = frozenset(
                x for c in t.content if type(c) is CompactSummaryBlock for x in c.replaces_turn_ids
            )
            markers.append((i, t, ids))
    if not markers:
        return turns
    elided: set[str] = set()
    for _, _, ids in markers:
        elided |= ids
    # A marker is subsumed when a newer marker lists its id.
    subsumed_by_later: set[str] = set()
    active: list[tuple[int, Turn, frozenset[str]]] = []
    for i, t, ids in reversed(markers):
        if t.id not in subsumed_by_later:
            active.append((i, t, ids))
        subsumed_by_later |= ids
    active.reverse()
    slots: dict[int, list[Turn]] = {}
    if active:
        first_pos: dict[str, int] = {}
        for i, t in enumerate(turns):
            if t.id in elided and t.id not in first_pos:
                first_pos[t.id] = i
        for i, t, ids in active:
            present = [first_pos[x] for x in ids if x in first_pos]
            slot = min(present) if present else i
            slots.setdefault(slot, []).append(render_marker(t))
    marker_pos = {i for i, _, _ in markers}
    out: list[Turn] = []
    for i, t in enumerate(turns):
        rendered = slots.get(i)
        if rendered is not None:
            out.extend(rendered)
        if i in marker_pos or t.id in elided:
            continue
        out.append(t)
    return tuple(out)


def _has_thinking(turn: Turn) -> bool:
    types = set(map(type, turn.content))
    return ThinkingBlock in types or RedactedThinkingBlock in types


def replayed_thinking_ids(turns: Sequence[Turn]) -> frozenset[str]:
    """The ids of the assistant turns whose thinking is not replayed (module docstring): those
    holding thinking, stored before the newest marker and before the tool loop that was in
    progress when it was written. Empty without a marker.

    Args:
        turns: the stored turns, oldest first (not a view: the newest marker's stored position
            decides).

    Returns:
        A set of turn ids; O(turns) (a reverse scan finds the newest marker).
    """
    newest = -1
    for i in range(len(turns) - 1, -1, -1):
        if CompactSummaryBlock in map(type, turns[i].content):
            newest = i
            break
    if newest < 0:
        return frozenset()
    start = newest  # the first turn of the loop in progress when the marker was written
    for j in range(newest - 1, -1, -1):
        t = turns[j]
        if t.role == "user" and (
            CompactSummaryBlock in map(type, t.content)
            or ToolResultBlock not in map(type, t.content)
        ):
            break  # a plain user message (or an older marker): the loop started after it
        start = j
    return frozenset(
        t.id for t in turns[:start] if t.role == "assistant" and _has_thinking(t)
    )


def without_thinking(turn: Turn) -> Turn:
    """`turn` without its thinking and redacted_thinking blocks (itself when it has none)."""
    if not _has_thinking(turn):
        return turn
    kept = tuple(
        b for b in turn.content if type(b) is not ThinkingBlock and type(b) is not RedactedThinkingBlock
    )
    return with_content(turn, kept)


def live_sequence(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """`elide_markers(turns)` with each rendered summary replaced by its marker turn itself.

    Rendering it again gives the wire turns: `elide_markers(live_sequence(x)) ==
    elide_markers(x)`; and `live_sequence(live_sequence(x)) == live_sequence(x)`.
    """
    markers = {t.id: t for t in turns if CompactSummaryBlock in map(type, t.content)}
    if not markers:
        return turns
    return tuple(markers.get(t.id, t) for t in elide_markers(turns))


class LiveTurns:
    """`live_sequence` kept incrementally for one growing history (amortized O(new turns)).

    `update(turns)` returns exactly `live_sequence(turns)`. Each live turn carries its sort key
    in the wire order: a plain turn `(stored index, 1, stored index)`, an active marker
    `(slot, 0, stored index)` where the slot is the stored index of its first replaced turn
    still stored (or its own), as `elide_markers` places it. When `turns` extends the sequence
    given on the previous call (same length prefix, same last turn object) only the new turns
    are looked at: a plain turn is appended; a marker removes the live turns it lists and is
    inserted at its slot (O(live turns), not O(history)). This is exact when the marker lists
    no id already elided: the turns it lists that are stored are then all live, with their
    stored indices known.

    It starts over from the whole history (a full build) when the previous input is not a
    prefix, when a new turn's id is already elided or already live, when a new marker lists an
    already elided id, or when the history is not `regular`.

    Attributes:
        elided: every id listed by a marker seen so far (read-only for callers).
        regular: the live turns' ids are unique and none is elided; then
            `elide_markers(live) == elide_markers(turns)`, so wire passes may run over the live
            turns instead of the history. Compaction's histories are regular; a hand-made one
            may not be (an older marker listing a newer one, duplicate ids).
        full_builds: how many full builds ran (for tests and diagnostics).
    """

    def __init__(self) -> None:
        self._items: list[tuple[tuple[int, int, int], Turn]] = []
        self._elided: set[str] = set()
        self._ids: set[str] = set()
        self._regular = True
        self._seen = 0
        self._last: Turn | None = None
        self._out: tuple[Turn, ...] | None = ()
        self._top = 0  # the highest marker generation in every turn seen, elided ones included
        self.full_builds = 0

    @property
    def elided(self) -> Set[str]:
        """The ids listed in any marker's `replaces_turn_ids` (as `elided_ids`)."""
        return self._elided

    @property
    def regular(self) -> bool:
        """See the class docstring."""
        return self._regular

    @property
    def next_generation(self) -> int:
        """1 + the highest generation among the markers of the history last given to `update`
        (elided markers included; 1 when there is none): 1 + `top_generation` of it, kept in
        O(new turns)."""
        return self._top + 1

    def update(self, turns: Sequence[Turn]) -> tuple[Turn, ...]:
        """`live_sequence(turns)`; `turns` (a tuple or the caller's growing list) is not
        copied or mutated."""
        k = self._seen
        n = len(turns)
        if n < k or (k and turns[k - 1] is not self._last) or (n > k and not self._regular):
            return self._full(turns)
        items, elided, ids = self._items, self._elided, self._ids
        for i in range(k, n):
            t = turns[i]
            if t.id in elided or t.id in ids:
                return self._full(turns)
            if CompactSummaryBlock in map(type, t.content):
                blocks = marker_blocks(t)
                listed = {x for b in blocks for x in b.replaces_turn_ids}
                if not listed.isdisjoint(elided):
                    return self._full(turns)
                self._top = max(self._top, *(b.generation for b in blocks))
                elided |= listed
                slot = min((key[2] for key, x in items if x.id in listed), default=i)
                items[:] = [(key, x) for key, x in items if x.id not in listed]
                ids -= listed
                bisect.insort(items, ((slot, 0, i), t), key=_key)
            else:
                items.append(((i, 1, i), t))
            ids.add(t.id)
            self._out = None
        self._seen = n
        self._last = turns[-1] if n else None
        return self._result()

    def _result(self) -> tuple[Turn, ...]:
        if self._out is None:
            self._out = tuple(t for _, t in self._items)
        return self._out

    def _full(self, turns: Sequence[Turn]) -> tuple[Turn, ...]:
        seq = turns if isinstance(turns, tuple) else tuple(turns)
        self.full_builds += 1
        self._seen = len(seq)
        self._last = seq[-1] if seq else None
        self._elided = elided = set(elided_ids(seq))
        self._top = top_generation(seq)
        live = live_sequence(seq)
        self._ids = {t.id for t in live}
        self._regular = len(self._ids) == len(live) and self._ids.isdisjoint(elided)
        self._out = live
        if not self._regular:
            self._items = []  # not kept: the next new turn rebuilds again
            return live
        # Regular: ids are unique, so each live turn's key follows from its id.
        first: dict[str, int] = {}
        for i, t in enumerate(seq):
            first.setdefault(t.id, i)
        items: list[tuple[tuple[int, int, int], Turn]] = []
        for t in live:
            i = first[t.id]
            if CompactSummaryBlock in map(type, t.content):
                listed = [x for b in marker_blocks(t) for x in b.replaces_turn_ids]
                slot = min((first[x] for x in listed if x in first), default=i)
                items.append(((slot, 0, i), t))
            else:
                items.append(((i, 1, i), t))
        self._items = items
        return live


def _key(item: tuple[tuple[int, int, int], Turn]) -> tuple[int, int, int]:
    return item[0]
