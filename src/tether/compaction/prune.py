"""Progressive pruning of old tool results, before the summary pass (pure).

Owns: `PrunePolicy`, `prune_stub` (the byte-stable text that replaces one pruned result),
`plan_prune` (which results to prune now: a set of tool-call ids that only grows) and
`apply_prune` (the view with those results replaced by their stubs).

The idea: long sessions spend most of their window on old tool output the model has already
used. Before the summary pass replaces everything at once, the oldest results give way first:
each becomes a one-line stub that says what it was (the tool, a summary of the call, its size)
and that `recall` brings it back, so nothing is lost. The summary pass still runs when pruning
can no longer keep the context below its trigger.

Wire view only: the stored turns are never changed (the stub names the results turn, and
`recall` reads the stored history, so the full text is one call away). The state is the set of
pruned call ids, kept by the caller (`tether.agent.turn.compacting.AutoCompaction`); for a resumed
session it starts empty and the first check prunes again (that request re-sends its prefix
anyway: the provider's cache has long expired).

Cache stability: pruning acts in chunks, not one result per request. It starts when the next
request would fill `trigger` of the effective window and prunes, oldest first, until the estimate
drops to `target` — and only when that frees at least `min_chunk` of the window (else it waits
until enough has accumulated, or the summary pass takes over). Between two chunks the pruned
prefix stays byte-identical: a stub depends only on its call and result, and the set only grows.

Rules (checked by Hypothesis properties in `tests/compaction/test_prune.py`):
    - stubs are byte-stable: a pure function of (call, result, results turn id);
    - monotone: `plan_prune` returns a superset of the ids it was given;
    - the newest `keep_recent_turns` turns of the view keep their results, whatever the set says;
    - only tool_result blocks change: the user's words (text, images, documents) never do,
      nor persisted-output stubs (they already point at the full output on disk), nor small
      results (below `min_result_bytes`).

Imports only `tether.messages` and this package; no I/O, no clock; inputs are never mutated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tether.compaction.pressure import DEFAULT_THRESHOLD, message_tokens, normalized_fraction
from tether.compaction.prompt import PERSISTED_OUTPUT_TAG
from tether.messages import (
    ContentBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)

PRUNE_TAG = "[pruned tool result:"
"""How every stub starts (hosts and tests recognize a pruned result by it)."""

CALL_SUMMARY_CHARS = 120
"""The most characters of a call's arguments a stub repeats."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrunePolicy:
    """When and how much to prune (shares of the effective window unless stated otherwise).

    Attributes:
        trigger: prune when the next request would fill this share (below the summary's
            trigger, 0.8 by default, so pruning comes first).
        target: prune oldest results until the estimate drops to this share.
        min_chunk: prune only when that frees at least this share; smaller steps would change
            the request's prefix often for little (the summary pass takes over when pruning
            can no longer help).
        keep_recent_turns: the newest turns of the view keep their results (the model is still
            using them).
        min_result_bytes: results smaller than this (UTF-8 bytes of their text) are kept: the
            stub would save little.
    """

    trigger: float = 0.6
    target: float = 0.2
    min_chunk: float = 0.1
    keep_recent_turns: int = 8
    min_result_bytes: int = 1_024


def prune_policy(threshold: float = DEFAULT_THRESHOLD) -> PrunePolicy:
    """The default pruning for a summary trigger of `threshold` (a share of the effective
    window, clamped as `normalized_fraction` does): prune from 3/4 of it down to 1/4, in chunks
    of at least 1/8 (0.6 → 0.2, at least 0.1, for the default 0.8), so pruning always comes
    before the summary. The deep cut is measured (`bench/pruning.py`): every step re-sends what
    follows the first newly pruned result uncached, so fewer, larger steps cost less than
    many small ones, and the session still keeps a fifth of the window of recent results
    verbatim after each step.

    >>> p = prune_policy(0.8)
    >>> round(p.trigger, 3), round(p.target, 3), p.min_chunk
    (0.6, 0.2, 0.1)
    """
    t = normalized_fraction(threshold, DEFAULT_THRESHOLD)
    return PrunePolicy(trigger=t * 0.75, target=t * 0.25, min_chunk=t / 8)


