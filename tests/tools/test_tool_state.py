"""Durable per-tool state: a tool keeps values across its calls and across a resume (stored as
append-only `tool_state` events in the session), sees only its own, and a value over 64 KiB of
JSON is refused with a clear error that keeps the old value."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from kit.events import results
from tether.agent.events import AgentEvent
from tether.agent.sessions import AgentSession
from tether.errors import ToolError
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call
from tether.tools.base import tool
from tether.tools.context import ToolContext
from tether.tools.state import MAX_STATE_VALUE_BYTES, STATE_EVENT, ToolStates


@tool(safe=True)
def counter(step: int = 1, *, ctx: ToolContext) -> str:
    """Add `step` to a running count and return it.

    Args:
        step: how much to add.
    """
    n = ctx.state.get("n", 0) + step
    ctx.state.set("n", n)
    return f"count={n}"


@tool(safe=True)
def stash(size: int, *, ctx: ToolContext) -> str:
    """Keep a string of `size` characters.

    Args:
        size: its length.
    """
    ctx.state.set("blob", "x" * size)
    return f"kept {size}"


@tool(safe=True)
def peek(*, ctx: ToolContext) -> str:
    """Say what this tool sees of the state."""
    return f"n={ctx.state.get('n')} blob={len(ctx.state.get('blob', ''))} keys={ctx.state.keys()}"


def test_state_lives_across_calls_and_resume(tmp_path: Path) -> None:
    store = SessionStore()
    provider = ScriptedProvider([call("counter", step=2), call("counter", step=3), "done"])
    session = AgentSession.new(store, cwd=tmp_path)
    make_agent(provider, tmp_path, tools=[counter], session=session).run_sync("count")
    session.close()
    sid = session.id
    assert sid is not None
    stored = [e.data for e in store.load(sid).events if e.kind == STATE_EVENT]
    assert stored == [
        {"tool": "counter", "key": "n", "value": 2},
        {"tool": "counter", "key": "n", "value": 5},
    ]
    events: list[AgentEvent] = []
    resumed = AgentSession.resume(store, sid)
    again = ScriptedProvider([call("counter", step=1), call("peek"), "done"])
    make_agent(again, tmp_path, tools=[counter, peek], session=resumed, events=events).run_sync(
        "more"
    )
    resumed.close()
    assert [r.content for r in results(events)] == ["count=6", "n=None blob=0 keys=[]"]


def test_a_value_over_64_kib_is_refused_and_the_old_one_kept(tmp_path: Path) -> None:
    store = SessionStore()
    provider = ScriptedProvider(
        [call("stash", size=10), call("stash", size=MAX_STATE_VALUE_BYTES), "done"]
    )
    events: list[AgentEvent] = []
    session = AgentSession.new(store, cwd=tmp_path)
    agent = make_agent(provider, tmp_path, tools=[stash], session=session, events=events)
    agent.run_sync("keep")
    session.close()
    ok, refused = results(events)
    assert ok.content == "kept 10" and not ok.is_error
    assert refused.is_error and "64 KiB" in refused.content and "'blob'" in refused.content
    assert str(MAX_STATE_VALUE_BYTES + 2) in refused.content  # the JSON string's quotes
    assert session.id is not None
    values = [e.data.get("value") for e in store.load(session.id).events if e.kind == STATE_EVENT]
    assert values == ["x" * 10]


def test_non_json_values_are_refused(tmp_path: Path) -> None:
    view = ToolStates().for_tool("t")
    for bad in ({1, 2}, float("nan"), object()):
        with pytest.raises(ToolError, match="not plain JSON"):
            view.set("k", bad)
    assert view.keys() == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]), st.sampled_from(["k", "j"]), st.none() | json_values
        ),
        max_size=12,
    )
)
def test_the_events_fold_back_to_the_live_state(ops: list[tuple[str, str, object]]) -> None:
    log: list[tuple[str | None, dict[str, object]]] = []
    live = ToolStates(lambda kind, data: log.append((kind, data)))
    for tool_name, key, value in ops:
        view = live.for_tool(tool_name)
        if value is None:
            view.delete(key)
        else:
            view.set(key, value)
    assert ToolStates.from_events(log).snapshot() == {k: v for k, v in live.snapshot().items()}
