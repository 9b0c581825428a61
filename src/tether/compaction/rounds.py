"""Rounds, the original task and scope slicing: which stored turns a compaction replaces (pure).

Owns: the structural rules a compaction cuts by. No I/O, no clock; inputs are never mutated.
Does not own: the summary call (`tether.compaction.summarize`), the prompt text
(`tether.compaction.prompt`), nor how markers render on the wire (`tether.wire.markers`).

Definitions:
    live turns     the stored turns in wire order after marker elision, with each ACTIVE marker
                   turn itself (not its rendering) at the slot it renders at.
    original task  the first stored `user` turn holding a text block that is neither a marker,
                   a tool_result turn nor a context note (below). It is never replaced, whatever the number of
                   compactions (recognized structurally, so it survives any history).
    round          a maximal run of live turns in which every turn after the first holds a
                   tool_result block: an assistant tool_call turn and the turn(s) carrying its
                   results are always in the same round. Compaction cuts only between rounds.
    scope          `full` (every round after the task), `tail(keep_turns)` (all but at least the
                   last `keep_turns` live turns), `from(turn_id)` (the round holding the id to the
                   end), `up_to(turn_id)` (the first round to the round holding the id).
    user message   a live `user` turn after the task holding non-empty text, that is neither a
                   marker, a tool_result turn nor a context note: the user's own instruction (a
                   correction, a new requirement). Inside a selection, user messages are kept verbatim (not
                   replaced), newest first, while their estimated tokens fit `keep_user_tokens`;
                   only those past the budget are replaced, and `RoundSelection.folded_user` counts
                   them so the summary can say so. The conversation's newest user message (the
                   one the model is to answer) is kept whatever its size.
    context note   a `user` turn starting with `tether.wire.interrupts.CONTEXT_LEAD`: a TUI
                   `!cmd` with its output (context for the next message, not the user's words).
                   It is no task and no user message, so a compaction replaces it like any turn
                   (`recall` still has it verbatim).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tether.compaction.pressure import message_tokens
from tether.compaction.prompt import folded_count
from tether.compaction.snapshot import CompactionSnapshot
from tether.errors import CompactInvalidInputError
from tether.messages import (
    CompactSummaryBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire.interrupts import CONTEXT_LEAD
from tether.wire.markers import is_marker, live_sequence, marker_blocks, top_generation


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """What part of the live conversation to summarize (see the module docstring).

    Build with `Scope.full()`, `Scope.tail(n)`, `Scope.from_(turn_id)`, `Scope.up_to(turn_id)`.
    """

    kind: Literal["full", "tail", "from", "up_to"] = "full"
    keep_turns: int = 0
    turn_id: str | None = None

    @classmethod
    def full(cls) -> Scope:
        """Every round after the original task."""
        return cls(kind="full")

    @classmethod
    def tail(cls, keep_turns: int) -> Scope:
        """All rounds but the last ones holding at least `keep_turns` live turns (≥ 0)."""
        if keep_turns < 0:
            raise ValueError("keep_turns must be >= 0")
        return cls(kind="tail", keep_turns=keep_turns)

    @classmethod
    def from_(cls, turn_id: str) -> Scope:
        """The round holding `turn_id` and every round after it."""
        return cls(kind="from", turn_id=turn_id)

    @classmethod
    def up_to(cls, turn_id: str) -> Scope:
        """Every round up to and including the round holding `turn_id`."""
        return cls(kind="up_to", turn_id=turn_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundSelection:
    """The result of slicing a history by a scope.

    Attributes:
        task: the original task turn, or None when the history has none.
        rounds: the selected rounds, oldest first (each a tuple of live turns).
        kept: the live turns after the selection (not replaced).
        previous_summary: the summary of the newest active marker inside the selection, if any.
        generation: the generation the new marker gets (highest existing + 1).
        kept_user: user messages inside the selected range kept verbatim (not in `rounds`).
        folded_user: user messages inside the selected range past the verbatim budget (they
            are in `rounds` and replaced; the summary must say so).
        carried_user: user messages folded by earlier compactions whose markers this selection
            replaces (the count their notes state, `tether.compaction.prompt.folded_count`):
            the new marker's note counts them too, so the note outlives the marker it was in.
    """

    task: Turn | None
    rounds: tuple[tuple[Turn, ...], ...]
    kept: tuple[Turn, ...]
    previous_summary: str | None
    generation: int
    kept_user: tuple[Turn, ...] = ()
    folded_user: int = 0
    carried_user: int = 0

    @property
    def folded_total(self) -> int:
        """The user messages the new marker's note counts: folded now and carried forward."""
        return self.folded_user + self.carried_user

    @property
    def turns(self) -> tuple[Turn, ...]:
        """The selected turns, flattened."""
        return tuple(t for r in self.rounds for t in r)