def _call_summary(call: ToolCallBlock | None) -> str:
    if call is None:
        return "an unknown call"
    args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True, default=str)
    if len(args) > CALL_SUMMARY_CHARS:
        args = args[: CALL_SUMMARY_CHARS - 1] + "…"
    return f"{call.name} {args}"


def _result_bytes(result: ToolResultBlock) -> int:
    return sum(len(p.text.encode("utf-8")) for p in result.content if isinstance(p, TextBlock))


def prune_stub(call: ToolCallBlock | None, result: ToolResultBlock, turn_id: str) -> str:
    """The text that replaces a pruned result: what it was and how to get it back.

    A pure function of its arguments (byte-stable across requests and processes).

    >>> from tether.messages import tool_result
    >>> prune_stub(ToolCallBlock(id="c1", name="read", arguments={"path": "a.py"}),
    ...            tool_result("c1", "x\\n" * 600), "u7")  # doctest: +NORMALIZE_WHITESPACE
    '[pruned tool result: read {"path": "a.py"} returned 1,200 bytes, 600 lines; it was
    removed from the context to save room; recall turn u7 for the full text]'
    """
    text = "".join(p.text for p in result.content if isinstance(p, TextBlock))
    size = len(text.encode("utf-8"))
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    images = sum(1 for p in result.content if isinstance(p, ImageBlock))
    what = "an error of" if result.is_error else "returned"
    extra = f" and {images} image{'s' if images != 1 else ''}" if images else ""
    return (
        f"{PRUNE_TAG} {_call_summary(call)} {what} {size:,} bytes, {lines:,} "
        f"line{'s' if lines != 1 else ''}{extra}; it was removed from the context to save "
        f"room; recall turn {turn_id} for the full text]"
    )


def _prunable(result: ToolResultBlock, policy: PrunePolicy) -> bool:
    text = "".join(p.text for p in result.content if isinstance(p, TextBlock))
    if PERSISTED_OUTPUT_TAG in text or text.startswith(PRUNE_TAG):
        return False
    images = any(isinstance(p, ImageBlock) for p in result.content)
    return images or _result_bytes(result) >= policy.min_result_bytes


def _recent_start(view: Sequence[Turn], policy: PrunePolicy) -> int:
    """Index of the first turn that is 'recent' (never pruned)."""
    return max(0, len(view) - max(0, policy.keep_recent_turns))


def _calls(view: Sequence[Turn], end: int) -> dict[str, ToolCallBlock]:
    return {c.id: c for t in view[:end] for c in t.tool_calls}


def _stub_turn(turn: Turn, ids: frozenset[str], calls: dict[str, ToolCallBlock]) -> Turn:
    changed = False
    blocks: list[ContentBlock] = []
    for b in turn.content:
        if isinstance(b, ToolResultBlock) and b.tool_call_id in ids:
            stub = prune_stub(calls.get(b.tool_call_id), b, turn.id)
            b = replace(b, content=(TextBlock(text=stub),))
            changed = True
        blocks.append(b)
    return replace(turn, content=tuple(blocks)) if changed else turn


def _shape_range(
    seq: tuple[Turn, ...],
    lo: int,
    hi: int,
    pruned: frozenset[str],
    memo: dict[str, tuple[Turn, Turn]] | None,
) -> list[Turn]:
    """The turns `seq[lo:hi]` with the results of `pruned` calls stubbed."""
    calls: dict[str, ToolCallBlock] | None = None
    out: list[Turn] = []
    for i in range(lo, hi):
        t = seq[i]
        if memo is not None and (hit := memo.get(t.id)) is not None and hit[0] is t:
            out.append(hit[1])
            continue
        stubbed = t
        if any(isinstance(b, ToolResultBlock) and b.tool_call_id in pruned for b in t.content):
            if calls is None:
                calls = _calls(seq, hi)
            stubbed = _stub_turn(t, pruned, calls)
        if memo is not None and stubbed is not t:
            memo[t.id] = (t, stubbed)
        out.append(stubbed)
    return out


