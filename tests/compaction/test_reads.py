"""Stale-read elision and read dedup as pure passes (`tether.compaction.reads`): Hypothesis
properties against a plain oracle (which results change, to what), byte stability and
idempotence, the incremental state equal to the whole pass, and the work a request costs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction.reads import (
    DEDUP_TAG,
    STALE_TAG,
    FileRules,
    ReadDedup,
    StalePolicy,
    StaleReads,
    dedup_stub,
    elide_stale_reads,
    read_key,
    stale_boundary,
    stale_stub,
    touched,
)
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock, Turn, tool_result

RULES = FileRules(root="/w")
POLICY = StalePolicy(keep_recent_turns=3, step_turns=2)
PATHS = ("a.py", "./a.py", "b.py", "/w/b.py", "c.py")
TOOLS = ("read", "read", "edit", "write", "grep")


@st.composite
def histories(draw: st.DrawFn, max_rounds: int = 12) -> list[Turn]:
    """Rounds of [assistant with 1-3 calls, user with their results (some errors)], now and
    then a user's own words, each turn id unique."""
    turns: list[Turn] = []
    n = draw(st.integers(0, max_rounds))
    k = 0
    for i in range(n):
        if draw(st.integers(0, 4)) == 0:
            turns.append(Turn(id=f"p{i}", role="user", content=(TextBlock(text=f"say {i}"),)))
        calls: list[ToolCallBlock] = []
        results: list[ToolResultBlock] = []
        for _ in range(draw(st.integers(1, 3))):
            k += 1
            name = draw(st.sampled_from(TOOLS))
            args: dict[str, object] = {"path": draw(st.sampled_from(PATHS))}
            if name == "read" and draw(st.booleans()):
                args["offset"] = draw(st.sampled_from((1, 5)))
            calls.append(ToolCallBlock(id=f"c{k}", name=name, arguments=args))
            body = draw(st.sampled_from(("one", "two", "one")))
            results.append(tool_result(f"c{k}", body, is_error=draw(st.integers(0, 5)) == 0))
        turns.append(Turn(id=f"a{i}", role="assistant", content=tuple(calls)))
        turns.append(Turn(id=f"u{i}", role="user", content=tuple(results)))
    return turns


def _oracle_stale(view: list[Turn], policy: StalePolicy) -> dict[str, str]:
    """read id -> its expected stub, the simple quadratic way."""
    end = stale_boundary(len(view), policy)
    calls = {c.id: (c, t.id) for t in view for c in t.tool_calls}
    events: list[tuple[str, str, str | None, str | None]] = []  # (call id, turn id, read, wrote)
    for t in view[:end]:
        for r in t.tool_results:
            if r.tool_call_id in calls:
                read, wrote = touched(calls[r.tool_call_id][0], ok=not r.is_error, rules=RULES)
                events.append((r.tool_call_id, t.id, read, wrote))
    out: dict[str, str] = {}
    for i, (cid, tid, read, _) in enumerate(events):
        if read is None:
            continue
        for cid2, tid2, _, wrote in events[i + 1 :]:
            if wrote == read:
                out[cid] = stale_stub(calls[cid][0], tid, calls[cid2][0], tid2)
                break
    return out


def _results(view: tuple[Turn, ...] | list[Turn]) -> dict[str, ToolResultBlock]:
    return {r.tool_call_id: r for t in view for r in t.tool_results}


@settings(max_examples=150, deadline=None)
@given(histories())
def test_only_reads_of_later_changed_paths_change_and_to_their_stub(view: list[Turn]) -> None:
    out = elide_stale_reads(view, RULES, POLICY)
    expected = _oracle_stale(view, POLICY)
    before, after = _results(view), _results(out)
    for cid, r in before.items():
        if cid in expected:
            assert after[cid].content == (TextBlock(text=expected[cid]),)
            assert not r.is_error
        else:
            assert after[cid] is r  # untouched, by reference
    assert len(out) == len(view)
    for t_in, t_out in zip(view, out, strict=True):
        assert t_in.id == t_out.id and t_in.role == t_out.role
        # everything but read results stays: the user's words, the calls, other results
        keep_in = [b for b in t_in.content if not isinstance(b, ToolResultBlock)]
        keep_out = [b for b in t_out.content if not isinstance(b, ToolResultBlock)]
        assert keep_in == keep_out
        if not any(
            isinstance(b, ToolResultBlock) and b.tool_call_id in expected for b in t_in.content
        ):
            assert t_out is t_in
    if not expected:
        assert out == tuple(view)


