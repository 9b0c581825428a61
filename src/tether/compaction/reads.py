"""Stale-read elision and read dedup in the wire view (pure).

Owns:
    * `FileRules` and `touched`: the ONE detection of which path a call read or changed (the
      tool names, the path argument, success = a result that is not an error, the path
      normalized against the working folder). The stale-read notice
      (`tether.tools.exec.hygiene`), the elision below and the read-state map
      (`tether.tools.exec.read_state`) all call it, so they never drift on what counts as a
      read or a change.
    * `stale_stub` and `StaleReads`: a `read` result of a path that a LATER successful
      mutation (`write`, `edit`: whatever `FileRules.writes` names) changed is replaced by a
      byte-stable stub naming the call that changed it, and saying that `read` gets the
      current content and `recall` the old one. Only turns before a boundary change: the
      boundary keeps the newest `keep_recent_turns` turns (the tool loop in progress) out of
      reach and advances in steps of `step_turns`, so the request's prefix changes at most once
      per step (prompt cache); the read and the mutation must both lie before it. Reads after
      the mutation are current and kept.
    * `dedup_stub` and `ReadDedup`: a `read` result the read-state map judged an identical
      re-read of an unchanged file (same path and slice, same mtime and size) is replaced by a
      short note pointing at the earlier read — only while that earlier read's result is in
      the view, byte for byte equal to this one. When the earlier result was pruned,
      shortened, elided as stale or compacted away, the re-read goes out in full: the model is
      never told "above" when it is not above.

Wire view only: the stored turns keep every byte (`recall` reads them). Both passes are
incremental like `tether.compaction.prune.Pruner.shape`: when the view extends the one shaped
last, only the new turns are looked at (`looked_at` counts them; a test checks it), and a
changed prefix (a compaction, a prune step) is shaped again from the start.

Imports only `tether.messages` and this package; no I/O, no clock; inputs are never mutated.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tether.messages import ContentBlock, TextBlock, ToolCallBlock, ToolResultBlock, Turn

STALE_TAG = "[stale read:"
"""How every stale-read stub starts."""

DEDUP_TAG = "[unchanged read:"
"""How every dedup note starts."""


def _reads() -> dict[str, str]:
    return {"read": "path"}


def _writes() -> dict[str, str]:
    return {"write": "path", "edit": "path"}


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRules:
    """Which tools read and which change files.

    Attributes:
        reads: tool name → the argument holding the path it reads.
        writes: tool name → the argument holding the path it changes.
        root: the working folder relative paths are joined to (string operations only).
    """

    reads: Mapping[str, str] = field(default_factory=_reads)
    writes: Mapping[str, str] = field(default_factory=_writes)
    root: str = "/"


def _path(call: ToolCallBlock, arg: str | None, root: str) -> str | None:
    value = call.arguments.get(arg) if arg is not None else None
    if not isinstance(value, str) or not value:
        return None
    return posixpath.normpath(posixpath.join(root, value))


def touched(call: ToolCallBlock, *, ok: bool, rules: FileRules) -> tuple[str | None, str | None]:
    """(the path `call` read, the path it changed), normalized; (None, None) when the call
    failed (`ok` False: its result is an error).

    >>> touched(ToolCallBlock(id="c", name="edit", arguments={"path": "./a.py"}), ok=True,
    ...         rules=FileRules(root="/w"))
    (None, '/w/a.py')
    """
    if not ok:
        return None, None
    return (
        _path(call, rules.reads.get(call.name), rules.root),
        _path(call, rules.writes.get(call.name), rules.root),
    )


def _shown(call: ToolCallBlock, arg: str) -> str:
    value = call.arguments.get(arg)
    return value if isinstance(value, str) else "?"


def stale_stub(
    read: ToolCallBlock, read_turn_id: str, change: ToolCallBlock, change_turn_id: str
) -> str:
    """The text that replaces a stale read's result (a pure function of its arguments: the
    same bytes on every request).

    >>> stale_stub(ToolCallBlock(id="r1", name="read", arguments={"path": "a.py"}), "u3",
    ...            ToolCallBlock(id="e1", name="edit", arguments={"path": "a.py"}), "u5")
    ... # doctest: +NORMALIZE_WHITESPACE
    '[stale read: this output of `read a.py` is out of date: the later `edit` call e1 (turn
    u5) changed the file. Call `read` for the current content, or `recall` turn u3 for this
    old output.]'
    """
    return (
        f"{STALE_TAG} this output of `{read.name} {_shown(read, 'path')}` is out of date: the "
        f"later `{change.name}` call {change.id} (turn {change_turn_id}) changed the file. "
        f"Call `read` for the current content, or `recall` turn {read_turn_id} for this old "
        "output.]"
    )


def dedup_stub(read: ToolCallBlock, earlier: ToolCallBlock, earlier_turn_id: str) -> str:
    """The text that replaces an unchanged re-read's result (pure, byte-stable).

    >>> dedup_stub(ToolCallBlock(id="r2", name="read", arguments={"path": "a.py"}),
    ...            ToolCallBlock(id="r1", name="read", arguments={"path": "a.py"}), "u3")
    ... # doctest: +NORMALIZE_WHITESPACE
    '[unchanged read: a.py has not changed since your `read` call r1 in turn u3 (same lines);
    its output is above, word for word. `recall` turn u3 if you cannot find it.]'
    """
    return (
        f"{DEDUP_TAG} {_shown(read, 'path')} has not changed since your `{earlier.name}` call "
        f"{earlier.id} in turn {earlier_turn_id} (same lines); its output is above, word for "
        f"word. `recall` turn {earlier_turn_id} if you cannot find it.]"
    )


def _with_results(turn: Turn, texts: Mapping[str, str]) -> Turn:
    """`turn` with the results of the calls in `texts` replaced by those texts."""
    changed = False
    blocks: list[ContentBlock] = []
    for b in turn.content:
        if isinstance(b, ToolResultBlock) and b.tool_call_id in texts:
            text = texts[b.tool_call_id]
            if not (len(b.content) == 1 and b.content[0] == TextBlock(text=text)):
                b = replace(b, content=(TextBlock(text=text),))
                changed = True
        blocks.append(b)
    return replace(turn, content=tuple(blocks)) if changed else turn


def _extends(seq: tuple[Turn, ...], last: tuple[Turn, ...]) -> bool:
    n = len(last)
    return bool(n) and len(seq) >= n and seq[:n] == last


# --- stale-read elision -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StalePolicy:
    """Where stale reads are elided.

    Attributes:
        keep_recent_turns: the newest turns are never changed (the tool loop in progress: the
            model just got the stale notice there, and its prefix stays cached).
        step_turns: the boundary before which reads are elided advances in steps of this many
            turns (the request's prefix changes at most once per step).
    """

    keep_recent_turns: int = 6
    step_turns: int = 8


def stale_boundary(n: int, policy: StalePolicy) -> int:
    """The index before which stale reads are elided in a view of `n` turns."""
    step = max(1, policy.step_turns)
    return max(0, (n - max(0, policy.keep_recent_turns)) // step * step)


class StaleReads:
    """The stale-read elision of one session (pure; state kept between requests).

    Args:
        rules: what reads and what changes a file (`touched`).
        policy: the boundary (`StalePolicy`).
    """

    def __init__(self, rules: FileRules, policy: StalePolicy | None = None) -> None:
        self.rules = rules
        self.policy = policy or StalePolicy()
        self.looked_at = 0
        """Turns examined so far (for tests: a request costs O(new turns))."""
        self._reset()

    def _reset(self) -> None:
        self._last: tuple[Turn, ...] = ()
        self._done = 0  # turns before this index are processed (and in `_out`)
        self._out: list[Turn] = []
        self._calls: dict[str, tuple[ToolCallBlock, str]] = {}  # id -> (call, turn id)
        self._open: dict[str, list[tuple[str, int]]] = {}  # path -> (read id, result index)
        self._stubs: dict[int, dict[str, str]] = {}  # result index -> {read id: stub}
        self._reading: dict[str, tuple[ToolCallBlock, str]] = {}  # read id -> (call, turn id)

    def _take(self, i: int, turn: Turn) -> None:
        self.looked_at += 1
        self._out.append(turn)
        for c in turn.tool_calls:
            self._calls[c.id] = (c, turn.id)
        for r in turn.tool_results:
            found = self._calls.pop(r.tool_call_id, None)
            if found is None:
                continue
            call, _ = found
            read, written = touched(call, ok=not r.is_error, rules=self.rules)
            if written is not None:
                for read_id, at in self._open.pop(written, ()):
                    rcall, rturn = self._reading[read_id]
                    stub = stale_stub(rcall, rturn, call, turn.id)
                    self._stubs.setdefault(at, {})[read_id] = stub
                    self._out[at] = _with_results(self._out[at], self._stubs[at])
            if read is not None:
                self._reading[call.id] = (call, turn.id)
                self._open.setdefault(read, []).append((call.id, i))

    def shape(self, view: Sequence[Turn]) -> tuple[Turn, ...]:
        """`view` with stale reads before the boundary replaced by their stubs. Unchanged
        turns pass by reference; the input comes back (as a tuple) when nothing changes."""
        seq = view if isinstance(view, tuple) else tuple(view)
        done = self._done  # only the processed turns must be the same (the rest is read anew)
        if len(seq) < done or seq[:done] != self._last[:done]:
            self._reset()
        end = stale_boundary(len(seq), self.policy)
        for i in range(self._done, end):
            self._take(i, seq[i])
        self._done = max(self._done, end)
        self._last = seq
        if not self._stubs:
            return seq
        done = self._done
        return (*self._out[:done], *seq[done:])


def elide_stale_reads(
    view: Sequence[Turn], rules: FileRules, policy: StalePolicy | None = None
) -> tuple[Turn, ...]:
    """The whole pass at once (`StaleReads` on a fresh state)."""
    return StaleReads(rules, policy).shape(view)


# --- read dedup -------------------------------------------------------------------------------


def read_key(call: ToolCallBlock, rules: FileRules) -> str | None:
    """What makes two reads "the same read": the normalized path and every other argument
    (the slice), as canonical JSON; None for a call that is not a read."""
    arg = rules.reads.get(call.name)
    path = _path(call, arg, rules.root)
    if path is None:
        return None
    rest = {k: v for k, v in call.arguments.items() if k != arg}
    return json.dumps([call.name, path, rest], sort_keys=True, ensure_ascii=False, default=str)


class ReadDedup:
    """The read dedup of one session's wire view (pure; state kept between requests).

    Run it after every pass that may remove or shorten a result (pruning, the tail strategy),
    so that "the earlier output is above" is checked against what the request carries, and
    before `StaleReads`: a note and the output it points at are never separated by a change of
    the file (a change in between makes the re-read count as new), so when a later change
    elides the earlier output as stale, it elides the note too (both are reads of the path
    before that change). The stale pass's own steps then never make this pass start over.

    Args:
        rules: what reads a file (`read_key`).
        unchanged: the ids of read calls the read-state map judged identical re-reads of an
            unchanged file (`tether.tools.exec.read_state.ReadState.unchanged`; it only grows).
    """

    def __init__(self, rules: FileRules, unchanged: Callable[[], Collection[str]]) -> None:
        self.rules = rules
        self.unchanged = unchanged
        self.looked_at = 0
        """Turns examined so far (for tests: a request costs O(new turns))."""
        self._reset()

    def _reset(self) -> None:
        self._last: tuple[Turn, ...] = ()
        self._out: list[Turn] = []
        self._calls: dict[str, tuple[ToolCallBlock, str]] = {}
        self._full: dict[str, tuple[ToolCallBlock, str, ToolResultBlock, str]] = {}
        self._any = False

    def _take(self, turn: Turn, unchanged: Collection[str]) -> Turn:
        self.looked_at += 1
        for c in turn.tool_calls:
            self._calls[c.id] = (c, turn.id)
        texts: dict[str, str] = {}
        for r in turn.tool_results:
            found = self._calls.pop(r.tool_call_id, None)
            if found is None:
                continue
            call, _ = found
            read, written = touched(call, ok=not r.is_error, rules=self.rules)
            if written is not None:  # a change in between: no earlier output stands for it
                for k in [k for k, v in self._full.items() if v[3] == written]:
                    del self._full[k]
            key = read_key(call, self.rules) if read is not None else None
            if read is None or key is None:
                continue
            earlier = self._full.get(key)
            if earlier is not None and call.id in unchanged and earlier[2].content == r.content:
                texts[r.tool_call_id] = dedup_stub(call, earlier[0], earlier[1])
            else:
                self._full[key] = (call, turn.id, r, read)
        if not texts:
            return turn
        self._any = True
        return _with_results(turn, texts)

    def shape(self, view: Sequence[Turn]) -> tuple[Turn, ...]:
        """`view` with unchanged re-reads replaced by their notes (see the class). Unchanged
        turns pass by reference; the input comes back (as a tuple) when nothing changes."""
        seq = view if isinstance(view, tuple) else tuple(view)
        if not _extends(seq, self._last):
            self._reset()
        unchanged = self.unchanged()
        for t in seq[len(self._out) :]:
            self._out.append(self._take(t, unchanged))
        self._last = seq
        return tuple(self._out) if self._any else seq
