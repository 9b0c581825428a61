"""Pairing repair: the tool_use <-> tool_result adjacency contract (the fourth wire pass).

Owns: repairing a history so that every tool call is answered exactly once, right after it; the
rendering of empty content (no empty text block reaches the wire); role alternation; and the
validator `check_pairing`.
Does not own: ids (`tether.wire.ids` makes them valid and unique first), the view's last turn
(`tether.wire.tail`), nor producing results at interrupt time (`tether.wire.resume`).

The contract (sources: Anthropic "`tool_use` ids were found without `tool_result` blocks
immediately after" and "unexpected `tool_use_id` found in `tool_result` blocks: ... Each
`tool_result` block must have a corresponding `tool_use` block in the previous message";
Anthropic's tool-use guide: in the user message holding tool results, the tool_result blocks come
first; OpenAI "messages with role 'tool' must be a response to a preceding message with
'tool_calls'" and "An assistant message with 'tool_calls' must be followed by tool messages
responding to each 'tool_call_id'"; it must hold after an interrupt during tool execution, an
empty tool output or a trimmed history):

    * every tool call of an assistant turn has exactly one result, and all of them stand, in
      the calls' order, at the front of the `user` turn immediately after it;
    * every result stands in such a turn (its call is in the immediately preceding turn);
    * calls appear only in assistant turns, results only in user turns;
    * a turn holds only blocks its role can carry on every target (`CARRIED`: user text,
      images, documents and results; assistant text, thinking and calls; system text): others
      are removed, so no adapter drops a block and leaves an empty message;
    * no blank text block anywhere (Anthropic: "text content blocks must be non-empty" /
      "must contain non-whitespace text", anthropic-sdk-go#377): blank text blocks are removed,
      and a result with no non-blank part is rendered as the text `(no output)` (storage keeps
      it empty);
    * roles alternate: two adjacent `user` turns are merged (results first); two adjacent
      `assistant` turns are merged when their provenance is equal (so a merged turn's
      provider-bound blocks keep the right owner), else a `user` "Continue." turn is put between
      them; a turn left empty by a repair becomes a neutral placeholder `(no content)` when it
      separates two turns, and disappears when it would be merged; the first non-system turn is
      a `user` turn (Gemini: "First content should be with role 'user'"), a placeholder is put
      before a leading assistant turn. System turns stay where they are and are not merged; an
      empty system turn is removed.

Repairs (each reported to `on_repair` as a `Repair`, or raised as `WireError` when `strict`):
    missing_result     a call without result gets an is_error result "the result of this call
                       was lost"
    orphan_result      a result whose call is not in the preceding assistant turn is removed
    moved_result       a result found further away (before the next assistant turn with calls)
                       is moved into the results turn
    duplicate_result   a second result for the same call is removed (the first is kept)
    reordered_results  results not in their calls' order, or behind other blocks, are reordered
    duplicate_call     a repeated call id within one assistant turn: the repeat is removed
    misplaced_call     a tool call outside an assistant turn is removed
    invalid_signature  (reported by the reasoning pass) a Gemini thought signature that is not
                       base64 is dropped instead of failing the request
Merging, placeholders and empty-result rendering are normalisations, not repairs.

Algorithm: one front-to-back pass over *segments*: a segment starts at an assistant turn with
calls and spans the turns up to the next such turn; every result in it either answers that
turn's calls (first one kept) or is removed. A segment's output depends only on its own turns
and on the last turn emitted before it, which is what lets `ViewBuilder` rebuild only the last
segment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from tether.errors import WireError
from tether.messages import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.wire._util import blank, with_content

RepairKind = Literal[
    "missing_result",
    "orphan_result",
    "moved_result",
    "duplicate_result",
    "reordered_results",
    "duplicate_call",
    "misplaced_call",
    "invalid_signature",
]

LOST_RESULT_TEXT = (
    "The result of this call was lost (it was never recorded); the tool may or may not have run."
)
NO_OUTPUT_TEXT = "(no output)"
PLACEHOLDER_TEXT = "(no content)"
CONTINUE_TEXT = "Continue from where you stopped."

ADDED_ID_SUFFIXES = ("~results", "~gap", "~head", "~continue", "~user")
"""The id suffixes of the turns the wire passes add (`<stored id>~gap`, ...): results for calls
that had none (`~results`), the `Continue from where you stopped.` user turn between two
assistant turns (`~gap`) and at the end (`~continue`, `tether.wire.tail`), the `(no content)`
user turn before a first assistant turn (`~head`) or in a view with none (`~user`)."""


def added_by_tether(turn: Turn) -> bool:
    """Whether a wire-view turn is one the passes added (`ADDED_ID_SUFFIXES`), not a stored
    turn: what a view shown to the user marks, since nobody typed it."""
    return turn.id.endswith(ADDED_ID_SUFFIXES)

_ASSISTANT: frozenset[type] = frozenset(
    {TextBlock, ThinkingBlock, RedactedThinkingBlock, ToolCallBlock, ServerToolBlock}
)
CARRIED: dict[str, frozenset[type]] = {
    "user": frozenset({TextBlock, ImageBlock, DocumentBlock}),
    "assistant": _ASSISTANT,
    "system": frozenset({TextBlock}),
}
"""The block types a turn of each role keeps on the wire (results are handled apart): what
every adapter can send in that role. Anything else (thinking in a user turn, an image in an
assistant turn, ...) would be dropped by the adapter and could leave an empty message, an
assistant-first or an assistant-last request (all rejected), so the view never holds it."""

_NO_OUTPUT: tuple[TextBlock, ...] = (TextBlock(text=NO_OUTPUT_TEXT),)
_PLACEHOLDER: tuple[ContentBlock, ...] = (TextBlock(text=PLACEHOLDER_TEXT),)


@dataclass(frozen=True, slots=True, kw_only=True)
class Repair:
    """One repair made by the pairing pass.

    Attributes:
        kind: what was wrong (see the module docstring).
        turn_id: the stored turn the repair concerns (the assistant turn for a missing result).
        tool_call_id: the call concerned, when there is one.
        message: a human-readable sentence.
    """

    kind: RepairKind
    turn_id: str
    tool_call_id: str | None
    message: str


RepairHook = Callable[[Repair], None]


class Reporter:
    """Routes repairs to a hook, or raises `WireError` in strict mode."""

    __slots__ = ("hook", "strict")

    def __init__(self, hook: RepairHook | None = None, strict: bool = False) -> None:
        self.hook = hook
        self.strict = strict

    def __call__(self, kind: RepairKind, turn_id: str, call_id: str | None, message: str) -> None:
        if self.strict:
            raise WireError(kind, f"{message} (turn {turn_id!r}, call {call_id!r})")
        if self.hook is not None:
            self.hook(Repair(kind=kind, turn_id=turn_id, tool_call_id=call_id, message=message))


def has_calls(turn: Turn) -> bool:
    """True when `turn` is an assistant turn holding a tool call."""
    if turn.role != "assistant":
        return False
    for b in turn.content:  # noqa: SIM110 - a plain loop is faster than any() here
        if type(b) is ToolCallBlock:
            return True
    return False


def render_result(r: ToolResultBlock) -> ToolResultBlock:
    """`r` without blank text parts, `(no output)` when nothing is left (`r` itself if clean)."""
    parts = r.content
    if not parts:
        return replace(r, content=_NO_OUTPUT)
    for p in parts:
        if type(p) is TextBlock and blank(p.text):
            break
    else:
        return r
    kept = tuple(p for p in parts if not (type(p) is TextBlock and blank(p.text)))
    return replace(r, content=kept or _NO_OUTPUT)


def _lost(call_id: str) -> ToolResultBlock:
    return ToolResultBlock(
        tool_call_id=call_id, content=(TextBlock(text=LOST_RESULT_TEXT),), is_error=True
    )


class Pairing:
    """The streaming state of the pairing pass (used by `repair_pairing` and `ViewBuilder`).

    `run(turns, start)` processes `turns[start:]` and appends to `out`. Before each segment it
    records a checkpoint `(index, len(out), out[-1], started)` so that a caller can `restore()`
    it and re-run the last, still open, segment when more turns arrive.
    """

    __slots__ = ("checkpoint", "out", "report", "started")

    def __init__(self, report: Reporter) -> None:
        self.out: list[Turn] = []
        self.report = report
        self.started = False
        self.checkpoint: tuple[int, int, Turn | None, bool] | None = None

    def restore(self) -> int:
        """Rewind `out` to the last checkpoint; returns the index to re-run from."""
        assert self.checkpoint is not None
        index, size, last, started = self.checkpoint
        del self.out[size:]
        if last is not None:
            self.out[-1] = last
        self.started = started
        return index

    def run(self, turns: Sequence[Turn], start: int = 0) -> None:
        """Process `turns[start:]` (start is 0, a segment start, or the end of a closed run)."""
        n = len(turns)
        i = start
        out = self.out
        segment = i < n and has_calls(turns[i])
        while i < n:
            if segment:
                j = i + 1
                while j < n and not has_calls(turns[j]):
                    j += 1
                self.checkpoint = (i, len(out), out[-1] if out else None, self.started)
                self._segment(turns, i, j)
                i = j
            else:
                self._emit(self._plain(turns[i], report_results=True))
                i += 1
                segment = i < n and has_calls(turns[i])

    # -- per-turn cleaning -------------------------------------------------------------------

    def _clean(self, t: Turn, *, report_results: bool) -> tuple[ContentBlock, ...] | None:
        """`t`'s content without results, misplaced calls, blank text and blocks its role
        cannot carry on any target (`CARRIED`); None if unchanged."""
        role = t.role
        content = t.content
        carried = CARRIED[role]
        for b in content:
            if type(b) is TextBlock:
                if not b.text or b.text.isspace():
                    break
            elif type(b) not in carried:
                break
        else:
            return None
        kept: list[ContentBlock] = []
        for b in content:
            if type(b) is TextBlock:
                if blank(b.text):
                    continue
            elif type(b) is ToolResultBlock:
                if report_results:
                    self.report(
                        "orphan_result",
                        t.id,
                        b.tool_call_id,
                        "removed a tool result whose call is not in the preceding assistant turn",
                    )
                continue
            elif type(b) is ToolCallBlock and role != "assistant":
                self.report("misplaced_call", t.id, b.id, f"removed a tool call from a {role} turn")
                continue
            elif type(b) not in carried:
                continue
            kept.append(b)
        return tuple(kept)

    def _plain(self, t: Turn, *, report_results: bool) -> Turn:
        """`t` cleaned by `_clean` (itself when already clean)."""
        content = self._clean(t, report_results=report_results)
        return t if content is None else with_content(t, content)

    # -- one segment: an assistant turn with calls and the turns up to the next one --------

    def _segment(self, turns: Sequence[Turn], i: int, j: int) -> None:
        """Emit the segment `turns[i:j]` (`turns[i]` holds calls, no later turn does): the
        assistant turn cleaned, one user turn with every call's result first (in call order),
        then the window's other turns cleaned. Repairs are reported in that order."""
        t = turns[i]
        a, calls, ids = self._assistant(t)
        base = turns[i + 1] if i + 1 < j and turns[i + 1].role == "user" else None
        found, base_order, late, base_other = self._gather(turns, i, j, ids, base)
        rest: tuple[ContentBlock, ...] = ()
        if base is not None:
            if late or (
                base_order != [c.id for c in calls][: len(base_order)]
                and base_order != [c.id for c in calls if c.id in set(base_order)]
            ):
                self.report(
                    "reordered_results",
                    base.id,
                    None,
                    "put the results first, in their calls' order",
                )
            if base_other:
                cleaned = self._clean(base, report_results=False)
                rest = base.content if cleaned is None else cleaned
        results: list[ContentBlock] = []
        for c in calls:  # one result per call, in call order
            r = found.get(c.id)
            if r is None:
                self.report(
                    "missing_result", t.id, c.id, "added an error result for a call that had none"
                )
                results.append(_lost(c.id))
            else:
                results.append(render_result(r))
        content = (*results, *rest)
        if base is not None:
            # `==` compares by identity first: cheap when nothing moved.
            rt = base if base.content == content else with_content(base, content)
        else:
            rt = Turn(id=f"{t.id}~results", role="user", content=content)
        self._emit(a)
        self.out.append(rt)
        for k in range(i + 2 if base is not None else i + 1, j):
            self._emit(self._plain(turns[k], report_results=False))

    def _assistant(self, t: Turn) -> tuple[Turn, list[ToolCallBlock], set[str]]:
        """The assistant turn `t` with unique call ids, no results, no blank text and only the
        blocks an assistant turn carries (`t` itself when clean), its calls in order and their
        ids."""
        calls: list[ToolCallBlock] = []
        seen: set[str] = set()
        dirty = False
        for b in t.content:
            if type(b) is ToolCallBlock:
                if b.id in seen:
                    dirty = True
                else:
                    seen.add(b.id)
                    calls.append(b)
            elif type(b) is TextBlock:
                dirty = dirty or blank(b.text)
            elif type(b) not in _ASSISTANT:
                dirty = True
        if not dirty:
            return t, calls, seen
        report = self.report
        kept: list[ContentBlock] = []
        seen.clear()
        for b in t.content:
            if type(b) is ToolCallBlock:
                if b.id in seen:
                    report("duplicate_call", t.id, b.id, "removed a repeated tool call id")
                    continue
                seen.add(b.id)
            elif type(b) is ToolResultBlock:
                report(
                    "orphan_result",
                    t.id,
                    b.tool_call_id,
                    "removed a result from an assistant turn",
                )
                continue
            elif (type(b) is TextBlock and blank(b.text)) or type(b) not in _ASSISTANT:
                continue
            kept.append(b)
        return with_content(t, tuple(kept)), calls, seen

    def _gather(
        self,
        turns: Sequence[Turn],
        i: int,
        j: int,
        ids: set[str],
        base: Turn | None,
    ) -> tuple[dict[str, ToolResultBlock], list[str], bool, bool]:
        """The first result of each call (`ids`) found in the window `turns[i+1:j]` (orphans and
        repeats reported and left out), with what the base turn (`turns[i+1]` when it is a
        user turn, else None) tells: the call ids of its results in its order, whether one of
        them comes after another block (late), and whether it holds a block besides results."""
        report = self.report
        found: dict[str, ToolResultBlock] = {}
        base_order: list[str] = []
        late = False
        base_other = False
        for k in range(i + 1, j):
            u = turns[k]
            in_base = base is not None and k == i + 1
            other = False
            for b in u.content:
                if type(b) is not ToolResultBlock:
                    if in_base:
                        base_other = True
                    other = other or not (type(b) is TextBlock and blank(b.text))
                    continue
                cid = b.tool_call_id
                if cid not in ids:
                    report(
                        "orphan_result",
                        u.id,
                        cid,
                        "removed a result whose call is not in the preceding assistant turn",
                    )
                elif cid in found:
                    report(
                        "duplicate_result", u.id, cid, "removed a second result for the same call"
                    )
                else:
                    found[cid] = b
                    if in_base:
                        base_order.append(cid)
                        late = late or other
                    else:
                        report("moved_result", u.id, cid, "moved a result next to its call")
        return found, base_order, late, base_other

    # -- emission: alternation and placeholders -----------------------------------------------

    def _emit(self, t: Turn) -> None:
        out = self.out
        if t.role == "system":
            if t.content:
                out.append(t)
            return
        if out and out[-1].role == t.role:
            prev = out[-1]
            if not t.content:
                return
            if prev.content == _PLACEHOLDER:
                out[-1] = t
            elif t.role == "user" or prev.provenance == t.provenance:
                out[-1] = with_content(prev, prev.content + t.content)
            else:
                out.append(
                    Turn(id=f"{prev.id}~gap", role="user", content=(TextBlock(text=CONTINUE_TEXT),))
                )
                out.append(t)
            return
        if not t.content:
            t = with_content(t, _PLACEHOLDER)
        if not self.started:
            self.started = True
            if t.role == "assistant":
                out.append(Turn(id=f"{t.id}~head", role="user", content=_PLACEHOLDER))
        out.append(t)


