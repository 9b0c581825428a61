"""`tether.providers.local.penalty`: the repetition penalty with the latest tool results exempt.
The rule is llama.cpp's (a positive logit divided by the penalty, a negative one multiplied),
over the last 64 generated tokens only (never the prompt), except for the exempt ids."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tether.messages import TextBlock, ToolResultBlock, Turn
from tether.providers.local.penalty import CopyPenalty, latest_results_text


def _scores(n: int = 10) -> np.ndarray:
    return np.linspace(-2.0, 2.5, n).astype(np.single)


def test_generated_tokens_are_penalised_as_llama_cpp_does_except_the_exempt() -> None:
    pen = CopyPenalty(1.25, frozenset({3}))
    prompt = np.array([1, 2, 3, 4, 5, 6, 7], dtype=np.intc)
    first = pen(prompt, _scores())  # the first call: everything so far is prompt
    assert np.array_equal(first, _scores())
    ids = np.array([*prompt, 3, 8, 0], dtype=np.intc)  # generated: 3 (exempt), 8, 0
    out = pen(ids, _scores())
    want = _scores()
    want[8] = want[8] / 1.25 if want[8] > 0 else want[8] * 1.25
    want[0] = want[0] / 1.25 if want[0] > 0 else want[0] * 1.25
    assert np.allclose(out, want)
    assert out[3] == _scores()[3] and out[1] == _scores()[1]  # exempt, and prompt-only


@given(
    generated=st.lists(st.integers(0, 9), max_size=80),
    exempt=st.frozensets(st.integers(0, 9)),
)
def test_only_recent_generated_tokens_not_exempt_change(generated: list[int], exempt: frozenset[int]) -> None:
    pen = CopyPenalty(1.1, exempt, last_n=64)
    prompt = np.array([0, 1, 2], dtype=np.intc)
    pen(prompt, _scores())
    ids = np.array([*prompt, *generated], dtype=np.intc)
    out = pen(ids, _scores())
    recent = set(generated[-64:])
    for t in range(10):
        s = _scores()[t]
        if t in recent and t not in exempt:
            assert np.isclose(out[t], s / 1.1 if s > 0 else s * 1.1)
        else:
            assert out[t] == s


def test_the_latest_results_are_the_last_turns_non_error_results() -> None:
    ok = ToolResultBlock(tool_call_id="a", content=(TextBlock(text="Python 3.11.7"),))
    bad = ToolResultBlock(tool_call_id="b", content=(TextBlock(text="boom"),), is_error=True)
    view = (Turn(id="u", role="user", content=(TextBlock(text="hi"),)), Turn(id="r", role="user", content=(ok, bad)))
    assert latest_results_text(view) == "Python 3.11.7"
    assert latest_results_text(view[:1]) == ""
    assert latest_results_text(()) == ""
