"""Marker elision: the wire cutoff for compact-summary markers (the first wire pass).

Owns: deciding which stored turns a compaction hides from the wire, and how a marker's summary is
rendered in their place.
Does not own: deciding *when* to compact or *what* a marker replaces (`tether.compaction`), nor
writing markers to the session (`tether.session`).

Shapes:
    marker = a Turn whose content holds at least one `CompactSummaryBlock`
    elide_markers(turns: tuple[Turn, ...]) -> tuple[Turn, ...]

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

The summary is labelled as a model-written summary of earlier context, so the model does not
take it for something the user said (it is carried in a `user` turn only because every target
accepts user text anywhere).
"""

from __future__ import annotations

from tether.messages import CompactSummaryBlock, TextBlock, Turn

SUMMARY_HEADER = (
    "[Context summary] The earlier part of this conversation was compacted to save space. "
    "The summary below was written by the assistant model, not by the user; the user's own "
    "messages follow it unchanged."
)
"""The label put before every rendered summary."""


def marker_blocks(turn: Turn) -> tuple[CompactSummaryBlock, ...]:
    """The `CompactSummaryBlock`s of `turn`, in order (empty when it is not a marker)."""
    return tuple(b for b in turn.content if type(b) is CompactSummaryBlock)


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