def apply_prune(
    view: Sequence[Turn],
    pruned: frozenset[str],
    policy: PrunePolicy,
    *,
    memo: dict[str, tuple[Turn, Turn]] | None = None,
) -> tuple[Turn, ...]:
    """The view with the results of the calls in `pruned` replaced by their stubs, except in
    the newest `policy.keep_recent_turns` turns. Unchanged turns pass by reference; the input
    is returned (as a tuple) when nothing changes.

    Args:
        memo: a cache the caller keeps for one `pruned` set (clear it when the set changes):
            turn id -> (turn, its stubbed form), so that a turn stubbed once is the same
            object on every later request (the context monitor's estimates are cached by
            identity). The result is the same with or without it.
    """
    seq = view if isinstance(view, tuple) else tuple(view)
    if not pruned:
        return seq
    end = _recent_start(seq, policy)
    head = _shape_range(seq, 0, end, pruned, memo)
    if all(x is y for x, y in zip(head, seq, strict=False)):
        return seq
    return (*head, *seq[end:])


def _saving(turn: Turn, result: ToolResultBlock, call: ToolCallBlock | None) -> int:
    """Estimated tokens saved by stubbing `result` (never negative)."""
    full = message_tokens(Turn(id=turn.id, role=turn.role, content=(result,)))
    stub = prune_stub(call, result, turn.id)
    return max(0, full - -(-len(stub) // 4))


def plan_prune(
    view: Sequence[Turn],
    *,
    tokens: int,
    effective_window: int,
    policy: PrunePolicy,
    pruned: frozenset[str] = frozenset(),
    everything: bool = False,
) -> frozenset[str]:
    """Which results to prune before the next request: `pruned` plus, when the request would
    fill `policy.trigger` of the window, the oldest prunable results until the estimate drops
    to `policy.target` — if that frees at least `policy.min_chunk` of the window.

    Args:
        view: the wire view the request would carry (before pruning; markers applied).
        tokens: the request's size as the context monitor measures it (with `pruned` applied).
        effective_window: the window minus the output reserve, in tokens.
        policy: the thresholds.
        pruned: the ids pruned so far.
        everything: prune every prunable result outside the recent turns whatever the
            pressure (the cache has expired anyway: idle compaction).

    Returns:
        A superset of `pruned` (the same object when nothing is added).
    """
    eff = max(1, effective_window)
    if not everything and tokens < policy.trigger * eff:
        return pruned
    need = tokens - policy.target * eff
    end = _recent_start(view, policy)
    calls = _calls(view, end)
    chosen: list[str] = []
    saved = 0
    for turn in view[:end]:
        for r in turn.tool_results:
            if r.tool_call_id in pruned or not _prunable(r, policy):
                continue
            chosen.append(r.tool_call_id)
            saved += _saving(turn, r, calls.get(r.tool_call_id))
            if not everything and saved >= need:
                break
        else:
            continue
        break
    if not chosen:
        return pruned
    if not everything and saved < policy.min_chunk * eff:
        return pruned
    return pruned | frozenset(chosen)


def plan_rescue(
    view: Sequence[Turn], *, tokens: int, goal: int, min_result_bytes: int = 1_024
) -> frozenset[str]:
    """The last resort before the runaway guard stops a run: which tool results to stub,
    anywhere in the view (the newest turns and the running tool loop included), largest first,
    until the estimate drops to `goal` tokens. Empty when `tokens` <= `goal` or nothing can be
    stubbed. One reply with many parallel calls whose results together exceed the window
    (trial5) is the case: the summary pass keeps the running round whole, so without this the
    session stops there on every resume. Each stub names its turn for `recall` (nothing is
    lost: the stored turns keep every result whole).

    Args:
        view: the wire view as it would be sent (pruning and the tail strategy applied).
        tokens: its size as the context monitor measures it.
        goal: the size to bring it down to (tokens).
        min_result_bytes: results smaller than this are never stubbed.
    """
    if tokens <= goal:
        return frozenset()
    keep = PrunePolicy(min_result_bytes=min_result_bytes)
    calls = _calls(view, len(view))
    found: list[tuple[int, int, str]] = []
    for i, turn in enumerate(view):
        for r in turn.tool_results:
            if _prunable(r, keep):
                found.append((_saving(turn, r, calls.get(r.tool_call_id)), i, r.tool_call_id))
    found.sort(key=lambda x: (-x[0], x[1]))
    chosen: list[str] = []
    need = tokens - goal
    for saving, _, call_id in found:
        if need <= 0 or saving <= 0:
            break
        chosen.append(call_id)
        need -= saving
    return frozenset(chosen)


def apply_rescue(view: Sequence[Turn], ids: frozenset[str]) -> tuple[Turn, ...]:
    """The view with the results of the calls in `ids` stubbed wherever they are (`plan_rescue`),
    unchanged turns passed by reference."""
    seq = view if isinstance(view, tuple) else tuple(view)
    if not ids:
        return seq
    out = _shape_range(seq, 0, len(seq), ids, None)
    if all(x is y for x, y in zip(out, seq, strict=True)):
        return seq
    return tuple(out)


def pruned_results(view: Sequence[Turn]) -> int:
    """How many tool results of `view` (as sent) are prune stubs."""
    return sum(
        1
        for t in view
        for r in t.tool_results
        if any(isinstance(p, TextBlock) and p.text.startswith(PRUNE_TAG) for p in r.content)
    )


class Pruner:
    """The pruning state of one session: the pruned ids and the memo of stubbed turns
    (pure: no I/O, no clock; the caller passes the pressure in).

    Use before every request, with `view` the wire view (markers applied):

        pressure = monitor.peek(pruner.shape(view))
        if pruner.step(view, tokens=pressure.tokens, effective_window=pressure.effective_window):
            monitor.reshaped(pruner.shape(view))     # the prefix changed: re-measure
        ... send pruner.shape(view) ...

    Args:
        policy: the thresholds (`PrunePolicy`).
    """

    def __init__(self, policy: PrunePolicy) -> None:
        self.policy = policy
        self._ids: frozenset[str] = frozenset()
        self._memo: dict[str, tuple[Turn, Turn]] = {}
        self._last: tuple[tuple[Turn, ...], tuple[Turn, ...]] = ((), ())  # (view, shaped)

    @property
    def ids(self) -> frozenset[str]:
        """The tool-call ids whose results are pruned (only grows)."""
        return self._ids

    def shape(self, view: Sequence[Turn]) -> tuple[Turn, ...]:
        """`view` with the pruned results stubbed (`apply_prune`).

        Incremental: when `view` extends the view shaped last (its prefix holds the same
        turns, compared at C speed), only the turns that left the recent window since are
        looked at, so a request costs O(new turns) Python work."""
        seq = view if isinstance(view, tuple) else tuple(view)
        if not self._ids:
            return seq
        last_in, last_out = self._last
        n = len(last_in)
        if n and len(seq) >= n and seq[:n] == last_in:
            # equal turns stub equally: the shaped prefix of the last call stands
            old_end, new_end = _recent_start(last_in, self.policy), _recent_start(seq, self.policy)
            fresh = _shape_range(seq, old_end, new_end, self._ids, self._memo)
            out = (*last_out[:old_end], *fresh, *seq[new_end:])
        else:
            out = apply_prune(seq, self._ids, self.policy, memo=self._memo)
        self._last = (seq, out)
        return out

    def step(
        self, view: Sequence[Turn], *, tokens: int, effective_window: int, everything: bool = False
    ) -> bool:
        """Prune what `plan_prune` says; True when the set grew (the view's prefix changed)."""
        ids = plan_prune(
            view,
            tokens=tokens,
            effective_window=effective_window,
            policy=self.policy,
            pruned=self._ids,
            everything=everything,
        )
        if ids == self._ids:
            return False
        self._ids = ids
        self._memo.clear()
        self._last = ((), ())
        return True
