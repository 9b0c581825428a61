"""`assemble`: the one function every host goes through to build an agent's parts (`Agent`,
`Agent.from_settings`, subagents, replay, Jobs, `tether compact`): the provider chain, limits,
compaction, tool context (sandbox, policy, environment, background shells, language servers),
the call gate, the turn policies, tracing.
Does not own: the record itself and how it is re-derived (`tether.agent.assembly.parts`), the
rules from a config to its values (`tether.agent.assembly.build`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from tether.agent.approval import ApprovalGate
from tether.agent.assembly import build, prompting
from tether.agent.assembly.parts import (
    AgentParts,
    RepairReporter,
    RequestSettings,
    attempts_of,
    budget_of,
    extra_writable,
    limits_of,
    views_of,
)
from tether.agent.assembly.policies import turn_policies
from tether.agent.events import AgentEvent, WarningEvent
from tether.agent.host import Host
from tether.agent.runtime import Runtime, default_id_factory
from tether.agent.sessions import AgentSession
from tether.agent.turn.checkpoints import Checkpoints
from tether.agent.turn.compacting import AutoCompaction
from tether.agent.turn.gate import CallGate
from tether.agent.turn.hook_check import hook_problems
from tether.agent.turn.hooks import HookRunner, Hooks
from tether.agent.turn.tool_calls import ToolCalls
from tether.lsp.manager import lsp_manager
from tether.permissions.rules import Rules
from tether.providers.base import Provider
from tether.sandbox.config import sandbox_config
from tether.sandbox.detect import detect_sandbox
from tether.sandbox.policy import limits_for, policy_for
from tether.settings import AgentConfig
from tether.tools.base import Tool, ToolContext
from tether.tools.context import Spawner
from tether.tools.env import scrubbed_env, secret_values
from tether.tools.exec.background import BackgroundShells
from tether.tools.exec.hygiene import Hygiene, HygieneConfig, loop_breaker_config
from tether.tools.exec.persist import OutputLimits
from tether.tools.exec.read_state import ReadState
from tether.tools.fetch import WebPolicy
from tether.tools.registry import ToolRegistry
from tether.tools.tool_settings import validate_tool_settings
from tether.tracing import tracing_for

__all__ = ["assemble"]


def assemble(
    config: AgentConfig,
    chain: Sequence[Provider],
    tools: ToolRegistry | Sequence[Tool] = (),
    *,
    root: Path,
    session: AgentSession,
    system: str | None = None,
    host: Host | None = None,
    runtime: Runtime | None = None,
    hooks: Hooks | None = None,
    compaction: AutoCompaction | bool = True,
    spawn: Spawner | None = None,
    hygiene: HygieneConfig | None = None,
    note: Callable[[str], None] = lambda _line: None,
) -> AgentParts:
    """The parts of an agent over `chain` with `config`.

    Args:
        config: the configuration (turns, timeouts, retries, tool policy, compaction, hooks).
        chain: the providers in fallback order (`tether.agent.assembly.build.resolve_models`).
        tools: the tools offered (a registry is used as is; a sequence is copied into one,
            keeping only the names in `config.tools.only` when it is set).
        root: the working folder (resolved); file tools are confined to it.
        session: the agent's session (its folder holds persisted tool outputs; hooks see its
            id).
        system: the system prompt (default `config.run.system`).
        host: the host's callbacks (default: none).
        runtime: the process-facing hooks (default `Runtime()`).
        hooks: library hooks, run before the settings' shell hooks.
        compaction: True: automatic compaction as `config.context` says; False: none; or
            your own `AutoCompaction`.
        spawn: runs a subagent for the `task` tool (`tether.agent.subagents.Subagents`).
        hygiene: dedup / stale-read rules (`tether.tools.exec.hygiene`; None: the defaults).
        note: receives one-line setup notes (an unknown window, tracing unavailable).

    Raises:
        ConfigError: an invalid config (an inconsistent thinking decay, a bad window entry).
        ValueError: `chain` is empty.
        tether.sandbox.base.SandboxUnavailableError: the config (or `TETHER_SANDBOX`) forces
            a sandbox kind that does not work on this machine.
    """
    chain = tuple(chain)
    if not chain:
        raise ValueError("an agent needs at least one model")
    host = host or Host()
    emit = host.on_event or _drop
    rt = runtime or Runtime()
    root = Path(root).resolve()
    registry = tools if isinstance(tools, ToolRegistry) else _registry(tools, config.tools.only)
    run = RequestSettings.of(
        config, system, session.context, root, main=host.agent_path == ("main",)
    )
    limits = limits_of(chain, config, note)
    fixed = build.fixed_text(run.system, list(registry))
    if isinstance(compaction, AutoCompaction):
        auto: AutoCompaction | None = compaction
    elif compaction:
        auto = build.auto_compaction(limits, config, fixed=fixed)
    else:
        auto = None
    env = os.environ if rt.env is None else rt.env
    refused = build.refused_env(config)
    allowed = tuple(config.tools.allow_env)
    tracing = rt.tracing or tracing_for(config.tracing, env, note=note)
    kind = config.tools.sandbox
    sandbox = detect_sandbox(None if kind == "auto" else kind)
    tool_env = scrubbed_env(env, refused, allowed)
    tool_context = ToolContext(
        root=root,
        env=tool_env,
        session_dir=session.session_dir,
        policy=prompting.skill_policy(config, root, registry, session.context),
        wrap=rt.wrap,
        questions=host.questions,
        sandbox=sandbox,
        network=config.tools.network,
        limits=limits_for(config.tools),
        max_timeout_s=max(config.tools.max_timeout_s, config.tools.timeout_s),
        spawn=spawn,
        web=WebPolicy.of(config.tools.web),
        # the main agent's only: a subagent's would outlive its `task` call
        shells=BackgroundShells(config.tools.max_background)
        if host.agent_path == ("main",)
        else None,
        states=session.tool_states(),
        tool_settings=validate_tool_settings(registry, config.tools.settings),
        lsp=host.lsp
        or lsp_manager(  # language servers: started on the first touch of a file
            config.lsp,
            root=root,
            env=tool_env,
            sandbox=sandbox,
            policy=policy_for(config.tools, root),
            session_dir=session.session_dir,
            on_warning=_warn_to(emit, note),
        ),
    )
    hook_runner = HookRunner(
        library=hooks,
        settings=config.hooks,
        context=lambda: tool_context,
        emit=emit,
        agent_path=host.agent_path,
        session_id=lambda: session.id,
    )
    if host.agent_path == ("main",):  # a subagent runs the same hooks: said once
        for problem in hook_problems(
            config.hooks,
            root=root,
            env=dict(tool_env),
            sandbox=None if sandbox is None else lambda: sandbox_config(tool_context),
        ):
            emit(WarningEvent(kind="hook_unusable", message=problem))
    mode = config.tools.approval
    hygiene_state = Hygiene(hygiene or loop_breaker_config(config.tools.loop_breaker), root=str(root))
    reads = ReadState(hygiene_state.rules, enabled=config.read.dedup)
    if auto is not None:
        auto.use_reads(reads, elide_stale=config.context.elide_stale_reads)
    tool_calls = ToolCalls(
        reads=reads,
        hygiene=hygiene_state,
        notes=prompting.subfolder_notes(config, root, session.context),
        output_limits=OutputLimits(threshold_chars=build.output_threshold_chars(config, limits)),
        gate=CallGate(
            ApprovalGate(
                "ask" if mode == "read-only" else mode,
                host.approver,
                agent_path=host.agent_path,
                rules=Rules.of(
                    config.permissions.allow, config.permissions.ask, config.permissions.deny
                ),
                root=str(root),
            ),
            hook_runner,
            spawn=config.agents.spawn,
        ),
        tracing=tracing,
    )
    retry = build.retry_policy(config, rt.env)
    repairs = RepairReporter(emit)
    secrets = (
        *secret_values(env, refused, allowed),
        *build.provider_keys(chain, config, rt.env),
        *rt.secret_texts,
    )
    guard = None if auto is not None else build.runaway_guard(limits, config, fixed=fixed)
    checkpoints = (
        Checkpoints(
            root,
            max_file_bytes=config.checkpoints.max_file_size,
            emit=emit,
            extra=extra_writable(tool_context),
        )
        if config.checkpoints.enabled and host.agent_path == ("main",)
        else None
    )
    budget = budget_of(config)
    return AgentParts(
        config=config,
        chain=chain,
        views=views_of(chain, repairs),
        attempts=attempts_of(chain, retry, rt, emit, tracing),
        limits=limits,
        compaction=auto,
        guard=guard,
        tool_calls=tool_calls,
        hooks=hook_runner,
        registry=registry,
        tool_context=tool_context,
        secrets=secrets,
        tracing=tracing,
        run=run,
        retry=retry,
        runtime=rt,
        host=host,
        root=root,
        sandbox_missing=sandbox is None,
        library_hooks=hooks,
        id_factory=rt.new_id or default_id_factory(),
        repairs=repairs,
        checkpoints=checkpoints,
        budget=budget,
        policies=turn_policies(
            config,
            hook_runner,
            context=auto or guard,
            budget=budget,
            checkpoints=checkpoints,
            root=root,
            main=host.agent_path == ("main",),
        ),
    )


def _drop(_event: AgentEvent) -> None:
    return None


def _registry(tools: Sequence[Tool], only: Sequence[str] | None) -> ToolRegistry:
    registry = ToolRegistry()
    for t in tools:
        if only is None or t.name in only:
            registry.add(t)
    return registry


def _warn_to(
    emit: Callable[[AgentEvent], None], note: Callable[[str], None]
) -> Callable[[str, str], None]:
    """A `(kind, message)` warning as a setup note line and a `warning` event."""

    def warn(kind: str, message: str) -> None:
        note(f"warning: {message}")
        emit(WarningEvent(kind=kind, message=message))

    return warn