@settings(max_examples=100, deadline=None)
@given(histories())
def test_idempotent_incremental_and_byte_stable(view: list[Turn]) -> None:
    """Shaping every prefix with one state equals the whole pass each time; a stub, once
    shown, stays byte for byte the same on every later request; shaping twice changes
    nothing."""
    state = StaleReads(RULES, POLICY)
    shown: dict[str, tuple[object, ...]] = {}
    for k in range(len(view) + 1):
        out = state.shape(view[:k])
        assert out == elide_stale_reads(view[:k], RULES, POLICY)
        assert elide_stale_reads(out, RULES, POLICY) == out
        results = _results(out)
        for cid, content in shown.items():
            assert results[cid].content == content
        for cid, r in results.items():
            if r.text.startswith(STALE_TAG):
                shown.setdefault(cid, r.content)
    assert state.looked_at <= len(view)  # every turn looked at once
    # a view that does not extend the last one (a compaction) is shaped anew
    for other in (view[2:], view[:-1], view):
        assert state.shape(other) == elide_stale_reads(other, RULES, POLICY)


def test_never_a_read_after_the_change_nor_the_recent_turns() -> None:
    read1 = ToolCallBlock(id="r1", name="read", arguments={"path": "a.py"})
    edit = ToolCallBlock(id="e1", name="edit", arguments={"path": "./a.py"})
    read2 = ToolCallBlock(id="r2", name="read", arguments={"path": "/w/a.py"})
    view = [
        Turn(id="a0", role="assistant", content=(read1,)),
        Turn(id="u0", role="user", content=(tool_result("r1", "old"),)),
        Turn(id="a1", role="assistant", content=(edit,)),
        Turn(id="u1", role="user", content=(tool_result("e1", "ok"),)),
        Turn(id="a2", role="assistant", content=(read2,)),
        Turn(id="u2", role="user", content=(tool_result("r2", "new"),)),
    ]
    policy = StalePolicy(keep_recent_turns=0, step_turns=1)
    out = elide_stale_reads(view, RULES, policy)
    assert out[1].content[0] == tool_result("r1", stale_stub(read1, "u0", edit, "u1"))
    assert out[5] is view[5]  # read after the change: current
    # the recent turns (the tool loop in progress) are never touched
    assert (
        elide_stale_reads(view, RULES, StalePolicy(keep_recent_turns=3, step_turns=1))[1] is view[1]
    )
    # a failed edit changes nothing
    failed = [
        *view[:3],
        Turn(id="u1", role="user", content=(tool_result("e1", "x", is_error=True),)),
    ]
    assert elide_stale_reads(failed, RULES, policy) == tuple(failed)


def test_a_request_costs_the_new_turns_only() -> None:
    """A 2,000-turn loop of read/edit rounds: every turn is examined once by each pass, not
    once per request."""
    state = StaleReads(RULES)
    dedup = ReadDedup(RULES, lambda: frozenset())
    view: list[Turn] = []
    out: tuple[Turn, ...] = ()
    for i in range(1_000):
        name = "read" if i % 2 == 0 else "edit"
        c = ToolCallBlock(id=f"c{i}", name=name, arguments={"path": f"f{i % 7}.py"})
        view.append(Turn(id=f"a{i}", role="assistant", content=(c,)))
        view.append(Turn(id=f"u{i}", role="user", content=(tool_result(f"c{i}", "x" * 50),)))
        out = state.shape(dedup.shape(tuple(view)))
    assert state.looked_at <= len(view)
    assert dedup.looked_at == len(view)
    assert sum(1 for t in out for r in t.tool_results if r.text.startswith(STALE_TAG)) > 400


# --- dedup -----------------------------------------------------------------------------------