def repair_pairing(
    turns: tuple[Turn, ...], *, on_repair: RepairHook | None = None, strict: bool = False
) -> tuple[Turn, ...]:
    """Repair the tool_use <-> tool_result contract and role alternation (fourth wire pass).

    Args:
        turns: the view so far (ids already valid and unique for the target, see
            `sanitize_tool_ids`).
        on_repair: called once per repair, in order (see the module docstring for the kinds).
        strict: raise `tether.errors.WireError` (with the repair's kind) at the first repair
            instead of repairing.

    Returns:
        The input tuple itself when it already satisfies the contract; otherwise a new tuple in
        which untouched turns are the same objects.
    """
    p = Pairing(Reporter(on_repair, strict))
    p.run(turns)
    out = p.out
    if len(out) == len(turns) and all(x is y for x, y in zip(out, turns, strict=True)):
        return turns
    return tuple(out)


def check_pairing(turns: Sequence[Turn]) -> list[str]:
    """Validate the pairing contract and alternation; returns the problems found (none = ok).

    Checks everything `repair_pairing` guarantees (module docstring), so it can vet any view or
    trimmed window (a trimmed history must not split a call from its result).
    """
    problems: list[str] = []
    prev_ns: Turn | None = None
    for idx, t in enumerate(turns):
        for b in t.content:
            if type(b) is TextBlock and blank(b.text):
                problems.append(f"turn {idx}: blank text block")
            elif type(b) is ToolResultBlock:
                if not any(not (type(p) is TextBlock and blank(p.text)) for p in b.content):
                    problems.append(f"turn {idx}: empty result for {b.tool_call_id}")
                if any(type(p) is TextBlock and blank(p.text) for p in b.content):
                    problems.append(f"turn {idx}: blank text part in result {b.tool_call_id}")
            elif type(b) is ToolCallBlock and t.role != "assistant":
                problems.append(f"turn {idx}: tool call in a {t.role} turn")
        if t.role == "system":
            continue
        if not t.content:
            problems.append(f"turn {idx}: empty {t.role} turn")
        if prev_ns is None and t.role != "user":
            problems.append(f"turn {idx}: the first non-system turn is not a user turn")
        if idx > 0 and turns[idx - 1].role == t.role:
            problems.append(f"turn {idx}: two adjacent {t.role} turns")
        prev_ns = t
        results = [b for b in t.content if type(b) is ToolResultBlock]
        if t.role != "user":
            if results:
                problems.append(f"turn {idx}: tool result in a {t.role} turn")
            continue
        lead = [b.tool_call_id for b in t.content[: len(results)] if type(b) is ToolResultBlock]
        if len(lead) != len(results):
            problems.append(f"turn {idx}: results are not at the front of the turn")
        prev = turns[idx - 1] if idx > 0 else None
        expected = (
            [c.id for c in prev.tool_calls] if prev is not None and prev.role == "assistant" else []
        )
        if [b.tool_call_id for b in results] != expected:
            problems.append(
                f"turn {idx}: results {[b.tool_call_id for b in results]} do not answer calls {expected} of the preceding turn in order"
            )
    for idx, t in enumerate(turns):
        if t.role == "assistant" and t.tool_calls:
            ids = [c.id for c in t.tool_calls]
            if len(set(ids)) != len(ids):
                problems.append(f"turn {idx}: repeated call ids {ids}")
            nxt = turns[idx + 1] if idx + 1 < len(turns) else None
            if nxt is None or nxt.role != "user":
                problems.append(f"turn {idx}: calls {ids} are not followed by a user results turn")
    return problems
