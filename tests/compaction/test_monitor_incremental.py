"""The monitor's pressure estimate is incremental: a check of a view that extends the last one
estimates only the appended turns, and gives exactly what a fresh monitor gives (issue 12)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import ModelLimits, estimate_tokens
from tether.messages import Turn, Usage, text_turn

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
