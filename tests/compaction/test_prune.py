"""Progressive pruning of old tool results (pure): byte-stable stubs, a set that only grows,
chunks instead of one result per request, never the recent turns, never the user's words."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction.pressure import estimate_tokens
from tether.compaction.prompt import PERSISTED_OUTPUT_TAG
from tether.compaction.prune import (
    PRUNE_TAG,
    PrunePolicy,
    Pruner,
    apply_prune,
    plan_prune,
    prune_policy,
    prune_stub,
    pruned_results,
)
from tether.messages import (
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    text_turn,
    tool_result,
)

POLICY = PrunePolicy(
    trigger=0.6, target=0.4, min_chunk=0.1, keep_recent_turns=4, min_result_bytes=100
)


def rounds(sizes: list[int], *, user_every: int = 0) -> tuple[Turn, ...]:
    """A task, then one tool round per size (result of that many characters); a user text
    turn after every `user_every` rounds."""
    turns: list[Turn] = [text_turn("task", "user", "the task, verbatim")]
    for k, n in enumerate(sizes):
        c = ToolCallBlock(id=f"c{k}", name="read", arguments={"path": f"f{k}.py"})
        turns.append(Turn(id=f"a{k}", role="assistant", content=(c,), stop_reason="tool_use"))
        body = f"result {k}\n" + "x" * n
        turns.append(Turn(id=f"u{k}", role="user", content=(tool_result(c.id, body),)))
        if user_every and k % user_every == user_every - 1:
            turns.append(text_turn(f"q{k}", "user", f"user words {k} " + "w" * n))
    return tuple(turns)


sizes_st = st.lists(st.integers(0, 3_000), min_size=0, max_size=25)


def test_stub_says_what_it_was_and_how_to_get_it_back() -> None:
    call = ToolCallBlock(id="c1", name="bash", arguments={"command": "pytest -q"})
    stub = prune_stub(call, tool_result("c1", "line\n" * 300), "u9")
    assert stub.startswith(PRUNE_TAG)
    assert 'bash {"command": "pytest -q"}' in stub  # the tool and the call
    assert "1,500 bytes, 300 lines" in stub  # its size
    assert "recall turn u9" in stub  # how to get it back
    long = ToolCallBlock(id="c2", name="write", arguments={"content": "y" * 10_000})
    assert len(prune_stub(long, tool_result("c2", "ok"), "u1")) < 400  # the call is cut
    err = ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="boom"),), is_error=True)
    assert "an error of 4 bytes" in prune_stub(call, err, "u9")


@given(sizes_st, st.integers(0, 10), st.sampled_from([100, 1000]))
def test_stubs_are_byte_stable_and_memo_changes_nothing(
    sizes: list[int], keep: int, min_bytes: int
) -> None:
    policy = PrunePolicy(keep_recent_turns=keep, min_result_bytes=min_bytes)
    view = rounds(sizes)
    ids = frozenset(f"c{k}" for k in range(0, len(sizes), 2))
    memo: dict[str, tuple[Turn, Turn]] = {}
    a = apply_prune(view, ids, policy)
    b = apply_prune(rounds(sizes), ids, policy, memo=memo)  # equal input, other objects
    c = apply_prune(view, ids, policy, memo=memo)  # from the memo
    assert a == b == c
    # a stubbed turn is a pure function of itself: the same when the view grew after it
    longer = apply_prune((*view, *rounds([5])[1:]), ids, policy)
    end = max(0, len(view) - keep)
    assert longer[:end] == a[:end]


@given(sizes_st, st.integers(0, 200_000), st.integers(1_000, 100_000), st.booleans())
def test_plan_is_monotone_and_spares_recent_turns(
    sizes: list[int], tokens: int, window: int, everything: bool
) -> None:
    view = rounds(sizes)
    before = frozenset({"c0", "zz"})
    after = plan_prune(
        view,
        tokens=tokens,
        effective_window=window,
        policy=POLICY,
        pruned=before,
        everything=everything,
    )
    assert before <= after  # only grows
    recent = {r.tool_call_id for t in view[-POLICY.keep_recent_turns :] for r in t.tool_results}
    assert not (after - before) & recent  # never chooses the recent turns
    if not everything and tokens < POLICY.trigger * window:
        assert after is before  # below the trigger nothing happens


@given(sizes_st, st.integers(1, 4), st.integers(0, 8))
def test_only_old_tool_results_change(sizes: list[int], user_every: int, keep: int) -> None:
    """Never the user's words, never the recent turns, whatever set is applied."""
    policy = PrunePolicy(keep_recent_turns=keep, min_result_bytes=0)
    view = rounds(sizes, user_every=user_every)
    everything = frozenset(c.id for t in view for c in t.tool_calls)
    out = apply_prune(view, everything, policy)
    assert len(out) == len(view)
    for i, (old, new) in enumerate(zip(view, out, strict=True)):
        if i >= len(view) - keep:
            assert new is old  # the recent turns pass untouched
        assert new.id == old.id and new.role == old.role
        for b_old, b_new in zip(old.content, new.content, strict=True):
            if not isinstance(b_old, ToolResultBlock):
                assert b_new is b_old  # text, calls, images: never touched
            else:
                assert isinstance(b_new, ToolResultBlock)
                assert b_new.tool_call_id == b_old.tool_call_id
                assert b_new.is_error == b_old.is_error