def _oracle_dedup(
    view: list[Turn] | tuple[Turn, ...], unchanged: frozenset[str]
) -> dict[str, str]:
    """Each unchanged re-read's note, naming the latest read of that path and slice whose same
    output went out whole (a re-read the map did not call unchanged goes out whole and becomes
    that read)."""
    calls = {c.id: (c, t.id) for t in view for c in t.tool_calls}
    full: dict[str, tuple[ToolCallBlock, str, ToolResultBlock]] = {}
    out: dict[str, str] = {}
    for t in view:
        for r in t.tool_results:
            if r.tool_call_id not in calls or r.is_error:
                continue
            call = calls[r.tool_call_id][0]
            _, wrote = touched(call, ok=True, rules=RULES)
            if wrote is not None:  # a change in between: the earlier output no longer counts
                full = {
                    k: v for k, v in full.items() if touched(v[0], ok=True, rules=RULES)[0] != wrote
                }
            key = read_key(call, RULES)
            if key is None:
                continue
            if key in full and call.id in unchanged and full[key][2].content == r.content:
                out[call.id] = dedup_stub(call, full[key][0], full[key][1])
            else:
                full[key] = (call, t.id, r)
    return out


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_dedup_only_when_the_same_output_is_above(view: list[Turn], data: st.DataObject) -> None:
    """A re-read becomes a note only when the map called it unchanged AND an earlier read of
    the same path and slice with exactly the same output is in the view (kept whole): the
    note never points at something that is not there."""
    reads = [c.id for t in view for c in t.tool_calls if c.name == "read"]
    unchanged = frozenset(data.draw(st.lists(st.sampled_from(reads), unique=True)) if reads else [])
    out = ReadDedup(RULES, lambda: unchanged).shape(view)
    expected = _oracle_dedup(view, unchanged)
    before, after = _results(view), _results(out)
    present = {cid: r for cid, r in after.items() if not r.text.startswith(DEDUP_TAG)}
    for cid, r in before.items():
        if cid in expected:
            assert after[cid].content == (TextBlock(text=expected[cid]),)
            earlier = expected[cid].split("call ")[1].split(" ")[0]
            assert present[earlier].content == r.content  # the same bytes, in the view, above
        else:
            assert after[cid] is r
    # incremental equals whole
    state = ReadDedup(RULES, lambda: unchanged)
    for k in range(len(view) + 1):
        assert state.shape(view[:k]) == ReadDedup(RULES, lambda: unchanged).shape(view[:k])
    assert state.looked_at == len(view)


def test_dedup_sends_the_full_text_once_the_earlier_output_is_gone() -> None:
    """The earlier read was pruned (its result is a stub now): the re-read goes out whole."""
    r1 = ToolCallBlock(id="r1", name="read", arguments={"path": "a.py"})
    r2 = ToolCallBlock(id="r2", name="read", arguments={"path": "a.py"})
    view = [
        Turn(id="a0", role="assistant", content=(r1,)),
        Turn(id="u0", role="user", content=(tool_result("r1", "body"),)),
        Turn(id="a1", role="assistant", content=(r2,)),
        Turn(id="u1", role="user", content=(tool_result("r2", "body"),)),
    ]
    state = ReadDedup(RULES, lambda: {"r2"})
    assert state.shape(view)[3].content[0] == tool_result("r2", dedup_stub(r2, r1, "u0"))
    pruned = [
        view[0],
        Turn(id="u0", role="user", content=(tool_result("r1", "[pruned]"),)),
        *view[2:],
    ]
    assert state.shape(pruned)[3] is view[3]
    gone = view[2:]  # compacted away
    assert state.shape(gone)[1] is view[3]


@settings(max_examples=150, deadline=None)
@given(histories())
def test_after_both_passes_a_note_points_at_output_that_is_there(view: list[Turn]) -> None:
    """Dedup, then stale-read elision (the order `AutoCompaction.shape` uses): every note in
    the request names an earlier read whose output is in the request, whole, equal to what the
    re-read returned."""
    unchanged = frozenset(c.id for t in view for c in t.tool_calls if c.name == "read")
    out = StaleReads(RULES, POLICY).shape(ReadDedup(RULES, lambda: unchanged).shape(view))
    before, after = _results(view), _results(out)
    order = {cid: i for i, cid in enumerate(after)}
    for cid, r in after.items():
        if r.text.startswith(DEDUP_TAG):
            earlier = r.text.split("call ")[1].split(" ")[0]
            assert after[earlier].content == before[cid].content
            assert order[earlier] < order[cid]
