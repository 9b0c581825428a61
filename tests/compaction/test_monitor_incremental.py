"""The monitor's pressure estimate is incremental: a check of a view that extends the last one
estimates only the appended turns, and gives exactly what a fresh monitor gives (issue 12)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction.monitor import ContextMonitor, Figures
from tether.compaction.pressure import (
    CompactionPolicy,
    ModelLimits,
    PressureSource,
    estimate_tokens,
    make_pressure,
    trigger_reached,
)
from tether.messages import Turn, Usage, text_turn

from .strategies import any_limits, any_policy

LIMITS = ModelLimits(context_window=100_000, max_output_tokens=4_000)


def _turns(n: int, start: int = 0) -> list[Turn]:
    return [
        text_turn(f"t{i}", "user" if i % 2 == 0 else "assistant", "word " * (i % 37))
        for i in range(start, start + n)
    ]


def test_extending_check_estimates_only_the_appended_turns() -> None:
    texts: list[str] = []

    def counting(text: str) -> int:
        texts.append(text)
        return len(text) // 4

    monitor = ContextMonitor(LIMITS, tokenizer=counting)
    view = tuple(_turns(1_000))
    monitor.check(view)
    assert len(texts) == 1_000
    texts.clear()
    # Forget the per-turn cache: a check that walked the whole view would estimate all again.
    monitor._cache.clear()  # pyright: ignore[reportPrivateUsage]
    longer = view + tuple(_turns(2, start=1_000))
    decision = monitor.check(longer)
    assert len(texts) == 2  # the 1,000 earlier turns were not looked at again
    assert decision.pressure.tokens == estimate_tokens(longer, tokenizer=lambda t: len(t) // 4)


def test_a_rewritten_prefix_is_measured_again() -> None:
    monitor = ContextMonitor(LIMITS)
    view = tuple(_turns(50))
    monitor.check(view)
    edited = (text_turn("t0", "user", "x" * 4_000), *view[1:], *_turns(1, start=50))
    p = monitor.check(edited).pressure
    assert p.tokens == estimate_tokens(edited)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("extend"), st.integers(0, 5)),
        st.tuples(st.just("cut"), st.integers(0, 30)),
        st.tuples(st.just("edit"), st.integers(0, 30)),
        st.tuples(st.just("observe"), st.integers(1, 5_000)),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_incremental_equals_fresh_measurement(steps: list[tuple[str, int]]) -> None:
    """Whatever the sequence of views (appends, cuts, edits, list or tuple) and observed usage,
    the incremental monitor reports the same pressure as one that re-estimates everything."""
    inc = ContextMonitor(LIMITS, system_tokens=7)
    ref = ContextMonitor(LIMITS, system_tokens=7)
    view: list[Turn] = _turns(3)
    made = 3
    for op, arg in steps:
        if op == "extend":
            view = view + _turns(arg, start=made)
            made += arg
        elif op == "cut":
            view = view[: max(0, len(view) - arg)]
        elif op == "edit" and view:
            i = arg % len(view)
            view = [*view[:i], text_turn(f"e{made}", "user", "edit " * arg), *view[i + 1 :]]
            made += 1
        elif op == "observe" and view:
            for m in (inc, ref):
                gen = m.generation
                m.check(tuple(view))
                m.observe(
                    view_len=len(view),
                    usage=Usage(input_tokens=arg, output_tokens=3),
                    assistant_turn_id=view[-1].id,
                    generation=gen,
                )
            continue
        got = inc.check(view if made % 2 else tuple(view)).pressure
        ref._seen, ref._sums = (), [0]  # pyright: ignore[reportPrivateUsage] - force a full pass
        want = ref.check(tuple(view)).pressure
        assert (got.tokens, got.source) == (want.tokens, want.source)


@settings(max_examples=300, deadline=None)
@given(
    any_limits,
    any_policy,
    st.integers(-10, 3_000_000),
    st.sampled_from(["measured", "estimated"]),
    st.booleans(),
)
def test_the_kept_figures_equal_the_pressure_rules(
    limits: ModelLimits,
    policy: CompactionPolicy,
    tokens: int,
    source: PressureSource,
    approximate: bool,
) -> None:
    """A check works out the window, trigger and fractions once per limits and policy
    (`Figures`): the same pressure and trigger as the rules of `tether.compaction.pressure`."""
    figures = Figures.of(limits, policy)
    expected = make_pressure(tokens, limits, policy, source=source, is_approximate=approximate)
    assert figures.pressure(tokens, source=source, is_approximate=approximate) == expected
    assert (expected.tokens >= figures.trigger) == trigger_reached(expected, limits, policy)


def test_the_figures_follow_new_limits() -> None:
    monitor = ContextMonitor(LIMITS)
    turns = _turns(40)
    before = monitor.check(turns).pressure.effective_window
    monitor.set_limits(ModelLimits(context_window=50_000, max_output_tokens=4_000))
    after = monitor.check(turns).pressure.effective_window
    assert before == LIMITS.context_window - 4_000 and after == 50_000 - 4_000