def test_persisted_stubs_small_results_and_images() -> None:
    persisted = f'{PERSISTED_OUTPUT_TAG} path="tool-results/c0.txt" size_bytes="9">' + "p" * 2000
    c0 = ToolCallBlock(id="c0", name="bash", arguments={})
    c1 = ToolCallBlock(id="c1", name="read", arguments={})
    c2 = ToolCallBlock(id="c2", name="screenshot", arguments={})
    img = ToolResultBlock(
        tool_call_id="c2", content=(ImageBlock(media_type="image/png", data="AA=="),)
    )
    view = (
        Turn(id="a", role="assistant", content=(c0, c1, c2)),
        Turn(
            id="u",
            role="user",
            content=(tool_result("c0", persisted), tool_result("c1", "tiny"), img),
        ),
        *rounds([10] * 4)[1:],
    )
    ids = plan_prune(view, tokens=10**9, effective_window=1_000, policy=POLICY, everything=True)
    assert "c0" not in ids and "c1" not in ids  # the persisted stub and the small result stay
    assert "c2" in ids  # an image is worth pruning
    out = apply_prune(view, ids, POLICY)
    assert "and 1 image" in out[1].tool_results[2].text
    assert pruned_results(out) == 1


def test_prunes_in_chunks_not_one_result_per_request() -> None:
    """A session that grows one round per request: the sent prefix changes only when a chunk
    is pruned, and each chunk brings the estimate from the trigger down to the target."""
    window = 40_000
    pruner = Pruner(POLICY)
    changes: list[int] = []
    view: tuple[Turn, ...] = ()
    for n in range(1, 120):
        view = rounds([4_000] * n)
        tokens = estimate_tokens(pruner.shape(view))
        if pruner.step(view, tokens=tokens, effective_window=window):
            after = estimate_tokens(pruner.shape(view))
            assert after <= POLICY.target * window + 1_100  # down to the target (+1 result)
            assert tokens - after >= POLICY.min_chunk * window  # a real chunk
            changes.append(n)
    assert len(changes) >= 5  # it kept the session going ...
    gaps = [b - a for a, b in itertools.pairwise(changes)]
    assert min(gaps) >= 5  # ... and the prefix stayed fixed for many requests between steps
    shaped = pruner.shape(view)
    assert estimate_tokens(shaped) < POLICY.trigger * window + 1_100


def test_waits_when_too_little_can_be_pruned() -> None:
    """Above the trigger, but the old results would free less than a chunk: nothing yet (the
    summary pass is the next step), rather than one small result per request."""
    view = rounds([2_000, 2_000, 50_000, 50_000])  # the big ones are the recent turns
    ids = plan_prune(view, tokens=100_000, effective_window=100_000, policy=POLICY)
    assert ids == frozenset()


def test_default_policy_follows_the_summary_threshold() -> None:
    p = prune_policy(0.8)
    assert (round(p.trigger, 3), round(p.target, 3), p.min_chunk) == (0.6, 0.2, 0.1)
    assert prune_policy(0.5).trigger < 0.5  # pruning still comes before the summary


@settings(max_examples=30)
@given(st.lists(st.integers(0, 6_000), min_size=10, max_size=40))
def test_stub_names_the_turn_that_holds_the_result(sizes: list[int]) -> None:
    view = rounds(sizes)
    ids = plan_prune(view, tokens=10**9, effective_window=1_000, policy=POLICY, everything=True)
    out = apply_prune(view, ids, POLICY)
    for old, new in zip(view, out, strict=True):
        for r_old, r_new in zip(old.tool_results, new.tool_results, strict=True):
            if r_new.text.startswith(PRUNE_TAG):
                assert f"recall turn {old.id} " in r_new.text
                assert r_old.tool_call_id in ids


@given(
    st.lists(st.integers(0, 3_000), min_size=1, max_size=30),
    st.lists(st.integers(1, 30), min_size=1, max_size=6),
    st.integers(0, 6),
)
def test_incremental_shape_equals_the_full_pass(
    sizes: list[int], cuts: list[int], keep: int
) -> None:
    """`Pruner.shape` over a growing view (with prune steps between) gives what `apply_prune`
    gives from scratch, and the turns it shaped before stay the same objects."""
    policy = PrunePolicy(keep_recent_turns=keep, min_result_bytes=100, min_chunk=0.0)
    pruner = Pruner(policy)
    full = rounds(sizes)
    for cut in sorted(cuts):
        view = full[: min(len(full), 2 * cut + 1)]
        pruner.step(view, tokens=10**9, effective_window=10**9 // 2)
        shaped = pruner.shape(view)
        assert shaped == apply_prune(view, pruner.ids, policy)
        longer = full[: len(view) + 2]  # one more round, no prune step
        grown = pruner.shape(longer)
        assert grown == apply_prune(longer, pruner.ids, policy)
        end = max(0, len(view) - keep)
        assert all(a is b for a, b in zip(shaped[:end], grown[:end], strict=True))
