"""Safe mode: forced without an OS sandbox (warned once, no opt-out), `--safe`, switching from
the next request on, and a non-safe call that arrives anyway is refused, never run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from tether import Runtime
from tether.agent.agent import Agent
from tether.agent.events import AgentEvent, ToolResultEvent, WarningEvent
from tether.agent.host import Host
from tether.errors import ConfigError
from tether.messages import ToolCallBlock
from tether.testing import Reply, ScriptedProvider, call
from tether.tools.base import Tool, tool
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.registry import ToolRegistry
from tether.tools.safe_mode import offered_specs, refuse_in_safe_mode

SAFE_BUILTINS = ["read", "ls", "glob", "grep", "shell_output", "shell_kill", "todo"]


def safe_agent(
    provider: ScriptedProvider,
    *,
    sandbox: str,
    safe: bool = False,
    refused_env: list[str] | None = None,
    env: dict[str, str] | None = None,
    **kw: Any,
) -> Agent:
    """An agent under `sandbox` (`"any"`: a working one, else skip; `"none"`), `tools.safe`
    as given, tool subprocesses started from `env`."""
    tools: dict[str, Any] = {"safe": safe}
    if refused_env is not None:
        tools["refused_env"] = refused_env
    return make_agent(
        provider, settings={"tools": tools}, sandbox=sandbox, runtime=Runtime(env=env), **kw
    )


def _names(request_tools: tuple[object, ...]) -> list[str]:
    return [getattr(t, "name", "") for t in request_tools]


async def test_no_sandbox_forces_safe_mode_warns_once_and_refuses_writes(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            call("write", path="f.txt", content="x"),
            call("bash", command="touch g.txt"),
            "done",
            call("write", path="h.txt", content="x"),
            "done again",
        ]
    )
    events: list[AgentEvent] = []
    agent = safe_agent(
        provider, tools=builtin_tools(), root=tmp_path, sandbox="none", host=Host(on_event=events.append),
    )
    assert agent.safe_mode and agent.safe_mode_forced
    await agent.run("write please")
    await agent.run("again")
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert len(warnings) == 1 and warnings[0].kind == "no_sandbox"
    assert "bubblewrap" in warnings[0].message
    for req in provider.requests:
        assert _names(req.tools) == SAFE_BUILTINS
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.name for r in results] == ["write", "bash", "write"]
    assert all(r.is_error and "safe mode" in r.content for r in results)
    assert list(tmp_path.iterdir()) == []  # nothing was written
    with pytest.raises(ConfigError, match="no OS sandbox"):
        agent.set_safe_mode(False)  # no opt-out
    assert agent.safe_mode


async def test_safe_flag_with_a_sandbox(tmp_path: Path) -> None:
    provider = ScriptedProvider([call("write", path="f.txt", content="x"), "ok"])
    agent = safe_agent(
        provider, tools=builtin_tools(), root=tmp_path, sandbox="any", safe=True
    )
    await agent.run("go")
    assert _names(provider.requests[0].tools) == SAFE_BUILTINS
    assert not (tmp_path / "f.txt").exists()
    agent.set_safe_mode(False)  # allowed: a sandbox exists
    provider2 = ScriptedProvider([call("write", path="f.txt", content="x"), "ok"])
    agent.switch_model(provider2)
    await agent.run("go")
    assert "write" in _names(provider2.requests[0].tools)
    assert (tmp_path / "f.txt").read_text() == "x"


async def test_switch_takes_effect_from_the_next_request(tmp_path: Path) -> None:
    agent: Agent | None = None

    def lock_down() -> str:
        """Turn safe mode on (as a host would, between requests)."""
        assert agent is not None
        agent.set_safe_mode(True)
        return "locked"

    provider = ScriptedProvider(
        [
            Reply(blocks=(call("write", path="a.txt", content="1"), call("lock_down"))),
            call("write", path="b.txt", content="2"),  # arrives although no longer offered
            "end",
        ]
    )
    events: list[AgentEvent] = []
    agent = safe_agent(
        provider,
        tools=[*builtin_tools(), tool(lock_down, safe=True)],
        root=tmp_path,
        sandbox="any",
        host=Host(on_event=events.append),
        )
    await agent.run("go")
    first, second, _third = (_names(r.tools) for r in provider.requests)
    assert "write" in first and "bash" in first
    assert second == [*SAFE_BUILTINS, "lock_down"]
    assert (tmp_path / "a.txt").read_text() == "1"  # ran before the switch
    assert not (tmp_path / "b.txt").exists()
    refused = [e for e in events if isinstance(e, ToolResultEvent) and e.is_error]
    assert len(refused) == 1 and "safe mode" in refused[0].content


# --- pure parts ---------------------------------------------------------------------------


def _tool(name: str, safe: bool) -> Tool:
    def fn() -> str:
        return name

    return tool(fn, name=name, safe=safe)


flags = st.lists(st.booleans(), max_size=8)


@given(flags, st.booleans())
def test_offered_specs_are_exactly_the_safe_tools_in_order(safe: list[bool], mode: bool) -> None:
    reg = ToolRegistry(_tool(f"t{i}", s) for i, s in enumerate(safe))
    got = [s.name for s in offered_specs(reg, mode)]
    want = [f"t{i}" for i, s in enumerate(safe) if s or not mode]
    assert got == want
    assert [s.name for s in offered_specs(reg, mode)] == want  # cached answer is the same
    reg.add(_tool("late", False))  # the registry changed: the cache must not serve stale specs
    assert ("late" in [s.name for s in offered_specs(reg, mode)]) is not mode


@given(st.booleans(), st.booleans(), st.sampled_from(["t", "missing"]))
def test_refusal_only_for_known_unsafe_tools_in_safe_mode(
    safe: bool, mode: bool, name: str
) -> None:
    reg = ToolRegistry([_tool("t", safe)])
    block = ToolCallBlock(id="c1", name=name, arguments={})
    refused = refuse_in_safe_mode(reg, block, mode)
    assert (refused is not None) == (mode and name == "t" and not safe)
    if refused is not None:
        assert refused.is_error and refused.tool_call_id == "c1" and "not run" in refused.text


async def test_refused_env_is_a_parameter(tmp_path: Path) -> None:
    from tether.tools.env import DEFAULT_REFUSED

    provider = ScriptedProvider(
        [call("bash", command='echo "[$CORP_VAULT_KEYRING]"; echo corp-vault-value-1234'), "ok"]
    )
    events: list[AgentEvent] = []
    agent = safe_agent(
        provider,
        tools=builtin_tools(),
        root=tmp_path,
        sandbox="any",
        env={"PATH": os.environ["PATH"], "CORP_VAULT_KEYRING": "corp-vault-value-1234"},
        refused_env=[*DEFAULT_REFUSED, "CORP_VAULT_*"],
        host=Host(on_event=events.append),
        )
    assert "CORP_VAULT_KEYRING" not in agent.tool_context.env
    await agent.run("go")
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.content.splitlines() == ["[]", "[REDACTED]"]  # value also masked in output
