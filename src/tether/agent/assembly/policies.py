"""An agent's turn policies, built from its config (`tether.agent.turn.policy`).

Owns: `turn_policies` (the policies in order; on a settings change, the ones whose inputs did
not change are kept). Adding a per-turn feature is one class in `agent/turn/` and one line here.
Does not own: the policies (`agent/turn/`), the record that holds them
(`tether.agent.assembly.parts.AgentParts.policies`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tether.agent.turn.budget import Budget, BudgetPolicy
from tether.agent.turn.checkpoint_policy import CheckpointPolicy
from tether.agent.turn.checkpoints import Checkpoints
from tether.agent.turn.compacting import AutoCompaction, RunawayGuard
from tether.agent.turn.continuation_policy import ContinuationPolicy
from tether.agent.turn.hooks import HookRunner
from tether.agent.turn.output_schema import OutputSchemaPolicy
from tether.agent.turn.plan import PlanMode
from tether.agent.turn.policy import Policies, TurnPolicy
from tether.agent.turn.shell_notices import ShellNotices
from tether.agent.turn.stop_hooks import StopHooks
from tether.agent.turn.todo_policy import TodoRestatement
from tether.agent.turn.tool_limit import ToolCallLimit
from tether.settings import AgentConfig

__all__ = ["turn_policies"]

_P = TypeVar("_P", bound=TurnPolicy)

_OWN = (
    BudgetPolicy,
    AutoCompaction,
    RunawayGuard,
    TodoRestatement,
    ShellNotices,
    ContinuationPolicy,
    StopHooks,
    PlanMode,
    OutputSchemaPolicy,
    ToolCallLimit,
)
"""The policy kinds `turn_policies` builds (the checkpoint policy too); others are a host's."""


def turn_policies(
    config: AgentConfig,
    hooks: HookRunner,
    *,
    context: AutoCompaction | RunawayGuard | None,
    budget: Budget | None,
    checkpoints: Checkpoints | None,
    old: Policies | None = None,
    root: Path | None = None,
    main: bool = True,
) -> Policies:
    """An agent's turn policies, in order: the budget (first: it stops before a compaction
    is paid for), compaction or the runaway guard, the todo list restated after a compaction
    (after it: it sees the marker just written), continuations, the `stop` hooks, plan mode,
    the final answer's schema and the tool-call cap (the main agent's only: a subagent's answer
    is its `task` call's result; `root` resolves a schema file), checkpoints, then the host's
    (from `old`). A policy of `old` whose inputs are the same is kept (its state with it): a
    settings change rebuilds only the policies of the sections that changed (the output
    schema's and the tool-call cap's per-run counts survive a change of another setting)."""
    kept = list(old or ())

    def reuse(
        kind: type[_P], same: Callable[[_P], bool], make: Callable[[], _P | None]
    ) -> _P | None:
        found = next((p for p in kept if type(p) is kind), None)
        return found if found is not None and same(found) else make()

    run = config.run
    limit = run.continuation_limit
    own: list[TurnPolicy | None] = [
        None
        if budget is None
        else reuse(BudgetPolicy, lambda p: p.budget is budget, lambda: BudgetPolicy(budget)),
        context,
        reuse(TodoRestatement, lambda _p: True, TodoRestatement),
        reuse(ShellNotices, lambda _p: True, ShellNotices) if main else None,
        reuse(
            ContinuationPolicy,
            lambda p: p.max_continuations == limit,
            lambda: ContinuationPolicy(limit),
        ),
        reuse(StopHooks, lambda p: p.hooks is hooks, lambda: StopHooks(hooks)),
        reuse(PlanMode, lambda _p: True, PlanMode),
        reuse(
            OutputSchemaPolicy,
            lambda p: p.source == run.output_schema and p.retries == run.output_schema_retries,
            lambda: OutputSchemaPolicy.of(run, root or Path.cwd()),
        )
        if main
        else None,
        reuse(
            ToolCallLimit,
            lambda p: p.cap == run.max_tool_calls,
            lambda: ToolCallLimit.of(run.max_tool_calls),
        )
        if main
        else None,
        None
        if checkpoints is None
        else reuse(
            CheckpointPolicy,
            lambda p: p.checkpoints is checkpoints,
            lambda: CheckpointPolicy(checkpoints),
        ),
    ]
    host = [p for p in kept if not isinstance(p, (*_OWN, CheckpointPolicy))]
    return Policies([*(p for p in own if p is not None), *host])
