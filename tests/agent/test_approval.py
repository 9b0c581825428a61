"""The approval gate: which calls each mode asks about, allow once / for the session / deny with
a reason the model sees, an edit's diff in the request, parallel calls asked one at a time, a
failing approver denies without crashing, and `read-only` is safe mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from kit.events import results
from kit.hosts import ScriptedApprover
from tether import ApprovalDecision, ApprovalRequest
from tether.agent.agent import Agent
from tether.agent.approval import APPROVAL_MODES, ApprovalMode, needs_approval
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.testing import Reply, ScriptedProvider, call


def gated(provider: ScriptedProvider, root: Path, mode: str = "ask", **kw: Any) -> Agent:
    """An agent with the built-in tools under a working OS sandbox, approval `mode`."""
    return make_agent(provider, root, sandbox="any", approval=mode, builtins=True, **kw)


@given(mode=st.sampled_from(APPROVAL_MODES), name=st.text(max_size=8), safe=st.booleans())
def test_needs_approval_rules(mode: ApprovalMode, name: str, safe: bool) -> None:
    asked = needs_approval(mode, name, safe=safe)
    if safe or mode in ("auto", "read-only"):
        assert not asked
    elif mode == "ask":
        assert asked
    else:
        assert asked == (name not in ("write", "edit"))


async def test_deny_with_reason_reaches_the_model_and_nothing_runs(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("bash", command="touch made.txt"), "ok"])
    host = ScriptedApprover(ApprovalDecision.deny("use the Makefile instead"))
    events: list[AgentEvent] = []
    agent = gated(provider, tmp_path, host=Host(approver=host, on_event=events.append))
    await agent.run("go")
    assert not (tmp_path / "made.txt").exists()
    [res] = results(events)
    assert res.is_error and "denied" in res.content and "use the Makefile instead" in res.content
    assert "Their reason: use the Makefile instead. Do not repeat" in res.content  # a full stop
    assert host.seen[0].kind == "exec" and host.seen[0].call.arguments == {
        "command": "touch made.txt"
    }
    sent = provider.requests[1].messages[-1].content[0]
    assert "use the Makefile instead" in str(sent)


async def test_allow_for_session_asks_once_per_tool(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            call("bash", command="echo 1 > a.txt"),
            call("bash", command="echo 2 > b.txt"),
            call("write", path="c.txt", content="c"),
            "done",
        ]
    )
    host = ScriptedApprover(ApprovalDecision.for_session(), ApprovalDecision.once())
    agent = gated(provider, tmp_path, host=Host(approver=host))
    await agent.run("go")
    assert [r.call.name for r in host.seen] == ["bash", "write"]
    assert (tmp_path / "b.txt").exists() and (tmp_path / "c.txt").read_text() == "c"


async def test_edit_request_carries_its_diff(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 2\n")
    provider = ScriptedProvider(
        [call("edit", path="app.py", old_string="y = 2", new_string="y = 3"), "done"]
    )
    host = ScriptedApprover(ApprovalDecision.once())
    agent = gated(provider, tmp_path, host=Host(approver=host))
    await agent.run("go")
    [req] = host.seen
    assert req.kind == "edit" and req.diff is not None
    assert "-y = 2\n" in req.diff and "+y = 3\n" in req.diff and "a/app.py" in req.diff
    assert (tmp_path / "app.py").read_text() == "x = 1\ny = 3\n"


async def test_auto_edit_lets_edits_through_and_asks_bash(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(
                blocks=(
                    call("write", id="c1", path="w.txt", content="w"),
                    call("bash", id="c2", command="echo hi"),
                )
            ),
            "done",
        ]
    )
    host = ScriptedApprover(ApprovalDecision.once())
    agent = gated(provider, tmp_path, mode="auto-edit", host=Host(approver=host))
    await agent.run("go")
    assert [r.call.name for r in host.seen] == ["bash"]
    assert (tmp_path / "w.txt").exists()


async def test_parallel_calls_are_asked_one_at_a_time(tmp_path: Path) -> None:
    calls = tuple(call("bash", id=f"c{i}", command=f"echo {i}") for i in range(3))
    provider = ScriptedProvider([Reply(blocks=calls), "done"])
    host = ScriptedApprover(*(ApprovalDecision.once() for _ in range(3)), pause_s=0.01)
    agent = gated(provider, tmp_path, host=Host(approver=host))
    await agent.run("go")
    assert len(host.seen) == 3 and host.max_active == 1


async def test_failing_approver_denies_and_the_run_goes_on(tmp_path: Path) -> None:
    async def broken(_request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("prompt crashed")

    provider = ScriptedProvider([call("bash", command="touch x"), "finished"])
    events: list[AgentEvent] = []
    agent = gated(provider, tmp_path, host=Host(approver=broken, on_event=events.append))
    result = await agent.run("go")
    assert result.text == "finished"
    [res] = results(events)
    assert res.is_error and "prompt crashed" in res.content
    assert not (tmp_path / "x").exists()


async def test_safe_tools_and_headless_are_never_asked(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello")
    provider = ScriptedProvider([call("read", path="f.txt"), call("grep", pattern="h"), "ok"])
    host = ScriptedApprover()  # no answers scripted: being asked would deny with an error
    events: list[AgentEvent] = []
    await gated(provider, tmp_path, host=Host(approver=host, on_event=events.append)).run("go")
    assert host.seen == [] and not any(r.is_error for r in results(events))
    provider2 = ScriptedProvider([call("bash", command="touch y"), "ok"])
    await gated(provider2, tmp_path).run("go")  # no approver: headless runs it
    assert (tmp_path / "y").exists()


async def test_read_only_mode_is_safe_mode(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("write", path="z.txt", content="z"), "ok"])
    agent = gated(provider, tmp_path, mode="read-only", host=Host(approver=ScriptedApprover()))
    assert agent.safe_mode and agent.approval_mode == "read-only"
    await agent.run("go")
    assert not (tmp_path / "z.txt").exists()
    agent.set_approval_mode("auto")
    assert not agent.safe_mode and agent.approval_mode == "auto"
    agent.set_approval_mode("read-only")
    assert agent.safe_mode


def test_a_reason_that_ends_its_sentence_gets_no_second_stop() -> None:
    from tether.agent.approval import denied_result
    from tether.messages import ToolCallBlock

    c = ToolCallBlock(id="c1", name="bash", arguments={})
    assert "Their reason: not now! Do not" in denied_result(c, " not now! ").text
    assert "Their reason" not in denied_result(c, "  ").text
