"""The agent's shape: a thin facade with a short constructor and no base class to fill, a loop
that reads plain run data, and hosts that never reach inside (no code outside `agent/`
assigns an attribute of an agent)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import typing
from pathlib import Path

from kit.source import parse_file
from tether.agent.agent import Agent
from tether.agent.turn.state import RunState

ROOT = Path(__file__).resolve().parents[2]
AGENT_PACKAGE = ROOT / "src" / "tether" / "agent"
AGENTISH = re.compile(r"^(agent|child|parent|\w+_agent|agent_\w+)$")
"""Names that hold an agent in this code base (`agent`, `child`, `cli_agent`, `self.agent`)."""


def test_the_constructor_takes_at_most_ten_parameters() -> None:
    params = [p for p in inspect.signature(Agent.__init__).parameters if p != "self"]
    assert len(params) <= 10, params


def test_the_agent_has_no_base_class_to_fill() -> None:
    assert Agent.__bases__ == (object,)


def test_run_state_is_plain_data_without_callbacks() -> None:
    hints = typing.get_type_hints(RunState)
    for f in dataclasses.fields(RunState):
        assert "Callable" not in repr(hints[f.name]), f.name


def test_the_loop_knows_nothing_of_the_agent_object() -> None:
    tree = parse_file(AGENT_PACKAGE / "turn" / "loop.py")
    imported = {
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert "tether.agent.agent" not in imported


def _holds_an_agent(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return bool(AGENTISH.match(node.id))
    if isinstance(node, ast.Attribute):
        return bool(AGENTISH.match(node.attr))
    return False


def agent_attribute_assignments(path: Path) -> list[str]:
    """`agent.x = ...` (also augmented and annotated) where the object assigned on holds an
    agent, as `file:line`."""
    out: list[str] = []
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in elts:
                if isinstance(t, ast.Attribute) and _holds_an_agent(t.value):
                    out.append(f"{path.relative_to(ROOT)}:{t.lineno}")
    return out


def test_the_checker_sees_an_assignment() -> None:
    probe = ROOT / "tests" / "architecture" / "_probe_assign.py"
    probe.write_text("agent.max_turns = 3\nself.agent.compaction = None\nagent.parts.x = 1\n")
    try:
        assert agent_attribute_assignments(probe) == [
            "tests/architecture/_probe_assign.py:1",
            "tests/architecture/_probe_assign.py:2",
        ]
    finally:
        probe.unlink()


def test_nothing_outside_the_agent_package_assigns_an_agents_attributes() -> None:
    found: list[str] = []
    for folder in ("src", "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if AGENT_PACKAGE in path.parents:
                continue
            found += agent_attribute_assignments(path)
    assert found == [], "hosts change an agent through its methods, not its attributes"


def test_tether_run_reads_the_agent_through_its_public_surface() -> None:
    """`cli/run.py` words its exit lines from the result and the agent's public members, not
    from the parts record inside (`agent.parts.budget` was read for the budget's stop line)."""
    found: list[str] = []
    for name in ("run.py", "run_limits.py"):
        path = ROOT / "src" / "tether" / "cli" / name
        for node in ast.walk(parse_file(path)):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "parts"
                and isinstance(node.value, ast.Name)
                and AGENTISH.match(node.value.id)
            ):
                found.append(f"{name}:{node.lineno}")
    assert found == []
