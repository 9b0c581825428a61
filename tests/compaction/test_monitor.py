"""Units and properties of tether.compaction.monitor.ContextMonitor."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.numbers import approx
from tether.compaction import (
    CompactionPolicy,
    ContextMonitor,
    ModelLimits,
    estimate_tokens,
    occupied_tokens,
)
from tether.compaction.pressure import effective_window, trigger_tokens
from tether.messages import Turn, Usage, text_turn

from .strategies import turn_lists

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# window 10,000, no output reserve -> effective window 10,000; threshold 0.8 -> 8,000;
# headroom rule: min(0 + 500, 5,000) -> fires above 9,500. Figures below are in tokens.
LIMITS = ModelLimits(context_window=10_000, max_output_tokens=0)


def tok(turn_id: str, tokens: int, role: str = "user") -> Turn:
    """A turn whose estimate is exactly `tokens`."""
    return text_turn(turn_id, role, "x" * (4 * tokens))  # type: ignore[arg-type]


def usage(prompt: int, output: int = 0) -> Usage:
    return Usage(input_tokens=prompt, output_tokens=output)


def test_first_check_is_an_estimate_plus_system_tokens() -> None:
    mon = ContextMonitor(LIMITS, system_tokens=300)
    d = mon.check([tok("u", 1_000)])
    assert d.pressure.tokens == 1_300
    assert d.pressure.source == "estimated" and d.pressure.is_approximate
    assert d.pressure.effective_window == 10_000
    assert d.pressure.ratio == approx(0.13)
    assert d.pressure.headroom == 8_700
    assert not d.compact and d.runaway is None and not d.no_progress and d.reason is None
    assert mon.pressure == d.pressure


def test_measured_base_plus_only_what_was_appended_since() -> None:
    mon = ContextMonitor(LIMITS)
    view = [tok("u", 1_000)]
    mon.check(view)
    reply = tok("a1", 200, "assistant")
    mon.observe(view_len=1, usage=usage(1_500, 50), assistant_turn_id="a1", generation=0)
    # the reply is skipped (its cost is the usage's output), not estimated at 200
    d = mon.check([*view, reply])
    assert (d.pressure.tokens, d.pressure.source, d.pressure.is_approximate) == (
        1_550,
        "measured",
        False,
    )
    d = mon.check([*view, reply, tok("r1", 400)])
    assert (d.pressure.tokens, d.pressure.source, d.pressure.is_approximate) == (
        1_950,
        "measured",
        True,
    )


def test_only_the_last_call_counts_never_the_sum_over_a_tool_loop() -> None:
    mon = ContextMonitor(LIMITS)
    view = [tok("u", 100)]
    for i in range(5):
        mon.check(view)
        gen = mon.generation
        reply = tok(f"a{i}", 10, "assistant")
        mon.observe(
            view_len=len(view),
            usage=usage(estimate_tokens(view) + 7, 10),
            assistant_turn_id=reply.id,
            generation=gen,
        )
        view = [*view, reply, tok(f"r{i}", 100)]
    d = mon.check(view)
    last_prompt = estimate_tokens(view[:-2]) + 7
    assert d.pressure.tokens == last_prompt + 10 + 100


def test_reply_found_by_id_when_the_request_view_had_a_synthetic_tail() -> None:
    mon = ContextMonitor(LIMITS)
    stored = [tok("u", 500), tok("a0", 10, "assistant")]
    sent = [*stored, tok("continue", 1)]  # e.g. a user-terminated tail the store never holds
    mon.check(sent)
    mon.observe(view_len=3, usage=usage(600, 20), assistant_turn_id="a1", generation=0)
    d = mon.check([*stored, tok("a1", 20, "assistant"), tok("r1", 100)])
    assert d.pressure.tokens == 620 + 100
    assert d.pressure.source == "measured"


def test_a_view_that_does_not_extend_the_measured_one_is_estimated() -> None:
    mon = ContextMonitor(LIMITS)
    mon.observe(view_len=5, usage=usage(3_000), assistant_turn_id="a", generation=0)
    d = mon.check([tok("u", 100)])
    assert (d.pressure.tokens, d.pressure.source) == (100, "estimated")


def test_calibration_offset_is_applied_to_estimates_and_clamped() -> None:
    mon = ContextMonitor(LIMITS, system_tokens=100)
    view = [tok("u", 1_000)]
    mon.check(view)  # estimated 1,100
    mon.observe(view_len=1, usage=usage(1_400), assistant_turn_id="a", generation=0)
    assert mon.calibration_offset == 300
    mon.compacted([tok("s", 500)])
    assert mon.pressure is not None
    assert (mon.pressure.tokens, mon.pressure.source) == (500 + 100 + 300, "estimated")
    # a measurement below the estimate clamps the offset at 0
    mon.check([tok("s", 500)])
    mon.observe(view_len=1, usage=usage(200), assistant_turn_id="b", generation=1)
    assert mon.calibration_offset == 0


def test_observe_without_usage_measures_nothing() -> None:
    mon = ContextMonitor(LIMITS)
    mon.check([tok("u", 100)])
    mon.observe(view_len=1, usage=Usage(), assistant_turn_id="a", generation=0)
    assert mon.check([tok("u", 100), tok("a", 5, "assistant")]).pressure.source == "estimated"


def test_future_generation_is_a_caller_bug() -> None:
    mon = ContextMonitor(LIMITS)
    with pytest.raises(ValueError, match="generation 1"):
        mon.observe(view_len=1, usage=usage(10), assistant_turn_id="a", generation=1)


def test_stale_usage_from_before_a_compaction_is_ignored() -> None:
    mon = ContextMonitor(LIMITS)
    view = [tok("u", 9_000)]
    assert mon.check(view).compact
    mon.compacted([tok("s", 1_000)])
    assert mon.generation == 1
    mon.observe(view_len=1, usage=usage(9_000), assistant_turn_id="a", generation=0)
    d = mon.check([tok("s", 1_000), tok("u2", 10)])
    assert d.pressure.tokens == 1_010 and not d.compact


def test_hysteresis_after_a_compaction_except_hard_overflow() -> None:
    pol = CompactionPolicy(threshold=0.5)  # fires at 5,000; hysteresis 1,000
    mon = ContextMonitor(LIMITS, pol)
    assert mon.check([tok("u", 6_000)]).compact
    mon.compacted([tok("s", 4_900)])  # just below the trigger: baseline 4,900
    assert not mon.check([tok("s", 4_900), tok("m", 500)]).compact  # 5,400 < 5,900
    assert not mon.check([tok("s", 4_900), tok("m", 999)]).compact
    d = mon.check([tok("s", 4_900), tok("m", 1_000)])  # 5,900: grew by the hysteresis
    assert d.compact and d.reason is not None


def test_hard_overflow_ignores_hysteresis() -> None:
    pol = CompactionPolicy(threshold=1.0, runaway_total=1.0, runaway_growth=1.0)
    lim = ModelLimits(context_window=10_000, max_output_tokens=0)
    mon = ContextMonitor(lim, pol, system_tokens=0)
    mon.compacted([tok("s", 9_000)])  # below the trigger (9,501): baseline 9,000
    d = mon.check([tok("s", 9_000), tok("m", 1_000)])  # 10,000 >= window; growth < 1,000
    assert d.compact and "window" in (d.reason or "")


def test_compaction_that_does_not_help_three_times_is_no_progress() -> None:
    mon = ContextMonitor(LIMITS, CompactionPolicy(runaway_total=1.0))
    big = [tok("u", 9_000)]
    for _ in range(3):
        d = mon.check(big)
        assert d.compact and not d.no_progress
        mon.compacted(big)  # still above the trigger (8,000)
    d = mon.check(big)
    assert d.no_progress and not d.compact and d.reason is not None


def test_a_successful_compaction_and_request_reset_the_count() -> None:
    mon = ContextMonitor(LIMITS, CompactionPolicy(runaway_total=1.0))
    big = [tok("u", 9_000)]
    for _ in range(2):
        mon.check(big)
        mon.compacted(big)
    mon.check(big)
    mon.compacted([tok("s", 100)])
    mon.check([tok("s", 100)])
    mon.observe(view_len=1, usage=usage(100), assistant_turn_id="a", generation=mon.generation)
    for _ in range(2):
        mon.check(big)
        mon.compacted(big)
    assert not mon.check(big).no_progress


def test_overflow_learns_the_window_and_forces_compaction() -> None:
    lim = ModelLimits(context_window=200_000, max_output_tokens=32_000, source="default")
    mon = ContextMonitor(lim)
    view = [tok("u", 100_000)]
    assert not mon.check(view).compact
    n = mon.overflow("This model's maximum context length is 65536 tokens. However, ...")
    assert n == 65_536
    assert mon.limits == ModelLimits(
        context_window=65_536, max_output_tokens=32_000, source="learned"
    )
    d = mon.check(view)
    assert d.compact and d.reason == "the provider reported a context overflow"


def test_overflow_without_a_number_still_forces_compaction_even_inside_hysteresis() -> None:
    mon = ContextMonitor(LIMITS)
    mon.compacted([tok("s", 1_000)])
    assert not mon.check([tok("s", 1_000)]).compact
    assert mon.overflow("the input length exceeds the context length") is None
    assert mon.limits == LIMITS
    assert mon.check([tok("s", 1_000)]).compact


def test_repeated_overflow_after_compaction_is_no_progress() -> None:
    mon = ContextMonitor(LIMITS)
    small = [tok("s", 1_000)]  # the estimate looks fine; the provider disagrees
    mon.overflow("prompt is too long")
    for _ in range(3):
        d = mon.check(small)
        assert d.compact and not d.no_progress
        mon.compacted(small)
        mon.check(small)
        mon.overflow("prompt is too long")
    d = mon.check(small)
    assert d.no_progress and not d.compact


def test_runaway_total_after_compaction_stops_with_text() -> None:
    mon = ContextMonitor(LIMITS)  # runaway above 90 % = 9,000
    d = mon.check([tok("u", 9_500)])
    assert d.compact and d.runaway is None  # compaction first
    mon.compacted([tok("s", 9_200)])
    d = mon.check([tok("s", 9_200)])
    assert not d.compact and d.runaway is not None
    assert "9,200 tokens" in d.runaway and "90 %" in d.runaway and "could not" in d.runaway


def test_runaway_growth_compacts_first_then_refuses_if_compaction_is_skipped() -> None:
    mon = ContextMonitor(LIMITS, CompactionPolicy(threshold=1.0))
    view = [tok("u", 1_000)]
    assert not mon.check(view).compact
    mon.observe(view_len=1, usage=usage(1_000), assistant_turn_id="a", generation=0)
    view = [*view, tok("a", 0, "assistant"), tok("r", 4_500)]  # +4,500 > 40 % of 10,000
    d = mon.check(view)
    assert d.compact and d.runaway is None and "grew" in (d.reason or "")
    # the caller sends the request without compacting (auto-compaction off)
    mon.observe(view_len=len(view), usage=usage(5_500), assistant_turn_id="a2", generation=0)
    view = [*view, tok("a2", 0, "assistant"), tok("r2", 4_100)]
    d = mon.check(view)
    assert d.runaway is not None and "grew the context by 4,100 tokens" in d.runaway
    assert "not done" in d.runaway


def test_runaway_total_when_compaction_is_skipped() -> None:
    mon = ContextMonitor(LIMITS)
    view = [tok("u", 8_500)]
    assert mon.check(view).compact
    mon.observe(view_len=1, usage=usage(8_500), assistant_turn_id="a", generation=0)
    d = mon.check([*view, tok("a", 0, "assistant"), tok("r", 600)])  # 9,100 > 9,000
    assert d.runaway is not None and not d.compact


def test_runaway_total_is_never_below_the_threshold() -> None:
    mon = ContextMonitor(LIMITS, CompactionPolicy(threshold=0.95, runaway_total=0.5))
    mon.compacted([tok("s", 7_000)])  # below the 9,500 trigger, above 50 %
    assert mon.check([tok("s", 7_000)]).runaway is None


def test_set_limits_keeps_the_measurement_and_rescales() -> None:
    mon = ContextMonitor(ModelLimits(context_window=100_000, max_output_tokens=0))
    view = [tok("u", 1_000)]
    mon.check(view)
    mon.observe(view_len=1, usage=usage(9_000), assistant_turn_id="a", generation=0)
    assert not mon.check([*view, tok("a", 0, "assistant")]).compact
    mon.set_limits(LIMITS)  # a fallback model with a 10k window
    d = mon.check([*view, tok("a", 0, "assistant")])
    assert (d.pressure.tokens, d.pressure.source, d.pressure.effective_window) == (
        9_000,
        "measured",
        10_000,
    )
    assert d.compact


def test_percentages_read_as_fractions() -> None:
    mon = ContextMonitor(LIMITS, CompactionPolicy(threshold=50, runaway_total=95))
    assert mon.check([tok("u", 5_000)]).compact


# -- properties ------------------------------------------------------------------------------


@dataclass
class Step:
    kind: str  # "grow", "request", "compact", "overflow", "stale"
    amount: int


steps = st.lists(
    st.builds(
        Step,
        kind=st.sampled_from(
            ["grow", "grow", "request", "request", "compact", "overflow", "stale"]
        ),
        amount=st.integers(0, 6_000),
    ),
    max_size=30,
)
policies = st.builds(
    CompactionPolicy,
    threshold=st.floats(0.05, 1.0),
    hysteresis=st.floats(0.01, 0.5),
    runaway_total=st.floats(0.05, 1.0),
    runaway_growth=st.floats(0.05, 1.0),
    output_reserve=st.integers(0, 5_000),
)
limits_st = st.builds(
    ModelLimits, context_window=st.integers(1_000, 50_000), max_output_tokens=st.integers(0, 8_000)
)


def run(
    mon: ContextMonitor, plan: list[Step], *, with_stale: bool = True
) -> list[tuple[int, bool, str | None, bool]]:
    """Drive a monitor through `plan`; a "compact" step compacts only when the last decision
    asked for it (to amount // 4 tokens). Returns every decision as a tuple."""
    view: list[Turn] = [tok("task", 50)]
    out: list[tuple[int, bool, str | None, bool]] = []
    asked = False
    for n, step in enumerate(plan, 1):
        if step.kind == "grow":
            view = [*view, tok(f"g{n}", step.amount)]
        elif step.kind == "request":
            d = mon.check(view)
            out.append((d.pressure.tokens, d.compact, d.runaway, d.no_progress))
            asked = d.compact
            reply = tok(f"a{n}", step.amount // 10, "assistant")
            prompt = estimate_tokens(view) + step.amount // 7
            mon.observe(
                view_len=len(view),
                usage=usage(prompt, step.amount // 10),
                assistant_turn_id=reply.id,
                generation=mon.generation,
            )
            view = [*view, reply]
        elif step.kind == "compact" and asked:
            view = [view[0], tok(f"s{n}", step.amount // 4)]
            mon.compacted(view)
            asked = False
        elif step.kind == "overflow":
            mon.overflow("prompt is too long")
        elif step.kind == "stale" and with_stale and mon.generation > 0:
            mon.observe(
                view_len=len(view),
                usage=usage(step.amount * 50),
                assistant_turn_id="zz",
                generation=mon.generation - 1,
            )
    d = mon.check(view)
    out.append((d.pressure.tokens, d.compact, d.runaway, d.no_progress))
    return out


@SETTINGS
@given(limits_st, policies, steps)
def test_stale_usage_never_changes_a_decision(
    lim: ModelLimits, pol: CompactionPolicy, plan: list[Step]
) -> None:
    assert run(ContextMonitor(lim, pol), plan) == run(
        ContextMonitor(lim, pol), plan, with_stale=False
    )


frac_steps = st.lists(
    st.tuples(
        st.sampled_from([*["grow"] * 4, *["request"] * 4, "compact", "compact", "overflow"]),
        st.floats(0.0, 1.2),
    ),
    min_size=8,
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limits_st, policies, frac_steps)
def test_no_second_compaction_without_hysteresis_growth(
    lim: ModelLimits, pol: CompactionPolicy, plan: list[tuple[str, float]]
) -> None:
    """After a compaction that brought the view below the trigger, a check asks for another
    only once the pressure grew by the hysteresis, at hard overflow, or after an overflow error.
    Amounts are fractions: a compaction lands at f x the trigger, a growth adds f x 25 % of the
    effective window (so the hysteresis boundary is crossed often)."""
    mon = ContextMonitor(lim, pol)
    view: list[Turn] = [tok("task", 1)]
    baseline: int | None = None
    overflowed = False
    asked = False
    for n, (kind, f) in enumerate(plan):
        eff = effective_window(mon.limits, pol)
        if kind == "grow":
            view = [*view, tok(f"g{n}", int(f * 0.25 * eff))]
            continue
        if kind == "overflow":
            mon.overflow("prompt is too long")
            overflowed = True
            continue
        if kind == "compact" and asked:
            # the loop compacts right before the request
            view = [view[0], tok(f"s{n}", int(f * trigger_tokens(mon.limits, pol)))]
            mon.compacted(view)
            p = mon.pressure
            assert p is not None
            below = p.tokens < trigger_tokens(mon.limits, pol)
            baseline = p.tokens if below else None
            overflowed = False
        d = mon.check(view)
        if d.compact and baseline is not None and not overflowed:
            grew = d.pressure.tokens - baseline >= pol.hysteresis * d.pressure.effective_window
            hard = d.pressure.tokens >= mon.limits.context_window
            assert grew or hard, (baseline, d)
        asked = d.compact
        reply = tok(f"a{n}", 1, "assistant")
        mon.observe(
            view_len=len(view),
            usage=usage(estimate_tokens(view), 1),
            assistant_turn_id=reply.id,
            generation=mon.generation,
        )
        view = [*view, reply]


@SETTINGS
@given(turn_lists(prefix="v"), turn_lists(prefix="w"), st.integers(1, 5_000), st.integers(0, 500))
def test_measured_pressure_is_last_call_plus_appended_estimate(
    view: list[Turn], appended: list[Turn], prompt: int, output: int
) -> None:
    mon = ContextMonitor(ModelLimits(context_window=1_000_000, max_output_tokens=0))
    before = copy.deepcopy((view, appended))
    mon.check(view)
    u = usage(prompt, output)
    reply = tok("reply", 123, "assistant")
    mon.observe(view_len=len(view), usage=u, assistant_turn_id="reply", generation=0)
    d = mon.check([*view, reply, *appended])
    assert d.pressure.source == "measured"
    assert d.pressure.tokens == occupied_tokens(u) + estimate_tokens(appended)
    assert (view, appended) == before, "the input was mutated"


def test_a_reply_without_usage_still_counts_as_a_request() -> None:
    """A provider that reports no usage (llama-cpp-python's server): the request after a
    compaction still ends the compaction's probation, so a later runaway gets a compaction
    first instead of a refusal, and the pressure stays the estimate (marked approximate)."""
    from tether.agent.turn.compacting import AutoCompaction
    from tether.agent.turn.state import SentView

    mon = ContextMonitor(LIMITS)
    auto = AutoCompaction(mon)
    mon.check([tok("u", 9_500)])
    mon.compacted([tok("s", 1_000)])  # below the trigger
    reply = tok("a", 10, "assistant")
    auto.after_request(reply, SentView(1, mon.generation))
    d = mon.check([tok("s", 1_000), reply, tok("r", 8_500)])
    assert d.compact and d.runaway is None
    assert d.pressure.source == "estimated" and d.pressure.is_approximate


def test_a_guessed_window_makes_the_pressure_approximate() -> None:
    """A model tether does not know gets a fallback window: even a measured figure is then no
    exact share of the real window (the gauge shows `~`)."""
    guessed = ModelLimits(context_window=10_000, max_output_tokens=0, source="default")
    for limits, approximate in ((LIMITS, False), (guessed, True)):
        mon = ContextMonitor(limits)
        view = [tok("u", 1_000)]
        mon.check(view)
        mon.observe(view_len=1, usage=usage(1_500, 50), assistant_turn_id="a1", generation=0)
        d = mon.check([*view, tok("a1", 10, "assistant")])
        assert d.pressure.source == "measured"
        assert d.pressure.is_approximate is approximate


def test_without_compaction_a_runaway_is_refused_at_once() -> None:
    """`compacts=False` (automatic compaction off): never `compact`, and the guard refuses a
    runaway without waiting for a compaction that cannot come."""
    mon = ContextMonitor(LIMITS, compacts=False)
    d = mon.check([tok("u", 8_500)])  # past the trigger: nothing to do but go on
    assert not d.compact and d.runaway is None
    d = mon.check([tok("u", 9_200)])  # above 90 % of the window
    assert not d.compact and d.runaway is not None and "compaction is off" in d.runaway
    spike = ContextMonitor(LIMITS, compacts=False)
    spike.check([tok("u", 1_000)])
    d = spike.check([tok("u", 1_000), tok("r", 4_500)])  # one turn grew it by 45 %
    assert d.runaway is not None and "one turn grew" in d.runaway
