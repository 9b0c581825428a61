"""The wire view: stored turns -> the turns one provider request carries.

Owns: the fixed order of the wire passes (`build_view`) and its incremental twin
(`ViewBuilder`).
Does not own: any pass's rules (see `markers`, `reasoning`, `ids`, `pairing`, `tail`), nor the
vendor request format (`tether.providers`).

Shapes:
    build_view(turns: tuple[Turn, ...], target, *, supports_prefill=False, route=None,
               vendor_endpoint=False, on_repair=None, strict=False) -> tuple[Turn, ...]
    ViewBuilder(target, ...).view(turns) -> tuple[Turn, ...]   # == build_view(turns, ...)

Passes, in this order (docs/architecture.md, "One turn"):
    1. marker elision             `elide_markers`; the turns the newest marker preserved
                                  without their thinking (`replayed_thinking_ids`); a
                                  cancelled request's stored turn rendered as its
                                  interruption note (`render_interrupts`); an image
                                  whose data is not the image it says replaced by a note
                                  (`images.drop_unreadable_images`, verdict cached per block)
    2. reasoning wire action       `sanitize_history_for_provider(target, route,
                                  placeholder=False)`, with the
                                  server-tool wire action (`server_tools`: a web search kept
                                  verbatim for the API that ran it, else plain text)
    3. tool-id sanitation          `sanitize_tool_ids(target, route, vendor_endpoint)`
    4. pairing repair              `repair_pairing(on_repair, strict)`
    5. user-terminated tail        `ensure_user_tail(supports_prefill)`
Every pass is pure (data in, data out, no I/O, clock or random ids), never mutates its input,
returns its input object when it changes nothing, and is idempotent; so is `build_view`
(`build_view(build_view(x)) == build_view(x)`, and `build_view(v) is v` for a built view `v`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.messages import Provenance, Target, Turn
from tether.wire.ids import IdMapper, sanitize_tool_ids
from tether.wire.images import drop_unreadable_image, drop_unreadable_images
from tether.wire.interrupts import render_interrupt, render_interrupts
from tether.wire.markers import (
    LiveTurns,
    elide_markers,
    is_marker,
    replayed_thinking_ids,
    without_thinking,
)
from tether.wire.pairing import Pairing, RepairHook, Reporter, has_calls, repair_pairing
from tether.wire.reasoning import reason_turn, sanitize_history_for_provider
from tether.wire.tail import ensure_user_tail, tail_turns


def build_view(
    turns: Sequence[Turn],
    target: Target,
    *,
    supports_prefill: bool = False,
    route: Provenance | None = None,
    vendor_endpoint: bool = False,
    on_repair: RepairHook | None = None,
    strict: bool = False,
) -> tuple[Turn, ...]:
    """Build the wire view of `turns` for one request to `target`.

    Args:
        turns: the stored turns, oldest first (a tuple is used as is).
        target: the request's wire API.
        supports_prefill: the model accepts a view ending with an assistant turn.
        route: the request's provider/api/model; provider-bound reasoning artifacts are replayed
            only to the route that issued them (see `tether.wire.reasoning`), and its tool-call
            ids go back to it verbatim (see `tether.wire.ids`).
        vendor_endpoint: the request goes to the API vendor's own endpoint, which holds
            every tool-call id to its published rules (no verbatim echo).
        on_repair: called with each pairing `Repair`.
        strict: raise `tether.errors.WireError` instead of repairing pairing faults.

    Returns:
        The view; `turns` itself (as a tuple) when no pass changes anything. Turns a pass does
        not touch are the stored objects themselves.
    """
    view = turns if isinstance(turns, tuple) else tuple(turns)
    strip = replayed_thinking_ids(view)
    view = elide_markers(view)
    if strip:
        view = tuple(without_thinking(t) if t.id in strip else t for t in view)
    view = render_interrupts(view)
    view = drop_unreadable_images(view)
    view = sanitize_history_for_provider(
        view, target, route=route, on_repair=on_repair, strict=strict, placeholder=False
    )
    view = sanitize_tool_ids(view, target, route=route, vendor_endpoint=vendor_endpoint)
    view = repair_pairing(view, on_repair=on_repair, strict=strict)
    return ensure_user_tail(view, supports_prefill=supports_prefill, target=target)


def _tuple(turns: Sequence[Turn]) -> tuple[Turn, ...]:
    return turns if isinstance(turns, tuple) else tuple(turns)


class ViewBuilder:
    """Incremental `build_view` for one session and request configuration.

    `view(turns)` returns exactly what `build_view(turns, target, ...)` returns (equal turns),
    but when `turns` extends the sequence given on the previous call it only processes the new
    turns plus the last tool-call segment (an assistant turn with calls and the turns after it,
    whose repair can still change): amortized O(new turns) Python work per call.

    It falls back to a full build when the previously seen turns are not a prefix of `turns`
    (a rewind, fork or edit), when a new turn is a compaction marker, or when a new turn's id is
    listed in a marker's `replaces_turn_ids`.

    Args:
        target, supports_prefill, route, vendor_endpoint, on_repair, strict: as for
            `build_view`. Repairs are
            reported when found: a repair in the last, still open segment is reported again on
            each call until a new segment starts; a full build reports every repair again.
        check_prefix: verify the whole previous prefix by identity (a C-level comparison of
            object pointers, ~1 ns per turn). With False, only the length and the identity of
            the previous last turn are checked: for callers that guarantee append-only history.

    Attributes:
        full_builds: how many times a full build ran (for tests and diagnostics).
    """

    def __init__(
        self,
        target: Target,
        *,
        supports_prefill: bool = False,
        route: Provenance | None = None,
        vendor_endpoint: bool = False,
        on_repair: RepairHook | None = None,
        strict: bool = False,
        check_prefix: bool = True,
    ) -> None:
        self.target: Target = target
        self.supports_prefill = supports_prefill
        self.route = route
        self.vendor_endpoint = vendor_endpoint
        self.check_prefix = check_prefix
        self._reporter = Reporter(on_repair, strict)
        self.full_builds = 0
        self._input: tuple[Turn, ...] = ()
        self._input_len = 0
        self._input_last: Turn | None = None
        self._live = LiveTurns()  # the input's live turns, kept across full builds
        self._stage: list[Turn] = []
        self._ids = IdMapper(target, route, vendor_endpoint=vendor_endpoint)
        self._pairing = Pairing(self._reporter)
        self._view: tuple[Turn, ...] = self._finish()  # of no turns: not empty (`tail`)

    def repaired(self, turns: Sequence[Turn]) -> tuple[Turn, ...]:
        """`build_view(turns, ...)` with this builder's options, not incremental and without
        touching its state: for a built view something changed afterwards (a
        `transform_context` hook, the wire-only tail strategy), so what is sent still meets
        the contract (every call answered right after it, a user-terminated tail, ids the
        target accepts). Returns `turns` itself (as a tuple) when they are a valid view."""
        return build_view(
            turns,
            self.target,
            supports_prefill=self.supports_prefill,
            route=self.route,
            vendor_endpoint=self.vendor_endpoint,
            on_repair=self._reporter.hook,
            strict=self._reporter.strict,
        )

    def reset(self) -> None:
        """Forget everything; the next `view()` does a full build."""
        self._live = LiveTurns()
        self._clear()

    def _clear(self) -> None:
        self._input = ()
        self._input_len = 0
        self._input_last = None
        self._stage = []
        self._ids = IdMapper(self.target, self.route, vendor_endpoint=self.vendor_endpoint)
        self._pairing = Pairing(self._reporter)
        self._view = self._finish()

    def view(self, turns: Sequence[Turn]) -> tuple[Turn, ...]:
        """The wire view of `turns` (== `build_view(turns, ...)` with this builder's options).

        With `check_prefix=False`, `turns` may be the caller's growing list itself: it is not
        copied (only its length and last turn are remembered), so an extending call costs
        O(new turns) whatever the history's length."""
        if turns is self._input:
            return self._view
        k = self._input_len
        n = len(turns)
        if (
            k == 0
            or n < k
            or turns[k - 1] is not self._input_last
            or (self.check_prefix and tuple(turns[:k]) != self._input)
        ):
            self._live = LiveTurns()  # not an extension: its live turns start over too
            return self._full(turns)
        if n == k:
            self._remember(turns)
            return self._view
        new = turns[k:]
        elided = self._live.elided
        for t in new:
            if t.id in elided or is_marker(t):
                return self._full(turns)
        stage = self._stage
        start = len(stage)
        target, route, mapper = self.target, self.route, self._ids
        report = self._reporter
        for t in new:
            stage.append(
                mapper.turn(
                    reason_turn(
                        drop_unreadable_image(render_interrupt(t)), target, route, report
                    )
                )
            )
        pairing = self._pairing
        if pairing.checkpoint is not None and not has_calls(stage[start]):
            # the last segment may take the new turns: run it again. When the first new turn
            # holds calls it starts a segment of its own, and the last one is closed: its
            # output would come out the same (one segment less per tool turn)
            start = pairing.restore()
        pairing.run(stage, start)
        self._remember(turns)
        self._view = self._finish()
        return self._view

    def _remember(self, turns: Sequence[Turn]) -> None:
        """Note the input just processed: its length and last turn; the sequence itself only
        when it is an immutable tuple (or must be kept for the prefix check)."""
        self._input_len = len(turns)
        self._input_last = turns[-1] if turns else None
        if isinstance(turns, tuple):
            self._input = turns
        elif self.check_prefix:
            self._input = tuple(turns)
        else:
            self._input = ()

    def _full(self, seq: Sequence[Turn]) -> tuple[Turn, ...]:
        """Rebuild from the live turns: the marker elision is incremental (`LiveTurns`, O(new
        turns) when `seq` extends the last input), the later passes run over the live turns."""
        live = self._live.update(seq)
        self._clear()
        self.full_builds += 1
        target, route, mapper = self.target, self.route, self._ids
        report = self._reporter
        strip = replayed_thinking_ids(seq)
        self._stage = [
            mapper.turn(
                reason_turn(
                    drop_unreadable_image(
                        render_interrupt(without_thinking(t) if t.id in strip else t)
                    ),
                    target,
                    route,
                    report,
                )
            )
            for t in elide_markers(live if self._live.regular else _tuple(seq))
        ]
        self._pairing.run(self._stage, 0)
        self._remember(seq)
        self._view = self._finish()
        return self._view

    def _finish(self) -> tuple[Turn, ...]:
        out = self._pairing.out
        drop, extra = tail_turns(out, supports_prefill=self.supports_prefill, target=self.target)
        if not drop and not extra:
            return tuple(out)
        return (*out[: len(out) - drop], *extra)
