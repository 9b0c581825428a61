"""Which calls of one reply wait for which (`tether.tools.exec.order`, pure): a property over
random replies, and the rules named in the module's docstring."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.tools.exec.order import Footprint, conflict, footprint, waits

SAFE = {"read": True, "grep": True, "ls": True, "todo": True, "write": False, "edit": False,
        "bash": False, "task": False, "mcp__x__y": False}
calls = st.lists(
    st.tuples(st.sampled_from(sorted(SAFE)), st.sampled_from(["a.txt", "./a.txt", "b/c.py", "d"])),
    max_size=8,
)


@given(calls)
def test_each_call_waits_for_exactly_the_earlier_calls_it_conflicts_with(reply: list[tuple[str, str]]) -> None:
    prints = [footprint(name, {"path": path}, safe=SAFE[name]) for name, path in reply]
    order = waits(prints)
    for i in range(len(prints)):
        assert order[i] == tuple(j for j in range(i) if conflict(prints[j], prints[i]))
        for j in order[i]:
            assert j < i


@given(calls)
def test_conflict_is_symmetric_and_read_only_calls_never_conflict(reply: list[tuple[str, str]]) -> None:
    prints = [footprint(name, {"path": path}, safe=SAFE[name]) for name, path in reply]
    for a, (na, _) in zip(prints, reply, strict=True):
        for b, (nb, _) in zip(prints, reply, strict=True):
            assert conflict(a, b) == conflict(b, a)
            if SAFE[na] and SAFE[nb] and "todo" not in (na, nb):
                assert not conflict(a, b)


def fp(name: str, path: str = "a.txt") -> Footprint:
    return footprint(name, {"path": path}, safe=SAFE.get(name, False))


def test_the_rules() -> None:
    assert conflict(fp("write"), fp("read", "./a.txt"))  # a read waits for a write of its path
    assert not conflict(fp("write"), fp("write", "b.txt"))  # different paths: parallel
    assert conflict(fp("write"), fp("edit"))
    assert conflict(fp("bash"), fp("read", "zzz")) and conflict(fp("mcp__x__y"), fp("ls"))
    assert not conflict(fp("task"), fp("task")) and conflict(fp("task"), fp("write"))
    assert conflict(fp("todo"), fp("todo")) and not conflict(fp("todo"), fp("write"))