def is_results_turn(turn: Turn) -> bool:
    """True when `turn` holds a tool_result block (it answers an earlier call)."""
    return ToolResultBlock in map(type, turn.content)


def is_context_note(turn: Turn) -> bool:
    """True when `turn` is a context note (a `!cmd` and its output, see the module docstring)."""
    first = turn.content[0] if turn.content else None
    return type(first) is TextBlock and first.text.startswith(CONTEXT_LEAD)


def original_task(turns: Sequence[Turn]) -> Turn | None:
    """The original task: the first user turn with a text block that is neither a marker, a
    tool_result turn nor a context note; None when there is none."""
    for t in turns:
        if (
            t.role == "user"
            and not is_marker(t)
            and not is_results_turn(t)
            and any(type(b) is TextBlock for b in t.content)
            and not is_context_note(t)
        ):
            return t
    return None


DEFAULT_KEEP_USER_TOKENS = 8_000
"""Estimated tokens of later user messages kept verbatim by a compaction (newest first), at
most: a smaller window keeps less (`keep_user_budget`)."""

KEEP_USER_SHARE = 0.25
"""The share of the effective window the verbatim user messages may fill at most."""


def keep_user_budget(effective_window: int) -> int:
    """The verbatim budget of the user's later messages for a model whose effective window is
    `effective_window` tokens: min(`DEFAULT_KEEP_USER_TOKENS`, a quarter of the window), >= 0.

    A fixed 8,000 tokens filled two thirds of a 16 K model's trigger: once the user had pasted
    a few long messages, every compaction could free only a few hundred tokens and ran again a
    request or two later (trial5). A quarter of the window leaves a compaction room to free."""
    return max(0, min(DEFAULT_KEEP_USER_TOKENS, int(effective_window * KEEP_USER_SHARE)))


def is_user_message(turn: Turn) -> bool:
    """True when `turn` is a user-authored message: role user, non-empty text, neither a marker,
    a tool_result turn nor a context note."""
    return (
        turn.role == "user"
        and not is_marker(turn)
        and not is_results_turn(turn)
        and any(type(b) is TextBlock and b.text.strip() for b in turn.content)
        and not is_context_note(turn)
    )


def keep_user_messages(
    turns: Sequence[Turn], budget_tokens: int, *, always: str | None = None
) -> frozenset[str]:
    """The ids of the user messages in `turns` kept verbatim: newest first, while their summed
    estimated tokens stay ≤ `budget_tokens` (the first one past the budget stops the walk, so
    the kept ones are always the newest). The message `always` (the conversation's newest: the
    one the model is to answer) is kept whatever its size, and counts against the budget."""
    out: set[str] = set()
    used = 0
    for t in reversed(turns):
        if not is_user_message(t):
            continue
        cost = message_tokens(t)
        if t.id == always:
            used += cost
            out.add(t.id)
            continue
        if used + cost > budget_tokens:
            break
        used += cost
        out.add(t.id)
    return frozenset(out)


