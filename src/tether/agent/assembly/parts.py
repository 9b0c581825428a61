"""Everything an agent is made of, in one record: built once from the config, re-derived when
the model or a setting changes.

Owns: `AgentParts` (the model chain and a wire-view builder per chain position, the request
runner, the model's limits, automatic compaction, the tool calls and their gate, the hooks,
the tools and their context, the secrets redacted from tool output, tracing, the run settings,
the host) and `RequestSettings` (the per-request values taken from the config), built by
`tether.agent.assembly.assemble.assemble`; `AgentParts.with_model` / `with_settings` re-derive
only what changed.
Does not own: reading settings files and resolving models (`tether.agent.assembly.build`), the loop
(`tether.agent.turn.loop`), what a host may change between and during runs (`tether.agent.agent`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tether.agent.assembly import build
from tether.agent.assembly.policies import turn_policies
from tether.agent.events import AgentEvent, WireRepairEvent
from tether.agent.host import Host
from tether.agent.runtime import Runtime
from tether.agent.turn.attempts import Attempts, Bench, provenance_of, summary_call
from tether.agent.turn.budget import Budget
from tether.agent.turn.checkpoints import Checkpoints
from tether.agent.turn.compacting import AutoCompaction, RunawayGuard
from tether.agent.turn.continuation import ThinkingDecay
from tether.agent.turn.hooks import HookRunner, Hooks
from tether.agent.turn.output_schema import load_schema
from tether.agent.turn.policy import Policies, TurnPolicy
from tether.agent.turn.tool_calls import ToolCalls
from tether.compaction.summarize import SummaryCall
from tether.effort import Effort
from tether.errors import ConfigError
from tether.messages import Turn
from tether.prompt.facts import SessionContext
from tether.prompt.system import compact_prompt, output_schema_block, system_prompt
from tether.providers.base import Provider
from tether.providers.catalog import WindowAllocator, info_of
from tether.providers.retry import RetryPolicy
from tether.sandbox.policy import add_dir_entries
from tether.settings import AgentConfig
from tether.tokens import ModelLimits
from tether.tools.base import ToolContext
from tether.tools.env import redact_secrets
from tether.tools.registry import ToolRegistry
from tether.tracing import Tracing
from tether.wire import Repair, ViewBuilder

__all__ = ["SETTINGS_APPLIED_LIVE", "AgentParts", "RepairReporter", "RequestSettings"]

SETTINGS_APPLIED_LIVE = ("run.", "context.", "retry.", "mcp.")
"""The config sections `AgentParts.with_settings` re-derives mid-session (dotted prefixes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSettings:
    """The per-request values of a run, from the config (`run.*`, `tools.timeout_s`) and the
    session's facts.

    Attributes:
        system: the system prompt (None: none sent): `tether.prompt.system.system_prompt`
            over the session's facts, `base` and `run.append_system`.
        compact_system: the same facts in the embedded model's compact form (sent to a
            provider whose `ModelInfo.compact_prompt` is true).
        base: the system prompt given to the agent (`Agent(system=)`), replacing tether's
            default (None: `run.system`, else the default).
        context: the session's facts (`AgentSession.context`), or None (no default prompt).
        max_turns: requests per run at most.
        max_output_tokens: the output cap sent with each request (None: the provider's).
        temperature: sampling temperature (None: the provider's default).
        tool_timeout_s: the default time limit of one tool call, in seconds.
        max_continuations: "Please continue." resumes of a reply cut by `max_tokens`.
        thinking_decay: the thinking budget per turn (None: none set).
        effort: the reasoning effort sent with each request (`run.effort`; None: none).
        stream_idle_timeout_s: the longest silence of a reply stream (`retry.stream_idle_timeout`).
    """

    system: str | None
    compact_system: str | None
    base: str | None
    context: SessionContext | None
    max_turns: int
    max_output_tokens: int | None
    temperature: float | None
    tool_timeout_s: float
    max_continuations: int
    thinking_decay: ThinkingDecay | None
    effort: Effort | None = None
    stream_idle_timeout_s: float = 300.0

    @classmethod
    def of(
        cls,
        config: AgentConfig,
        system: str | None,
        context: SessionContext | None = None,
        root: Path | None = None,
        *,
        main: bool = True,
    ) -> RequestSettings:
        """The run settings of `config`, with `system` (None: `run.system`) as the base of the
        prompt rendered over `context`; the main agent's `run.output_schema` (a path relative
        to `root`; a subagent answers its caller freely) is named in a last paragraph (`tether.prompt.system.output_schema_block`), so the first
        request asks for the shape the answer is validated against.

        Raises:
            ConfigError: an inconsistent `run.thinking` decay, or an output schema that cannot
                be loaded.
        """
        base = system if system is not None else config.run.system
        append = config.run.append_system
        schema = load_schema(config.run.output_schema, root or Path.cwd()) if main else None
        if schema is not None:
            append = "\n\n".join(p for p in (append, output_schema_block(schema)) if p)
        return cls(
            system=system_prompt(
                context, base=base, append=append, extra_dirs=_extra_dirs(config, context)
            ),
            compact_system=compact_prompt(context, base=base, append=append),
            base=system,
            context=context,
            max_turns=config.run.max_turns,
            max_output_tokens=config.run.max_output_tokens,
            temperature=config.run.temperature,
            tool_timeout_s=config.tools.timeout_s,
            max_continuations=config.run.continuation_limit,
            thinking_decay=build.thinking_decay(config),
            effort=config.run.effort,
            stream_idle_timeout_s=config.retry.stream_idle_s,
        )

    def system_for(self, provider: Provider) -> str | None:
        """The prompt `provider` is sent: the compact form for one that asks for it (the
        embedded model: `ModelInfo.compact_prompt`), else the full one."""
        return self.compact_system if takes_compact_prompt(provider) else self.system


def extra_writable(tool_context: ToolContext) -> tuple[Path, ...]:
    """The writable extra folders of a tool context's policy (`tools.add_dirs`)."""
    policy = tool_context.policy
    return () if policy is None else tuple(Path(p) for p in policy.add_dirs)


def with_add_dirs(parts: AgentParts, entries: list[str]) -> AgentParts:
    """`parts` with the extra folders `entries` (`tools.add_dirs`: paths, `:ro` kept): the
    file tools' policy, the sandbox of commands, the environment block and the checkpoints
    take them from the next call on."""
    config = parts.config.with_values({"tools.add_dirs": entries})
    context = parts.tool_context
    if context.policy is not None:
        added = add_dir_entries(config.tools.add_dirs, parts.root)
        policy = replace(
            context.policy,
            add_dirs=tuple(p for p, writable in added if writable),
            add_dirs_ro=tuple(p for p, writable in added if not writable),
        )
        context = replace(context, policy=policy)
    if parts.checkpoints is not None:
        parts.checkpoints.extra = extra_writable(context)
    return replace(
        parts,
        config=config,
        tool_context=context,
        run=RequestSettings.of(
            config, parts.run.base, parts.run.context, parts.root, main=parts.agent_path == ("main",)
        ),
    )


def _extra_dirs(config: AgentConfig, context: SessionContext | None) -> tuple[tuple[str, bool], ...]:
    """`tools.add_dirs` for the environment block (relative ones from the session's folder)."""
    if not config.tools.add_dirs:
        return ()
    base = Path(context.environment.cwd) if context is not None else Path.cwd()
    return add_dir_entries(config.tools.add_dirs, base)


class RepairReporter:
    """Sends one `wire_repair` event per repair (the incremental view re-checks the open tail
    on every request, so the same repair is seen again)."""

    def __init__(self, emit: Callable[[AgentEvent], None]) -> None:
        self._emit = emit
        self._seen: set[tuple[str, str, str | None]] = set()

    def __call__(self, repair: Repair) -> None:
        key = (repair.kind, repair.turn_id, repair.tool_call_id)
        if key not in self._seen:
            self._seen.add(key)
            self._emit(WireRepairEvent(kind=repair.kind, detail=repair.message))


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentParts:
    """One agent's parts (see the module docstring). Frozen: a change makes a new record
    (`with_model`, `with_settings`); the stateful parts inside (the compaction's monitor, the
    tool calls' hygiene, the incremental views) carry over where their inputs did not change.

    Attributes:
        config: the effective config (the one built from, plus `with_settings` values).
        chain: the providers in fallback order (at least one).
        views: one incremental wire-view builder per chain position (the view differs per
            target).
        attempts: runs one request over the chain (retries, fallback, tracing spans).
        limits: the first model's context window and output cap, in tokens.
        compaction: automatic compaction, or None when off.
        guard: the runaway guard when automatic compaction is off (else None: the
            compaction holds the guard).
        tool_calls: runs a reply's tool calls (safe mode, hygiene, gate, output gate).
        hooks: the library and settings hooks.
        registry: the tools offered.
        tool_context: what a running tool may know (root, env, sandbox, session folder).
        secrets: values redacted from tool output (environment secrets, provider keys).
        tracing: where spans go.
        run: the per-request settings.
        retry: the retry policy per provider.
        runtime: the process-facing hooks (env, sleep, jitter, ids).
        host: the host's callbacks (events, approval, questions, notes, the agent's path).
        root: the working folder (a real path).
        sandbox_missing: True when no OS sandbox works here (safe mode is then forced).
        library_hooks: the library hooks given (a subagent gets its caller's).
        checkpoints: snapshots of the working folder before changes (the main agent, when
            `checkpoints.enabled`), or None.
        budget: the run's cost cap (`run.max_budget_usd`; a subagent shares its caller's), or
            None.
        policies: what acts around each turn (`tether.agent.turn.policy`), in order: the
            budget, compaction or the runaway guard, continuations, the `stop` hooks, plan
            mode, checkpoints, then any added by the host (the agent's subagent usage).
    """

    config: AgentConfig
    chain: tuple[Provider, ...]
    views: tuple[ViewBuilder, ...]
    attempts: Attempts
    limits: ModelLimits
    compaction: AutoCompaction | None
    tool_calls: ToolCalls
    hooks: HookRunner
    registry: ToolRegistry
    tool_context: ToolContext
    secrets: tuple[str, ...]
    tracing: Tracing
    run: RequestSettings
    retry: RetryPolicy
    runtime: Runtime
    host: Host
    root: Path
    sandbox_missing: bool
    library_hooks: Hooks | None
    id_factory: Callable[[], str] = field(repr=False)
    repairs: RepairReporter = field(repr=False)
    guard: RunawayGuard | None = None
    checkpoints: Checkpoints | None = field(default=None, repr=False)
    budget: Budget | None = field(default=None, repr=False)
    policies: Policies = field(default_factory=Policies, repr=False)

    # -- what the loop's collaborators use (`tether.agent.turn.state.RunParts`) --------------------

    @property
    def provider(self) -> Provider:
        """The chain's first provider (the one tried first)."""
        return self.chain[0]

    @property
    def agent_path(self) -> tuple[str, ...]:
        """This agent's path: `("main",)`, or a subagent's."""
        return self.host.agent_path

    def emit(self, event: AgentEvent) -> None:
        """Send `event` to the host (`Host.emit`: nothing when it has no `on_event`)."""
        self.host.emit(event)

    def new_id(self) -> str:
        """A fresh turn id."""
        return self.id_factory()

    def system_for(self, provider: Provider) -> str | None:
        """The system prompt `provider` is sent (`RequestSettings.system_for`)."""
        return self.run.system_for(provider)

    def view(self, history: Sequence[Turn]) -> tuple[Turn, ...]:
        """The wire view of `history` for the first provider (incremental: the builder reads
        only turns it has not seen)."""
        return self.views[0].view(history)

    def shape(self, view: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """The view as sent: the compaction's wire-only `tail` strategy applied, if any."""
        return view if self.compaction is None else self.compaction.shape(view)

    def redact(self, text: str) -> str:
        """`text` with known secret values and secret-shaped strings masked (tool output)."""
        return redact_secrets(text, self.secrets)

    def summary_call(self, summarizer: Provider | None) -> SummaryCall:
        """The request path for a summary: the chain (or `summarizer` alone) under the retry
        policy; no text/thinking deltas, no `error` event (the compaction ladder handles a
        failure)."""
        if summarizer is None:
            return summary_call(self.attempts)
        return summary_call(attempts_of((summarizer,), self.retry, self.runtime, self.emit, self.tracing))

    async def before_compaction(self, reason: str) -> None:
        """The `before_compaction` hooks."""
        await self.hooks.before_compaction(reason)

    # -- re-deriving ---------------------------------------------------------------------------

    def with_model(self, chain: Sequence[Provider], note: Callable[[str], None]) -> AgentParts:
        """These parts over `chain` (a model switch): new views, request runner and limits;
        the compaction's window follows (its monitor keeps its state); `note` gets setup
        notes (an unknown window).

        Raises:
            ValueError: `chain` is empty.
        """
        chain = tuple(chain)
        if not chain:
            raise ValueError("an agent needs at least one model")
        limits = limits_of(chain, self.config, note)
        if self.compaction is not None:
            self.compaction.monitor.set_limits(limits)
        if self.guard is not None:
            self.guard.monitor.set_limits(limits)
        return replace(
            self,
            chain=chain,
            views=views_of(chain, self.repairs),
            attempts=attempts_of(chain, self.retry, self.runtime, self.emit, self.tracing),
            limits=limits,
        )

    def with_budget(self, budget: Budget | None) -> AgentParts:
        """These parts counting their spending in `budget` (a subagent's: its caller's)."""
        return self._rederived(budget=budget)

    def _rederived(self, **changes: Any) -> AgentParts:
        """These parts with `changes`, their turn policies rebuilt from the result: the one
        path of `with_budget` and `with_settings`. A policy whose inputs did not change is
        kept with its state (`turn_policies`), so a mid-run change of one section does not
        reset another's per-run counts."""
        new = replace(self, **changes)
        return replace(
            new,
            policies=turn_policies(
                new.config,
                new.hooks,
                context=new.compaction or new.guard,
                budget=new.budget,
                checkpoints=new.checkpoints,
                root=new.root,
                main=new.agent_path == ("main",),
                old=self.policies,
            ),
        )

    def with_policy(self, policy: TurnPolicy) -> AgentParts:
        """These parts with `policy` acting after the assembly's own (kept by `with_settings`)."""
        return replace(self, policies=Policies((*self.policies, policy)))

    def with_settings(self, values: Mapping[str, Any]) -> AgentParts:
        """These parts with the dotted config `values` applied (`{"run.max_turns": 5}`), from
        the next request on: the run settings, the retry policy and compaction (turned on or
        off; rebuilt from the new `context` section when it changed) are re-derived; the
        rest is kept. Keys under `SETTINGS_APPLIED_LIVE` only (the model, safe mode and the
        approval mode are `Agent` controls).

        Raises:
            ConfigError: a value the schema rejects, or a key that cannot change mid-session.
        """
        live = [k for k in values if not k.startswith(SETTINGS_APPLIED_LIVE)]
        if live:
            raise ConfigError(f"cannot change {', '.join(live)} during a session")
        try:
            config = self.config.with_values(dict(values))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"invalid setting: {exc}".splitlines()[0]) from None
        compaction = self.compaction
        fixed = build.fixed_text(self.run.system, list(self.registry))
        if not config.context.auto_compact:
            compaction = None
        elif compaction is None or config.context != self.config.context:
            compaction = build.auto_compaction(self.limits, config, fixed=fixed)
            if compaction is not None and self.tool_calls.reads is not None:
                compaction.use_reads(
                    self.tool_calls.reads, elide_stale=config.context.elide_stale_reads
                )
        guard = self.guard
        if compaction is not None:
            guard = None
        elif guard is None or config.context != self.config.context:
            guard = build.runaway_guard(self.limits, config, fixed=fixed)
        retry = build.retry_policy(config, self.runtime.env)
        budget = self.budget
        if config.run.max_budget_usd != self.config.run.max_budget_usd:
            budget = budget_of(config)
        return self._rederived(
            config=config,
            budget=budget,
            run=RequestSettings.of(
                config, self.run.base, self.run.context, self.root, main=self.agent_path == ("main",)
            ),
            compaction=compaction,
            guard=guard,
            retry=retry,
            attempts=attempts_of(
                self.chain, retry, self.runtime, self.emit, self.tracing, self.attempts.bench
            ),
        )


def budget_of(config: AgentConfig) -> Budget | None:
    cap = config.run.max_budget_usd
    return None if cap is None else Budget(cap)


def takes_compact_prompt(provider: Provider) -> bool:
    """Whether `provider`'s model takes the compact form of the system prompt."""
    info = info_of(provider)
    return info is not None and info.compact_prompt


def limits_of(
    chain: tuple[Provider, ...], config: AgentConfig, note: Callable[[str], None]
) -> ModelLimits:
    """The first model's limits; the fallbacks' windows matter only where the server allocates
    one per request (Ollama's `num_ctx`), so only those are told theirs."""
    windows = build.configured_windows(config)
    limits = build.model_limits(chain[0], config.context.window, note, configured=windows)
    for fallback in chain[1:]:
        if isinstance(fallback, WindowAllocator):
            build.model_limits(fallback, config.context.window, note, configured=windows)
    return limits


def _prefill(provider: Provider) -> bool:
    info = info_of(provider)
    return info is not None and info.supports_prefill


def _vendor(provider: Provider) -> bool:
    info = info_of(provider)
    return info is not None and info.vendor_endpoint


def views_of(chain: tuple[Provider, ...], repairs: RepairReporter) -> tuple[ViewBuilder, ...]:
    return tuple(
        ViewBuilder(
            p.target,
            route=provenance_of(p),
            vendor_endpoint=_vendor(p),
            supports_prefill=_prefill(p),
            on_repair=repairs,
            # Within a run only the loop appends to the history; `run()` resets the builders
            # in case a caller edited it in between, so the O(history) prefix check is not
            # needed.
            check_prefix=False,
        )
        for p in chain
    )


def attempts_of(
    chain: tuple[Provider, ...],
    retry: RetryPolicy,
    rt: Runtime,
    emit: Callable[[AgentEvent], None],
    tracing: Tracing,
    bench: Bench | None = None,
) -> Attempts:
    """The request runner over `chain`; `bench` carries the failed-over positions of a
    previous runner over the same chain (a settings change keeps a sticky fallback)."""
    return Attempts(
        chain, policy=retry, emit=emit, sleep=rt.sleep, rng=rt.rng, tracing=tracing, bench=bench
    )


