"""The context monitor: explicit state across requests, pure methods returning decisions.

Owns: which provider usage still describes the current wire view (generation + view length +
reply id), the calibration offset, the hysteresis baseline, the runaway and no-progress guards,
and the window learned from an overflow error.
Does not own: the summarize call, the marker turn, or stopping the loop (the caller acts on a
`Decision`); the rules of `tether.compaction.pressure`.

Pure: no I/O, no clock; inputs are never mutated. Only `tether.messages` and this package.

Use from the loop, with `view` the wire view (the turns the request carries, markers already
applied, e.g. `tether.wire.build_view(...)`):

    monitor = ContextMonitor(limits, policy, system_tokens=n)
    # before EVERY request, tool iterations included (a long tool loop grows the context too):
    decision = monitor.check(view)
    if decision.runaway or decision.no_progress: stop (context_overflow error)
    if decision.compact: summarize, rebuild the view, monitor.compacted(new_view), and check
                         the new view again (it may still ask to compact, or stop)
    gen = monitor.generation                 # the generation the request's view was built at
    ... send the request, persist the reply turn ...
    monitor.observe(view_len=len(view), usage=reply.usage, assistant_turn_id=reply.id,
                    generation=gen)
    # on a context_overflow error instead: monitor.overflow(error_message)
    # (the summarize request itself is never observed: it is not a view of the session)

Decision rules, in order (all figures in tokens; fractions of the effective window):
    1. Pressure: with a usage observed for the current generation whose view the current view
       extends, tokens = that call's prompt + output + an estimate of the messages appended
       since (the reply itself, found by id, is skipped: its cost is the output); otherwise
       estimate(view) + system_tokens + calibration offset. Usage from a request built before
       the latest compaction is ignored (else a stale count compacts again on every turn).
    2. Trigger: `trigger_reached`, or a context_overflow error since the last compaction.
    3. Hysteresis: after a compaction that brought the view below the trigger, no new one until
       tokens >= baseline + hysteresis; hard overflow (tokens >= the raw window) and an
       overflow error always trigger. Back-off: a compaction that freed less than
       `MIN_GAIN` of the effective window doubles the growth the next one waits for (up to
       `MAX_BACKOFF` times the hysteresis, never past runaway_total, where the runaway rule
       compacts anyway); one that freed enough resets it. So a compaction that cannot free
       much does not run again a request later (trial5: 8 in 12 requests, ~600 tokens each).
    4. Runaway (ratio > runaway_total, or one check-to-check growth > runaway_growth):
       compaction first. The guard refuses (`Decision.runaway` text) only when compaction could
       not help: the view is still a runaway right after a compaction, or the previous
       decision asked for compaction and the caller sent the request without it, or the
       caller cannot compact at all (`compacts=False`: automatic compaction is off, the guard
       still holds). runaway_total is never below the threshold.
    5. No progress: after 3 compactions in a row that did not help (the view stayed at the
       trigger, or the next request overflowed), a triggered check returns no_progress=True
       and compact=False; a compaction that lands below the trigger and is followed by a
       successful request resets the count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tether.compaction.pressure import (
    DEFAULT_HYSTERESIS,
    DEFAULT_RUNAWAY_GROWTH,
    DEFAULT_RUNAWAY_TOTAL,
    DEFAULT_THRESHOLD,
    CompactionPolicy,
    ModelLimits,
    Pressure,
    PressureSource,
    Tokenizer,
    effective_window,
    message_tokens,
    normalized_fraction,
    occupied_tokens,
    pressure_in,
    trigger_tokens,
)
from tether.compaction.windows import parse_overflow_limit
from tether.messages import Turn, Usage

NO_PROGRESS_LIMIT = 3
"""Compactions in a row that do not help before `Decision.no_progress` is set."""

MIN_GAIN = 0.10
"""A compaction freeing less than this fraction of the effective window is weak: the next one
waits for twice the growth (rule 3's back-off)."""

MAX_BACKOFF = 4
"""The back-off multiplies the hysteresis by at most this."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What to do before one request.

    Attributes:
        pressure: the pressure of the view that was checked.
        compact: True when the caller should compact before sending.
        runaway: the stop-reason text when the runaway guard refuses to continue, else None.
        no_progress: True after 3 compactions in a row that left the view at the trigger; the
            caller stops with a context_overflow error.
        reason: a one-line explanation when compact, runaway or no_progress is set, else None.
    """

    pressure: Pressure
    compact: bool
    runaway: str | None = None
    no_progress: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Measurement:
    generation: int
    view_len: int
    base: int
    assistant_turn_id: str


@dataclass(frozen=True, slots=True)
class Figures:
    """What a check derives from the limits and the policy alone, worked out once per pair
    (the monitor keeps the figures of its current pair): `effective_window`,
    `trigger_tokens` and the normalized fractions (`tether.compaction.pressure`)."""

    limits: ModelLimits
    policy: CompactionPolicy
    effective_window: int
    trigger: int
    threshold: float
    runaway_total: float
    runaway_growth: float
    hysteresis: float

    @classmethod
    def of(cls, limits: ModelLimits, policy: CompactionPolicy) -> Figures:
        """The figures of `limits` under `policy`."""
        threshold = normalized_fraction(policy.threshold, DEFAULT_THRESHOLD)
        return cls(
            limits,
            policy,
            effective_window(limits, policy),
            trigger_tokens(limits, policy),
            threshold,
            max(threshold, normalized_fraction(policy.runaway_total, DEFAULT_RUNAWAY_TOTAL)),
            normalized_fraction(policy.runaway_growth, DEFAULT_RUNAWAY_GROWTH),
            normalized_fraction(policy.hysteresis, DEFAULT_HYSTERESIS),
        )

    def pressure(self, tokens: int, *, source: PressureSource, is_approximate: bool) -> Pressure:
        """`make_pressure(tokens, limits, policy, ...)`."""
        return pressure_in(
            tokens,
            self.effective_window,
            source=source,
            is_approximate=is_approximate or self.limits.source == "default",
        )


WAY_OUT = (
    "to go on, leave out the message that made it large: in `tether chat`, /rewind to before "
    "it or /compact; from a shell (`tether run`, an editor's session), `tether sessions fork "
    "ID --before N` (a new session without user message N; `tether sessions list` shows the id)"
)
"""The runaway guard's way on, for every front end (the TUI, `tether run`, ACP editors)."""


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


class ContextMonitor:
    """Tracks context pressure across the requests of one session (see the module docstring).

    Args:
        limits: the model's limits (`tether.providers.catalog.resolve_limits`, injected by the caller).
        policy: the compaction policy; bad fractions are clamped (`normalized_fraction`).
        system_tokens: tokens the request carries beyond the turns (system prompt, tool
            schemas), added to estimates; measured figures include them already.
        tokenizer: an exact per-text token counter to use instead of ceil(chars / 4).
        compacts: whether the caller compacts when told to; False (automatic compaction off):
            never `compact`, and a runaway is refused at once.
    """

    def __init__(
        self,
        limits: ModelLimits,
        policy: CompactionPolicy = CompactionPolicy(),  # noqa: B008 - frozen, shared safely
        *,
        system_tokens: int = 0,
        tokenizer: Tokenizer | None = None,
        compacts: bool = True,
    ) -> None:
        self.compacts = compacts
        self._limits = limits
        self._policy = policy
        self._system_tokens = max(0, system_tokens)
        self._tokenizer = tokenizer
        self._generation = 0
        self._measurement: _Measurement | None = None
        self._offset = 0
        self._last_check: tuple[int, int, int] | None = None  # (generation, view_len, estimate)
        self._pressure: Pressure | None = None
        self._last_tokens: int | None = None
        self._baseline: int | None = None
        self._backoff = 1  # the hysteresis multiplier after weak compactions (rule 3)
        self._failed_in_row = 0
        self._last_compaction_ok = False
        self._awaiting_ok = False
        self._just_compacted = False
        self._pending_compact = False
        self._compaction_skipped = False
        self._force = False
        self._cache: dict[str, tuple[Turn, int]] = {}
        self._seen: tuple[Turn, ...] = ()  # the sequence `_sums` describes
        self._sums: list[int] = [0]
        self._figures_cache: Figures | None = None

    def _figures(self) -> Figures:
        """The figures of the current limits and policy (worked out again when either is
        replaced)."""
        f = self._figures_cache
        if f is None or f.limits is not self._limits or f.policy is not self._policy:
            f = self._figures_cache = Figures.of(self._limits, self._policy)
        return f

    @property
    def generation(self) -> int:
        """Compactions (and prunes, `reshaped`) recorded by this monitor (0 before the first):
        the version of the view that usage is measured against; a counter local to the
        monitor, not `CompactSummaryBlock.generation`."""
        return self._generation

    @property
    def limits(self) -> ModelLimits:
        """The current limits (source "learned" after an overflow error stated the maximum)."""
        return self._limits

    def set_limits(self, limits: ModelLimits) -> None:
        """Switch to other limits (e.g. a fallback model); measurements and the hysteresis
        baseline stay (they are token counts), the ratios follow the new window."""
        self._limits = limits

    @property
    def policy(self) -> CompactionPolicy:
        """The compaction policy."""
        return self._policy

    @property
    def pressure(self) -> Pressure | None:
        """The pressure of the last `check` or `compacted`, or None before either."""
        return self._pressure

    @property
    def calibration_offset(self) -> int:
        """measured prompt - estimated prompt for the last calibrated view, clamped >= 0 (tokens);
        added to fully estimated figures."""
        return self._offset

    # -- estimation ------------------------------------------------------------------------

    def _tokens_of(self, turn: Turn) -> int:
        hit = self._cache.get(turn.id)
        if hit is not None and hit[0] is turn:
            return hit[1]
        n = message_tokens(turn, tokenizer=self._tokenizer)
        self._cache[turn.id] = (turn, n)
        return n

    def _prefix_sums(self, turns: Sequence[Turn]) -> list[int]:
        """`sums[i]` = estimated tokens of `turns[:i]` (len(turns) + 1 entries).

        Incremental: when `turns` extends the sequence measured last (its prefix holds the same
        turns, compared by identity at C speed), only the appended turns are estimated, so a
        check costs O(new turns) Python work; otherwise every turn is looked up again (each
        estimate is cached per turn object)."""
        seq = turns if isinstance(turns, tuple) else tuple(turns)
        prev, sums = self._seen, self._sums
        if seq is prev:
            return sums
        k = len(prev)
        if not (k and len(seq) >= k and seq[k - 1] is prev[k - 1] and seq[:k] == prev):
            sums = [0]
            k = 0
        total = sums[-1]
        for t in seq[k:]:
            total += self._tokens_of(t)
            sums.append(total)
        self._seen, self._sums = seq, sums
        return sums

    def _appended_tokens(
        self, turns: Sequence[Turn], sums: list[int], m: _Measurement
    ) -> int | None:
        """Estimated tokens of the messages after the measured view, the measured reply skipped;
        None when `turns` does not extend the measured view."""
        n = len(turns)

        def span(a: int, b: int) -> int:  # == sum(per[a:b]) with slice semantics
            a, b = min(a, n), min(b, n)
            return sums[b] - sums[a] if a < b else 0

        start = max(0, m.view_len - 1)
        for i in range(n - 1, start - 1, -1):
            if turns[i].id == m.assistant_turn_id:
                return span(m.view_len, i) + span(i + 1, n)
        if n >= m.view_len:
            return span(m.view_len, n)
        return None

    def _measure(self, turns: Sequence[Turn]) -> tuple[Pressure, int]:
        """(pressure, estimated prompt of `turns` without the offset)."""
        sums = self._prefix_sums(turns)
        estimate = self._system_tokens + sums[-1]
        figures = self._figures()
        m = self._measurement
        if m is not None and m.generation == self._generation:
            appended = self._appended_tokens(turns, sums, m)
            if appended is not None:
                p = figures.pressure(
                    m.base + appended, source="measured", is_approximate=appended > 0
                )
                return p, estimate
        p = figures.pressure(estimate + self._offset, source="estimated", is_approximate=True)
        return p, estimate

    # -- the decision ----------------------------------------------------------------------

    def check(self, turns: Sequence[Turn]) -> Decision:
        """Decide before one request whose view is `turns`. Call before EVERY request, tool
        iterations included (a long tool loop grows the context too).

        Args:
            turns: the wire view the request will carry (markers applied).

        Returns:
            The Decision (see the module docstring for the rules).
        """
        p, estimate = self._measure(turns)
        self._last_check = (self._generation, len(turns), estimate)
        self._pressure = p
        lim, figures = self._limits, self._figures()
        eff = p.effective_window
        runaway_total = figures.runaway_total
        runaway_growth = figures.runaway_growth
        hysteresis = figures.hysteresis

        growth = p.tokens - self._last_tokens if self._last_tokens is not None else 0
        self._last_tokens = p.tokens
        hard = p.tokens >= max(1, lim.context_window)
        triggered = p.tokens >= figures.trigger or self._force  # `trigger_reached`
        over_total = p.ratio > runaway_total
        spike = growth > runaway_growth * eff
        blocked = (
            self._baseline is not None
            and not hard
            and not self._force
            and p.tokens < self._baseline + self._wait(hysteresis, runaway_total, eff)
        )

        if (over_total or spike) and (
            self._just_compacted or self._compaction_skipped or not self.compacts
        ):
            if not self.compacts:
                why = "automatic compaction is off"
            elif self._just_compacted:
                why = "compaction could not bring it down"
            else:
                why = "compaction was not done"
            if over_total:
                text = (
                    f"runaway guard: the context is {p.tokens:,} tokens, {_pct(p.ratio)} of the "
                    f"{eff:,}-token effective window (limit {_pct(runaway_total)}), and {why}; "
                    "stopping"
                )
            else:
                text = (
                    f"runaway guard: one turn grew the context by {growth:,} tokens "
                    f"({_pct(growth / eff)} of the {eff:,}-token effective window, limit "
                    f"{_pct(runaway_growth)}), and {why}; stopping"
                )
            text += f"; {WAY_OUT}"
            self._pending_compact = False
            return Decision(pressure=p, compact=False, runaway=text, reason=text)

        if triggered and self._failed_in_row >= NO_PROGRESS_LIMIT:
            text = (
                f"no progress: {self._failed_in_row} compactions in a row left the context at "
                f"{p.tokens:,} tokens of a {eff:,}-token effective window"
            )
            self._pending_compact = False
            return Decision(pressure=p, compact=False, no_progress=True, reason=text)

        compact = (triggered or over_total or spike) and not blocked and self.compacts
        reason: str | None = None
        if compact:
            if self._force:
                reason = "the provider reported a context overflow"
            elif hard:
                reason = f"{p.tokens:,} tokens fill the {lim.context_window:,}-token window"
            elif spike and not triggered:
                reason = f"one turn grew the context by {growth:,} tokens"
            else:
                reason = (
                    f"{p.tokens:,} tokens, {_pct(p.ratio)} of the {eff:,}-token effective window"
                )
        self._pending_compact = compact
        return Decision(pressure=p, compact=compact, reason=reason)

    def _wait(self, hysteresis: float, runaway_total: float, eff: int) -> float:
        """The growth over the baseline the next compaction waits for (rule 3): the hysteresis,
        times the back-off after weak compactions but then never past runaway_total."""
        wait = hysteresis * eff
        if self._backoff > 1 and self._baseline is not None:
            longer = min(wait * self._backoff, runaway_total * eff - self._baseline)
            wait = max(wait, longer)
        return wait

    # -- events from the loop --------------------------------------------------------------

    def observe(
        self, *, view_len: int, usage: Usage | None, assistant_turn_id: str, generation: int
    ) -> None:
        """Record one completed request and the provider usage it reported.

        Call it after every request that got a reply, also when the reply carried no usage
        (llama-cpp-python's server sends none): the request still counts as sent (a skipped
        compaction, the end of a compaction's probation), while the pressure stays the
        estimate (`Pressure.is_approximate`) and the calibration offset is left as it was.

        Args:
            view_len: the number of turns in the wire view the request carried.
            usage: the normalized usage of that request (`Usage.prompt_tokens` + output), or
                None when the provider reported none (a usage with no prompt tokens counts
                as none).
            assistant_turn_id: the id of the reply turn, whose cost is the usage's output.
            generation: `self.generation` when the request's view was built. Usage from an
                older generation (built before the latest compaction) is ignored (a stale
                count would compact again on every turn).

        Raises:
            ValueError: `generation` is newer than the monitor's (a caller bug).
        """
        if generation > self._generation:
            raise ValueError(
                f"usage for generation {generation}, but only {self._generation} compactions "
                "happened; pass monitor.generation as read when the view was built"
            )
        if generation < self._generation:
            return
        if self._pending_compact:
            self._compaction_skipped = True
        self._pending_compact = False
        self._just_compacted = False
        if self._awaiting_ok and self._last_compaction_ok:
            self._failed_in_row = 0
        self._awaiting_ok = False
        if usage is None or usage.prompt_tokens <= 0:
            return  # the provider reported no usage: nothing measured
        self._measurement = _Measurement(
            generation=generation,
            view_len=max(0, view_len),
            base=occupied_tokens(usage),
            assistant_turn_id=assistant_turn_id,
        )
        last = self._last_check
        if last is not None and last[0] == generation and last[1] == view_len:
            self._offset = max(0, usage.prompt_tokens - last[2])

    def compacted(self, turns_after: Sequence[Turn]) -> None:
        """Record a compaction: bump the generation, drop the measurement (usage of requests
        built before it is stale: counted, it would compact again at once), re-estimate from the new view and set the hysteresis
        baseline when the new view is below the trigger.

        Args:
            turns_after: the wire view after the compaction (marker applied).
        """
        self._generation += 1
        self._measurement = None
        self._force = False
        self._pending_compact = False
        self._compaction_skipped = False
        self._just_compacted = True
        self._awaiting_ok = True
        keep = {t.id for t in turns_after}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}
        before = self._pressure.tokens if self._pressure is not None else None
        p, estimate = self._measure(turns_after)
        self._pressure = p
        self._last_tokens = p.tokens
        self._last_check = (self._generation, len(turns_after), estimate)
        if before is not None and before - p.tokens < MIN_GAIN * p.effective_window:
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)  # weak: wait longer next time
        else:
            self._backoff = 1
        if p.tokens >= self._figures().trigger:  # `trigger_reached`
            self._baseline = None
            self._failed_in_row += 1
            self._last_compaction_ok = False
        else:
            self._baseline = p.tokens
            self._last_compaction_ok = True

    def peek(self, turns: Sequence[Turn]) -> Pressure:
        """The pressure `check(turns)` would see, without recording anything (no decision, no
        growth step): for a caller that shapes the view before checking it (pruning)."""
        return self._measure(turns)[0]

    def reshaped(self, turns_after: Sequence[Turn]) -> None:
        """Record that the view changed inside its prefix without a compaction (old tool
        results pruned, `tether.compaction.prune`): usage measured for the old view no longer
        describes it, so the generation steps and the pressure is re-estimated from
        `turns_after`; the compaction guards (hysteresis baseline, no-progress count, runaway
        probation) are left as they were.

        Args:
            turns_after: the wire view as it will be sent from now on.
        """
        self._generation += 1
        self._measurement = None
        keep = {t.id for t in turns_after}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}
        p, estimate = self._measure(turns_after)
        self._pressure = p
        self._last_tokens = p.tokens
        self._last_check = (self._generation, len(turns_after), estimate)

    def overflow(self, message: str) -> int | None:
        """Record a context_overflow error: learn the window it states (custom models
        whose window is unknown) and compact before
        the next request whatever the estimate says.

        Args:
            message: the provider's error text.

        Returns:
            The learned window in tokens (now `self.limits.context_window`, source "learned"),
            or None when the text states no maximum (the limits stay as they were).
        """
        n = parse_overflow_limit(message)
        if n is not None:
            self._limits = replace(
                self._limits,
                context_window=n,
                max_output_tokens=min(max(0, self._limits.max_output_tokens), n),
                source="learned",
            )
        if self._awaiting_ok and self._last_compaction_ok:
            self._failed_in_row += 1  # the last compaction did not prevent an overflow
            self._last_compaction_ok = False
        self._force = True
        self._just_compacted = False
        self._pending_compact = False
        return n