def live_turns(turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """The turns in wire order after marker elision, active markers as their marker turns."""
    return live_sequence(turns if isinstance(turns, tuple) else tuple(turns))


def split_rounds(turns: Sequence[Turn]) -> tuple[tuple[Turn, ...], ...]:
    """Cut `turns` into rounds: a new round starts at every turn holding no tool_result."""
    rounds: list[list[Turn]] = []
    for t in turns:
        if rounds and is_results_turn(t):
            rounds[-1].append(t)
        else:
            rounds.append([t])
    return tuple(tuple(r) for r in rounds)


def next_generation(turns: Sequence[Turn]) -> int:
    """1 + the highest generation among the markers in `turns` (1 when there is none)."""
    return top_generation(turns) + 1


def has_text(turns: Sequence[Turn]) -> bool:
    """True when any turn holds summarizable content (text, a call, a result, a summary)."""
    for t in turns:
        for b in t.content:
            if isinstance(b, ToolCallBlock | ToolResultBlock):
                return True
            if isinstance(b, TextBlock) and b.text.strip():
                return True
            if isinstance(b, CompactSummaryBlock) and b.summary.strip():
                return True
    return False


def _round_of(rounds: Sequence[Sequence[Turn]], turn_id: str | None) -> int:
    for i, r in enumerate(rounds):
        if any(t.id == turn_id for t in r):
            return i
    raise CompactInvalidInputError(
        f"unknown anchor turn id {turn_id!r} (not a live turn after the task)"
    )


def select(
    snapshot: CompactionSnapshot,
    scope: Scope,
    *,
    keep_user_tokens: int = DEFAULT_KEEP_USER_TOKENS,
) -> RoundSelection:
    """Slice `snapshot.history` (the stored history) by `scope` at whole rounds; the user
    messages inside the slice are kept verbatim within `keep_user_tokens` (see the module
    docstring).

    A snapshot's live turns and generation, kept incrementally by the caller
    (`CompactionSnapshot.tracked`), save two passes over the whole history, which made each compaction
    cost O(history) (21 ms at 35,000 turns, half of it; bench/turn_overhead.py).

    Raises:
        CompactInvalidInputError: empty input, nothing to summarize, an unknown anchor id, or a
            selected slice with no text.
    """
    turns = snapshot.history
    if not turns:
        raise CompactInvalidInputError("empty input: there is no conversation to compact")
    task = original_task(turns)
    live = live_turns(turns) if snapshot.live is None else snapshot.live
    start = 0
    if task is not None:
        start = next((i + 1 for i, t in enumerate(live) if t.id == task.id), 0)
    rounds = split_rounds(live[start:])
    lo, hi = 0, len(rounds)
    if scope.kind == "tail":
        kept = 0
        while hi > 0 and kept < scope.keep_turns:
            hi -= 1
            kept += len(rounds[hi])
    elif scope.kind == "from":
        lo = _round_of(rounds, scope.turn_id)
    elif scope.kind == "up_to":
        hi = _round_of(rounds, scope.turn_id) + 1
    chosen = rounds[lo:hi]
    if not chosen:
        raise CompactInvalidInputError("nothing to summarize: the scope selects no turn")
    flat = [t for r in chosen for t in r]
    users = [t for t in flat if is_user_message(t)]
    newest = next((t.id for t in reversed(live) if is_user_message(t)), None)
    keep_ids = keep_user_messages(users, keep_user_tokens, always=newest)
    if keep_ids:
        chosen = tuple(
            r2 for r2 in (tuple(t for t in r if t.id not in keep_ids) for r in chosen) if r2
        )
        flat = [t for r in chosen for t in r]
    if not flat:
        raise CompactInvalidInputError("nothing to summarize: the scope holds only user messages")
    if not has_text(flat):
        raise CompactInvalidInputError("the selected turns hold no text to summarize")
    previous = None
    carried = 0
    for t in flat:
        for b in marker_blocks(t):
            previous = b.summary
            carried += folded_count(b.summary)
    return RoundSelection(
        task=task,
        rounds=chosen,
        kept=tuple(t for r in rounds[hi:] for t in r),
        previous_summary=previous,
        generation=snapshot.generation,
        kept_user=tuple(t for t in users if t.id in keep_ids),
        folded_user=len(users) - len(keep_ids),
        carried_user=carried,
    )


def drop_for_budget(sizes: Sequence[int], budget: int) -> int:
    """How many head items to drop so the rest sums to ≤ `budget` (the last item is kept)."""
    total = sum(sizes)
    k = 0
    while k < len(sizes) - 1 and total > budget:
        total -= sizes[k]
        k += 1
    return k


def halve_from_head(sizes: Sequence[int]) -> int:
    """How many head items to drop so the rest is at most half the total (the last item kept)."""
    return drop_for_budget(sizes, sum(sizes) // 2)


def chunk(sizes: Sequence[int], budget: int) -> tuple[tuple[int, int], ...]:
    """Greedy consecutive chunks `(start, stop)` each summing to ≤ `budget` (an item larger than
    the budget is a chunk of its own). Covers every index exactly once, in order."""
    out: list[tuple[int, int]] = []
    start, acc = 0, 0
    for i, s in enumerate(sizes):
        if i > start and acc + s > budget:
            out.append((start, i))
            start, acc = i, 0
        acc += s
    if start < len(sizes):
        out.append((start, len(sizes)))
    return tuple(out)


