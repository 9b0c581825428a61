"""Hooks at every point, as library callbacks and as settings-declared shell commands (JSON on
stdin, a decision on stdout, exit 2 denies), run under the OS sandbox; a failing or hanging hook
is reported (`warning` `hook_failed`) and the run goes on."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent, routed, subagent_agent
from kit.events import results
from kit.hosts import ScriptedApprover
from tether import ApprovalDecision, HookDecision, HookInput, Hooks, tool
from tether.agent.events import AgentEvent, WarningEvent
from tether.agent.host import Host
from tether.agent.subagents import TASK_TOOL
from tether.agent.turn.hooks import ShellOutcome, parse_shell_outcome
from tether.errors import RunError
from tether.messages import TextBlock, ToolResultBlock, Turn
from tether.providers.base import StreamError
from tether.testing import ScriptedProvider, call
from tether.tools.base import Tool
from tether.wire import check_pairing


def echo_tool(ran: list[str]) -> Tool:
    @tool
    def echo(text: str) -> str:
        """Echo text.

        Args:
            text: what to echo.
        """
        ran.append(text)
        return f"echo {text}"

    return echo


def failures(events: list[AgentEvent]) -> list[str]:
    return [e.message for e in events if isinstance(e, WarningEvent) and e.kind == "hook_failed"]


def two_step(**args: Any) -> ScriptedProvider:
    return ScriptedProvider([call("echo", id="e1", **args), "done"])


# -- library hooks ------------------------------------------------------------------------------


def test_library_before_tool_deny_wins_and_nothing_is_asked(tmp_path: Path) -> None:
    ran: list[str] = []
    host = ScriptedApprover(default=ApprovalDecision.once())
    seen: list[HookInput] = []

    def no_secrets(inp: HookInput) -> HookDecision | None:
        seen.append(inp)
        assert inp.call is not None
        if "secret" in inp.call.arguments["text"]:
            return HookDecision.deny("no secrets in echo")
        return None

    events: list[AgentEvent] = []
    agent = subagent_agent(
        two_step(text="the secret"),
        tmp_path,
        tools=[echo_tool(ran)],
        settings={"tools": {"sandbox": "auto", "approval": "ask"}},
        host=Host(approver=host, on_event=events.append),
        hooks=Hooks(before_tool=[no_secrets]),
        )
    agent.run_sync("go")
    assert ran == [] and host.seen == []
    [res] = results(events)
    assert res.is_error and "no secrets in echo" in res.content
    assert seen[0].hook == "before_tool" and seen[0].agent_path == ("main",)


def test_library_before_tool_rewrite_reaches_the_gate_and_the_tool(tmp_path: Path) -> None:
    ran: list[str] = []
    host = ScriptedApprover(default=ApprovalDecision.once())

    async def shout(inp: HookInput) -> HookDecision:
        assert inp.call is not None
        return HookDecision.rewrite({"text": inp.call.arguments["text"].upper()})

    agent = subagent_agent(
        two_step(text="hi"),
        tmp_path,
        tools=[echo_tool(ran)],
        settings={"tools": {"sandbox": "auto", "approval": "ask"}},
        host=Host(approver=host),
        hooks=Hooks(before_tool=[shout]),
    )
    agent.run_sync("go")
    assert ran == ["HI"]
    assert host.seen[0].call.arguments == {"text": "HI"}
    # the stored call keeps the model's arguments
    assert agent.history[1].tool_calls[0].arguments == {"text": "hi"}


def test_library_after_tool_sees_the_result(tmp_path: Path) -> None:
    seen: list[HookInput] = []
    agent = subagent_agent(
        two_step(text="a"),
        tmp_path,
        tools=[echo_tool([])],
        hooks=Hooks(after_tool=[seen.append]),
    )
    agent.run_sync("go")
    [inp] = seen
    assert inp.hook == "after_tool" and inp.result is not None
    assert inp.result.text == "echo a" and inp.call is not None and inp.call.id == "e1"


def test_library_user_prompt_denies_or_rewrites(tmp_path: Path) -> None:
    provider = ScriptedProvider(["answer"])
    events: list[AgentEvent] = []

    def guard(inp: HookInput) -> HookDecision:
        assert inp.prompt is not None
        if "forbidden" in inp.prompt:
            return HookDecision.deny("not that topic")
        return HookDecision(prompt=inp.prompt + " (be brief)")

    agent = subagent_agent(
        provider, tmp_path, hooks=Hooks(user_prompt=[guard]), host=Host(on_event=events.append),
    )
    denied = agent.run_sync("the forbidden thing")
    assert denied.stop_reason == "prompt_denied" and provider.requests == []
    assert agent.history == []
    assert any(isinstance(e, WarningEvent) and "not that topic" in e.message for e in events)
    assert agent.run_sync("hello").text == "answer"
    sent = provider.requests[0].messages[0]
    assert isinstance(sent.content[0], TextBlock) and sent.content[0].text == "hello (be brief)"


def test_library_before_compaction_is_told_the_reason(tmp_path: Path) -> None:
    provider = ScriptedProvider([StreamError(kind="context_overflow", message="prompt is too long")])
    seen: list[str | None] = []
    agent = subagent_agent(
        provider, tmp_path, hooks=Hooks(before_compaction=[lambda i: seen.append(i.reason)])
    )
    with pytest.raises(RunError):
        agent.run_sync("go")
    assert seen == ["overflow"]


def test_library_stop_hook_can_send_the_model_back_to_work(tmp_path: Path) -> None:
    provider = ScriptedProvider(["done already", "done, tests pass"])
    answers: list[str | None] = []

    def stop(inp: HookInput) -> HookDecision | None:
        answers.append(inp.answer)
        return None if "tests pass" in (inp.answer or "") else HookDecision.deny("run the tests")

    agent = subagent_agent(provider, tmp_path, hooks=Hooks(stop=[stop]))
    result = agent.run_sync("go")
    assert result.text == "done, tests pass" and result.stop_reason == "end_turn"
    assert answers == ["done already", "done, tests pass"]
    last_user = provider.requests[1].messages[-1]
    assert last_user.role == "user" and "run the tests" in last_user.text


def test_transform_context_changes_only_what_is_sent(tmp_path: Path) -> None:
    provider = ScriptedProvider(["ok"])

    def redact(view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        return tuple(
            Turn(id=t.id, role=t.role, content=(TextBlock(text=t.text.replace("pw123", "***")),))
            for t in view
        )

    agent = subagent_agent(provider, tmp_path, hooks=Hooks(transform_context=[redact]))
    agent.run_sync("my password is pw123")
    assert provider.requests[0].messages[0].text == "my password is ***"
    assert agent.history[0].text == "my password is pw123"  # the stored turn is unchanged


def _drop_results(view: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """A careless hook: tool results removed (their turns may end up empty)."""
    out: list[Turn] = []
    for t in view:
        kept = tuple(b for b in t.content if not isinstance(b, ToolResultBlock))
        out.append(replace(t, content=kept))
    return tuple(out)


def _drop_last_user(view: tuple[Turn, ...]) -> tuple[Turn, ...]:
    """A careless hook: the last user turn removed (the view ends on the assistant)."""
    last = max(i for i, t in enumerate(view) if t.role == "user")
    return view[:last] + view[last + 1 :]


@pytest.mark.parametrize("careless", [_drop_results, _drop_last_user])
def test_a_transform_output_is_repaired_before_it_is_sent(tmp_path: Path, careless: Any) -> None:
    """Every request stays one the provider accepts: each call answered right after it, a
    user-terminated tail, whatever a `transform_context` hook returns."""

    @tool(safe=True)
    def probe() -> str:
        """Probe."""
        return "probed"

    provider = ScriptedProvider([call("probe"), call("probe"), "done"])
    agent = make_agent(provider, tmp_path, tools=[probe], hooks=Hooks(transform_context=[careless]))
    assert agent.run_sync("go").text == "done"
    assert len(provider.requests) == 3
    for request in provider.requests:
        view = tuple(request.messages)
        assert check_pairing(view) == [], view
        assert view[-1].role == "user"
    assert agent.history[2].tool_results  # the stored turns are unchanged


def test_a_failing_transform_is_reported_and_skipped(tmp_path: Path) -> None:
    provider = ScriptedProvider(["ok"])
    events: list[AgentEvent] = []

    def broken(view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        raise ValueError("oops")

    agent = subagent_agent(
        provider, tmp_path, hooks=Hooks(transform_context=[broken]), host=Host(on_event=events.append),
    )
    assert agent.run_sync("hello").text == "ok"
    assert provider.requests[0].messages[0].text == "hello"
    assert any("oops" in m for m in failures(events))


def test_failing_and_hanging_library_hooks_are_reported_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    events: list[AgentEvent] = []

    def broken(inp: HookInput) -> HookDecision:
        raise RuntimeError("hook bug")

    async def hangs(inp: HookInput) -> HookDecision:
        await asyncio.sleep(3600)
        return HookDecision.deny("never")

    agent = subagent_agent(
        two_step(text="x"),
        tmp_path,
        tools=[echo_tool(ran)],
        settings={"hooks": {"timeout": "300ms"}},
        hooks=Hooks(before_tool=[broken, hangs], after_tool=[broken]),
        host=Host(on_event=events.append),
        )
    started = time.monotonic()
    assert agent.run_sync("go").text == "done"
    assert time.monotonic() - started < 30
    assert ran == ["x"]
    found = failures(events)
    assert len(found) == 3
    assert "RuntimeError: hook bug" in found[0] and "timed out" in found[1]


def test_subagents_inherit_library_hooks(tmp_path: Path) -> None:
    seen: list[tuple[str, ...]] = []
    provider = ScriptedProvider(
        routed(
            {
                "main": [call(TASK_TOOL, id="t1", name="a", prompt="sub"), "final"],
                "sub": [call("echo", id="e2", text="in child"), "child done"],
            }
        )
    )
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=[echo_tool([])],
        hooks=Hooks(before_tool=[lambda i: seen.append(i.agent_path)]),
    )
    agent.run_sync("main")
    assert seen == [("main",), ("main", "task:t1")]


# -- shell hooks -------------------------------------------------------------------------------


def shell(point: str, command: str, **extra: Any) -> dict[str, Any]:
    return {"hooks": {point: [{"command": command, **extra}]}}


def test_shell_before_tool_exit_2_denies_with_stderr_and_gets_json_on_stdin(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    events: list[AgentEvent] = []
    agent = subagent_agent(
        two_step(text="x"),
        tmp_path,
        tools=[echo_tool(ran)],
        settings=shell("before_tool", "cat > seen.json; echo 'echo is off today' >&2; exit 2"),
        host=Host(on_event=events.append),
        )
    agent.run_sync("go")
    assert ran == []
    [res] = results(events)
    assert res.is_error and "echo is off today" in res.content
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["hook"] == "before_tool" and seen["agent_path"] == ["main"]
    assert seen["tool_call"] == {"id": "e1", "name": "echo", "arguments": {"text": "x"}}


def test_shell_before_tool_rewrites_and_matches_tool_names(tmp_path: Path) -> None:
    ran: list[str] = []
    agent = subagent_agent(
        two_step(text="x"),
        tmp_path,
        tools=[echo_tool(ran)],
        settings={
            "hooks": {
                "before_tool": [
                    {"command": "printf '{\"arguments\": {\"text\": \"from hook\"}}'"},
                    {"command": "exit 2", "tools": ["bash", "wr*"]},  # does not match echo
                ]
            }
        },
    )
    agent.run_sync("go")
    assert ran == ["from hook"]


def test_shell_after_tool_user_prompt_stop_and_before_compaction(tmp_path: Path) -> None:
    settings = {
        "hooks": {
            "after_tool": [{"command": "cat >> after.jsonl; echo >> after.jsonl"}],
            "user_prompt": [{"command": "printf '{\"prompt\": \"rewritten by the hook\"}'"}],
            "stop": [
                {
                    "command": "if [ -e stopped ]; then exit 0; fi; touch stopped; "
                    "printf '{\"decision\": \"deny\", \"reason\": \"check twice\"}'"
                }
            ],
        }
    }
    provider = ScriptedProvider([call("echo", id="e1", text="x"), "first", "second"])
    agent = subagent_agent(provider, tmp_path, tools=[echo_tool([])], settings=settings)
    result = agent.run_sync("original")
    assert result.text == "second"
    assert provider.requests[0].messages[0].text == "rewritten by the hook"
    assert "check twice" in provider.requests[2].messages[-1].text
    [after] = [json.loads(x) for x in (tmp_path / "after.jsonl").read_text().splitlines() if x]
    assert after["tool_result"] == {"content": "echo x", "is_error": False}

    compaction = subagent_agent(
        ScriptedProvider([StreamError(kind="context_overflow", message="too long")]),
        tmp_path,
        settings=shell("before_compaction", "cat > compaction.json"),
    )
    with pytest.raises(RunError):
        compaction.run_sync("go")
    assert json.loads((tmp_path / "compaction.json").read_text())["reason"] == "overflow"


def test_shell_hooks_run_inside_the_sandbox(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    events: list[AgentEvent] = []
    agent = subagent_agent(
        two_step(text="x"),
        tmp_path,
        tools=[echo_tool([])],
        settings=shell("after_tool", f"echo escaped > {outside}; echo ran > inside.txt"),
        host=Host(on_event=events.append),
        )
    agent.run_sync("go")
    assert (tmp_path / "inside.txt").read_text() == "ran\n"  # it ran, in the project folder
    assert not outside.exists()  # but could not write outside it (private /tmp or refused)


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("echo broken >&2; exit 1", "exit code 1: broken"),
        ("echo 'not json'", "stdout is not JSON"),
        ("sleep 30", "timed out after 0.5 s"),
    ],
)
def test_failing_and_hanging_shell_hooks_are_reported_and_the_run_goes_on(
    tmp_path: Path, command: str, why: str
) -> None:
    ran: list[str] = []
    events: list[AgentEvent] = []
    agent = subagent_agent(
        two_step(text="x"),
        tmp_path,
        tools=[echo_tool(ran)],
        settings=shell("before_tool", command, timeout="500ms"),
        host=Host(on_event=events.append),
        )
    started = time.monotonic()
    assert agent.run_sync("go").text == "done"
    assert time.monotonic() - started < 20
    assert ran == ["x"]  # a failed hook does not block the call
    [message] = failures(events)
    assert why in message and "before_tool hook" in message


@pytest.mark.parametrize(
    "command",
    ["exit 127", "echo 'not json'", "sleep 30", "/nonexistent/check.sh"],
    ids=["crash", "bad-json", "timeout", "missing-script"],
)
def test_on_failure_deny_refuses_the_call_a_failed_before_tool_hook_could_not_check(
    tmp_path: Path, command: str
) -> None:
    ran: list[str] = []
    events: list[AgentEvent] = []
    provider = two_step(text="x")
    settings = shell("before_tool", command, timeout="500ms")
    settings["hooks"]["on_failure"] = "deny"
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=[echo_tool(ran)],
        settings=settings,
        host=Host(on_event=events.append),
    )
    assert agent.run_sync("go").text == "done"
    assert ran == []  # not run
    [result] = results(events)
    assert result.is_error and "hooks.on_failure = deny" in result.content
    assert "it was not run" in result.content
    [message] = failures(events)
    assert "the call is refused" in message
    assert check_pairing(provider.requests[-1].messages) == []


def test_on_failure_deny_covers_library_hooks_and_only_before_tool(tmp_path: Path) -> None:
    ran: list[str] = []
    events: list[AgentEvent] = []

    def broken(inp: HookInput) -> HookDecision:
        raise RuntimeError("hook bug")

    agent = subagent_agent(
        ScriptedProvider([call("echo", id="e1", text="x"), "done"]),
        tmp_path,
        tools=[echo_tool(ran)],
        settings={"hooks": {"on_failure": "deny"}},
        hooks=Hooks(before_tool=[broken], after_tool=[broken], stop=[broken]),
        host=Host(on_event=events.append),
    )
    assert agent.run_sync("go").text == "done"  # a failed stop hook does not hold the run
    assert ran == []
    found = failures(events)
    assert len(found) == 3 and "the call is refused" in found[0]
    assert all("its answer is ignored" in m for m in found[1:])


def test_shell_decision_parsing_rules() -> None:
    assert parse_shell_outcome(ShellOutcome(code=0, stdout="", stderr=""), 1).allow
    deny = parse_shell_outcome(ShellOutcome(code=2, stdout="", stderr="because"), 1)
    assert not deny.allow and deny.reason == "because"
    obj = parse_shell_outcome(
        ShellOutcome(code=0, stdout='{"decision": "deny", "reason": "r"}', stderr=""), 1
    )
    assert not obj.allow and obj.reason == "r"
    for bad in ('{"decision": "maybe"}', '{"arguments": [1]}', "[1]", '{"prompt": 3}'):
        with pytest.raises(Exception, match=r"must|not a JSON object"):
            parse_shell_outcome(ShellOutcome(code=0, stdout=bad, stderr=""), 1)


def test_without_an_os_sandbox_shell_hooks_do_not_run_and_are_reported(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    provider = ScriptedProvider(["ok"])
    agent = subagent_agent(
        provider,
        tmp_path,
        settings={
            "tools": {"sandbox": "none"},
            "hooks": {"user_prompt": [{"command": "touch ran; printf '{\"prompt\": \"x\"}'"}]},
        },
        host=Host(on_event=events.append),
        )
    assert agent.run_sync("hello").text == "ok"
    assert provider.requests[0].messages[0].text == "hello"
    assert not (tmp_path / "ran").exists()
    [message] = failures(events)
    assert "no OS sandbox" in message


def test_the_subagents_and_hooks_page_samples_are_valid_settings() -> None:
    from tether import AgentConfig

    docs = Path(__file__).resolve().parents[2] / "docs"
    page = (docs / "subagents-and-hooks.md").read_text(encoding="utf-8")
    samples = [block.split("```", 1)[0] for block in page.split("```json")[1:]]
    assert len(samples) == 2
    agents = AgentConfig.model_validate(json.loads(samples[0])).agents
    assert agents.named["reviewer"].tools == ["read", "grep"] and agents.max_depth == 2
    hooks = AgentConfig.model_validate(json.loads(samples[1])).hooks
    assert hooks.before_tool[0].timeout_s == 5.0 and hooks.timeout_s == 30.0


@given(
    code=st.one_of(st.none(), st.integers(-64, 255)),
    stdout=st.one_of(
        st.text(max_size=40),
        st.dictionaries(
            st.sampled_from(["decision", "reason", "arguments", "prompt", "other"]),
            st.one_of(st.none(), st.text(max_size=5), st.integers(), st.just({"a": 1})),
            max_size=4,
        ).map(json.dumps),
    ),
    stderr=st.text(max_size=20),
)
def test_any_shell_outcome_is_a_decision_or_a_reported_failure(
    code: int | None, stdout: str, stderr: str
) -> None:
    from tether.agent.turn.hooks import HookFailed

    outcome = ShellOutcome(code=code, stdout=stdout.strip(), stderr=stderr)
    try:
        decision = parse_shell_outcome(outcome, 1.0)
    except HookFailed:
        assert code != 2 and (code is None or code != 0 or outcome.stdout)
        return
    assert isinstance(decision, HookDecision)
    if code == 2:
        assert not decision.allow
    else:
        assert code == 0
        assert decision.arguments is None or isinstance(decision.arguments, dict)
        assert decision.prompt is None or isinstance(decision.prompt, str)


def test_a_stop_hook_is_told_it_refused_and_cannot_loop_the_run(tmp_path: Path) -> None:
    """trial5 (MEDIUM cost): a `stop` hook that always refuses looped the run until
    `--max-turns` (50 requests), and its input could not tell it already refused. It gets
    `stop_hook_active` and `stop_denials`; past `hooks.max_stop_denials` the answer stands with
    one `stop_hook_loop` warning."""
    settings = {
        "hooks": {
            "max_stop_denials": 2,
            "stop": [
                {
                    "command": "cat >> stop.jsonl; echo >> stop.jsonl; "
                    "printf '{\"decision\": \"deny\", \"reason\": \"keep going\"}'"
                }
            ],
        }
    }
    events: list[AgentEvent] = []
    provider = ScriptedProvider(["a1", "a2", "a3", "b1", "b2", "b3"])
    agent = subagent_agent(
        provider, tmp_path, settings=settings, host=Host(on_event=events.append)
    )
    result = agent.run_sync("go")
    assert result.text == "a3" and len(provider.requests) == 3
    seen = [json.loads(x) for x in (tmp_path / "stop.jsonl").read_text().splitlines() if x]
    assert [(s["stop_hook_active"], s["stop_denials"]) for s in seen] == [
        (False, 0), (True, 1), (True, 2)
    ]  # fmt: skip
    loops = [e.message for e in events if isinstance(e, WarningEvent) and e.kind == "stop_hook_loop"]
    assert len(loops) == 1 and "keep going" in loops[0] and "max_stop_denials = 2" in loops[0]
    (tmp_path / "stop.jsonl").unlink()  # the next run starts counting again
    assert agent.run_sync("again").text == "b3"
    again = [json.loads(x) for x in (tmp_path / "stop.jsonl").read_text().splitlines() if x]
    assert [s["stop_denials"] for s in again] == [0, 1, 2]
