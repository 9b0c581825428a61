"""From an `AgentConfig` to the parts of a working agent: the rules `tether run`, the library
(`tether.Agent`) and every other host share.

Owns: the provider chain (a model string, a provider object, a list of them, or the config's
`model` selection resolved against its `providers`), the API keys redacted from tool output,
the tools of the tool folders, the model's limits (window, output cap), the window-capped
output threshold, the retry policy, the thinking-budget decay, the path policy, the refused
environment names, and automatic compaction.
Does not own: reading settings files (`tether.settings`), the loop (`tether.agent.turn.loop`),
argument parsing (`tether.cli`), the record the parts make (`tether.agent.assembly.parts`).

Model selection (config `model`), resolved once; a mistake is a `ConfigError` then:
    unset                    each configured provider (`providers.<name>`) with a `model`, in
                             order; with none configured, the embedded `local` model
    "provider/model"         pinned to that provider (a configured name or a built-in type)
    "model" (no slash)       that model on every configured provider, in order
    {provider, model?}       pinned; no model = the provider's configured default
The chain is de-duplicated; entries whose key is missing are skipped with a note (the build
fails with the first one's error only when none resolves). A model given explicitly
(`Agent("openai/gpt-4o")`, `tether run --model`) is resolved strictly: any error is raised.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from tether.agent.turn.compacting import AutoCompaction, RunawayGuard
from tether.agent.turn.continuation import GeometricDecay, StepDecay, ThinkingDecay
from tether.compaction.idle import IdlePolicy
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy
from tether.compaction.prune import prune_policy
from tether.compaction.recall import RECALL_TOOL
from tether.compaction.windows import parse_windows_setting
from tether.credentials import find_key
from tether.errors import ConfigError, RuleError
from tether.lsp.config import resolve_servers
from tether.lsp.tool import lsp_tool
from tether.permissions.rules import names_no_tool, parse_rule
from tether.providers.base import Provider
from tether.providers.catalog import WindowAllocator, info_of, resolve_limits
from tether.providers.fallback import ModelRef, check_provider_names
from tether.providers.registry import PROVIDERS, resolve_provider
from tether.providers.retry import RetryPolicy
from tether.settings import AgentConfig, LoadedSettings
from tether.settings.trust import trusted_settings
from tether.tokens import ModelLimits, text_tokens
from tether.tools.base import Tool
from tether.tools.builtin.toolset import builtin_tools
from tether.tools.env import DEFAULT_REFUSED
from tether.tools.scan import PROJECT_TOOL_FOLDER, scan_tool_folders

ModelLike = str | Provider | Sequence[str | Provider]
"""A model as `Agent` takes it: `"provider/model"` (`"local"`, `"anthropic/claude-sonnet-4-5"`,
a name from the config's `providers`), a provider object, or a list of them in fallback
order."""

Note = Callable[[str], None]
"""Receives one-line setup notes (a skipped model, an unknown window, ...)."""


def model_refs(config: AgentConfig) -> tuple[ModelRef, ...]:
    """The config's model selection as an ordered, de-duplicated chain (module docstring).

    Raises:
        ConfigError: an unknown provider name, a blank model, a bare model name with no
            configured provider, duplicate or blank provider names.
    """
    configured = {name: p.model or "" for name, p in config.providers.items()}
    check_provider_names(list(configured))
    refs: list[ModelRef] = []
    raw = config.model
    items: list[object] = [] if raw is None else [raw] if isinstance(raw, str) else list(raw)
    if not items:
        refs = [ModelRef(provider=n, model=m) for n, m in configured.items() if m]
        return tuple(dict.fromkeys(refs)) or (ModelRef(provider="local", model=""),)
    for item in items:
        if isinstance(item, str):
            text = item
            if "/" not in item and ModelRef.parse(item).provider != "local":  # a bare model
                if not configured:
                    raise ConfigError(
                        f"model {item!r} names no provider and none is configured; "
                        "write provider/model"
                    )
                refs += [ModelRef(provider=n, model=item.strip()) for n in configured]
                continue
        else:
            spec = getattr(item, "spec", None)
            if not isinstance(spec, str):
                raise ConfigError(
                    f"a model selection entry must be text or {{provider, model}}: {item!r}"
                )
            text = spec
        refs.append(_pinned(text, configured))
    return tuple(dict.fromkeys(refs))


def _pinned(text: str, configured: Mapping[str, str]) -> ModelRef:
    """A selection entry pinned to one provider (`"provider/model"`, `"local"` or
    `{provider, model?}`, as `text`): its provider must be configured or built in; no model
    means the provider's configured default.

    Raises:
        ConfigError: an unknown provider (naming the configured and built-in ones).
    """
    ref = ModelRef.parse(text)
    name = ref.provider
    if name not in configured and name not in PROVIDERS:
        raise ConfigError(
            f"unknown provider {name!r} in the settings' model {text!r} "
            f"(configured: {', '.join(configured) or 'none'}; built in: {', '.join(PROVIDERS)})"
        )
    return ModelRef(provider=name, model=ref.model or configured.get(name, ""))


def project_base_urls(loaded: LoadedSettings, project_dir: Path) -> dict[str, str]:
    """`providers.<name>.base_url` values the project's settings file sets (a cloned
    repository's file is not necessarily trusted, and the key is sent there)."""
    providers = loaded.project_layer(project_dir).get("providers", {})
    out: dict[str, str] = {}
    if isinstance(providers, dict):
        for name, entry in cast(dict[str, Any], providers).items():
            url = cast(dict[str, Any], entry).get("base_url") if isinstance(entry, dict) else None
            if isinstance(url, str):
                out[name] = url
    return out


def resolve_models(
    model: ModelLike | None,
    config: AgentConfig,
    *,
    base_url: str | None = None,
    note: Note = lambda _m: None,
    project_urls: Mapping[str, str] | None = None,
) -> tuple[Provider, ...]:
    """The providers in fallback order: `model` when given (strings resolved strictly), else
    the config's selection (entries that do not resolve, e.g. for a missing key, are skipped
    with a note). A provider whose `base_url` comes from `project_urls` is noted.

    Both are one lookup (each entry through `resolve_provider`); they differ only in what a
    failed entry does, and for a reason: a model the caller named is what it asked for, so its
    error is the answer, while the settings' selection is a fallback list, so one entry whose
    key is missing must not stop the others.

    Raises:
        ConfigError: (AuthError included) an explicit model does not resolve, the selection is
            invalid, or no selection entry resolves (the first entry's error).
    """
    strict = model is not None
    if model is not None:
        entries: Sequence[str | Provider | ModelRef] = (
            [model] if isinstance(model, str | Provider) else list(model)
        )
        if not entries:
            raise ConfigError("an Agent needs at least one model")
    else:
        entries = model_refs(config)
    found: list[Provider] = []
    errors: list[ConfigError] = []
    for entry in entries:
        if not isinstance(entry, str | ModelRef):  # a provider object, used as it is
            found.append(entry)
            continue
        ref = ModelRef.parse(entry) if isinstance(entry, str) else entry
        try:
            provider = resolve_provider(ref, base_url=base_url, providers=config.providers)
        except ConfigError as exc:  # AuthError included
            if strict:  # the caller named this model: its error is the answer
                raise
            note(f"note: skipping model {ref.spec!r} from the settings: {exc}")
            errors.append(exc)  # a selection entry: try the next one
            continue
        url = (project_urls or {}).get(ref.provider) if not base_url else None
        if url:
            note(f"note: provider {ref.provider!r} uses base_url {url!r} from the project settings")
        found.append(provider)
    if not found:
        raise errors[0]
    return tuple(found)


def retry_policy(config: AgentConfig, environ: Mapping[str, str] | None = None) -> RetryPolicy:
    """`retry` settings, then `TETHER_RETRY_BASE` / `_MAX` / `_ATTEMPTS` from the environment."""
    r = config.retry
    base = RetryPolicy(
        max_attempts=r.max_attempts,
        retry_base_s=r.base_s,
        retry_max_s=max(r.max_s, r.base_s),
        fallback_cooldown_s=r.fallback_cooldown_s,
    )
    return RetryPolicy.from_env(environ, base=base)


def thinking_decay(config: AgentConfig) -> ThinkingDecay | None:
    """`run.thinking` as a decay policy (None: no thinking budget set, or decay `none` with a
    budget, which the loop sends unchanged every turn).

    Raises:
        ConfigError: a decay that lacks its parameters, or inconsistent ones.
    """
    t = config.run.thinking
    if t.budget_tokens is None:
        return None
    if t.decay == "step":
        if t.floor is None or t.after_turn is None:
            raise ConfigError("run.thinking.decay 'step' needs floor and after_turn")
        return StepDecay(full_tokens=t.budget_tokens, floor_tokens=t.floor, after_turn=t.after_turn)
    if t.decay == "geometric":
        if t.factor is None:
            raise ConfigError("run.thinking.decay 'geometric' needs factor")
        return GeometricDecay(
            full_tokens=t.budget_tokens,
            factor=t.factor,
            floor_tokens=t.floor or 0,
            after_turn=max(t.after_turn or 1, 1),
        )
    return StepDecay(full_tokens=t.budget_tokens, floor_tokens=t.budget_tokens, after_turn=1)


def refused_env(config: AgentConfig) -> tuple[str, ...]:
    """Variable names tools never see: the built-in list, `tools.refused_env`, and every
    configured provider's `api_key_env`."""
    return tuple(dict.fromkeys((*DEFAULT_REFUSED, *config.refused_env())))


def provider_keys(
    chain: Sequence[Provider], config: AgentConfig, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The API keys the chain's providers use, wherever tether finds them (environment,
    keyring, credential file): redacted from tool output, since a tool could print a
    credential file. Providers tether does not know by name (a user's own object) have none."""
    keys: list[str] = []
    for p in chain:
        endpoint = config.providers.get(p.name)
        if endpoint is None and p.name not in PROVIDERS:
            continue
        try:
            found = find_key(
                p.name,
                type_=endpoint.type if endpoint else None,
                api_key_env=endpoint.api_key_env if endpoint else None,
                environ=environ,
            )
        except ConfigError:  # an unsafe credential file: resolving the provider said so
            continue
        if found is not None:
            keys.append(found.key)
    return tuple(dict.fromkeys(keys))


def folder_tools(
    config: AgentConfig, root: Path, note: Note = lambda _m: None, *, project_tools: bool = True
) -> list[Tool]:
    """The built-in tools plus those of the tool folders (`tools.folders`, relative to the
    project, and `.tether/tools/` when it exists and `project_tools`: False when the project is
    not approved, see `tether.settings.trust`). A tool file that fails to import is skipped
    with a note.

    Raises:
        ConfigError: a missing configured folder, or two tools with one name.
    """
    folders = [root / f for f in config.tools.folders]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        raise ConfigError(f"tools.folders: not a folder: {', '.join(missing)}")
    if project_tools and (root / PROJECT_TOOL_FOLDER).is_dir():
        folders.append(root / PROJECT_TOOL_FOLDER)
    if not folders:
        return list(builtin_tools())
    try:
        scanned = scan_tool_folders(folders, base=builtin_tools())
    except ValueError as exc:  # ToolConflictError: a duplicate name, both places named
        raise ConfigError(str(exc)) from None
    for problem in scanned.problems:
        note(f"note: tool file {problem.file} skipped: {problem.message}")
    return list(scanned.registry)


def check_only_tools(only: Sequence[str] | None, tools: Sequence[Tool]) -> None:
    """Refuse a `tools.only` name that names none of `tools` (the tools these settings give)
    and is not an MCP name (`mcp__<server>__<tool>`, `mcp_read_resource`: their servers list
    them only once started) or `recall` (offered once compaction elides turns, named or not).

    Raises:
        ConfigError: one line naming the unknown names and the tools there are.
    """
    if only is None:
        return
    have = {t.name for t in tools}
    known = have | {RECALL_TOOL}
    unknown = [n for n in only if n not in known and not n.startswith("mcp_")]
    if unknown:
        raise ConfigError(
            f"unknown tools in tools.only: {', '.join(unknown)} "
            f"(the tools: {', '.join(sorted(have))}, and MCP tools as mcp__<server>__<tool>)"
        )


def compaction_policy(config: AgentConfig) -> CompactionPolicy:
    """`context` settings as the compaction policy."""
    c = config.context
    return CompactionPolicy(
        threshold=c.threshold,
        output_reserve=c.output_reserve,
        runaway_total=c.runaway_total,
        runaway_growth=c.runaway_growth,
        thinking_budget=config.run.thinking.budget_tokens or 0,
    )


def configured_windows(config: AgentConfig) -> dict[str, ModelLimits]:
    """`context.windows` as limits per model name.

    Raises:
        ConfigError: an entry of the wrong shape (names the model).
    """
    raw = {name: w.model_dump(exclude_none=True) for name, w in config.context.windows.items()}
    try:
        return parse_windows_setting(raw)
    except ValueError as exc:
        raise ConfigError(f"context.windows: {exc}") from None


def model_limits(
    provider: Provider,
    context_window: int | None,
    warn: Note,
    *,
    configured: Mapping[str, ModelLimits] | None = None,
) -> ModelLimits:
    """The limits for `provider`'s model: a forced window (`context.window`,
    `--context-window`), else the `context.windows` entry (`configured`), else the provider's
    own figures (`ModelInfo.source` "provider", e.g. the local model's n_ctx), else the
    catalog's table, else a conservative default with a warning (case T20). A provider whose
    server allocates the window (`ModelInfo.allocates_window`, Ollama's `num_ctx`) is told
    the resolved window."""
    info = info_of(provider)
    reported: ModelLimits | None = None
    if info is not None and info.source == "provider" and info.context_window > 0:
        window = info.context_window
        out = info.max_output_tokens
        reported = ModelLimits(
            context_window=window,
            max_output_tokens=out if out > 0 else max(window // 4, 1),
            source="provider",
        )
    known, warning = resolve_limits(
        provider.model, configured=configured, provider_reported=reported
    )
    if context_window is not None:
        known = ModelLimits(
            context_window=context_window,
            max_output_tokens=min(known.max_output_tokens, max(context_window // 4, 1)),
            source="settings",
        )
    elif warning:
        warn(warning)
    if info is not None and info.allocates_window and isinstance(provider, WindowAllocator):
        provider.use_context_window(known.context_window)
    return known


def output_threshold_chars(config: AgentConfig, limits: ModelLimits) -> int:
    """The persisted-output threshold: `tools.output_threshold_chars`, but never more than a
    quarter of the context window (at ~4 characters per token, the window's token count in
    characters), so one tool result cannot fill a small window (case T25); at least 4,096
    (the stub alone is ~3 KiB)."""
    return max(4_096, min(config.tools.output_threshold_chars, limits.context_window))


def fixed_text(system: str | None, tools: Sequence[Tool]) -> list[str]:
    """What every request carries besides the turns: the system prompt and the tool schemas."""
    return [system or "", *(json.dumps(t.parameters) for t in tools)]


def auto_compaction(
    limits: ModelLimits, config: AgentConfig, *, fixed: Sequence[str] = ()
) -> AutoCompaction | None:
    """The automatic `AutoCompaction`, or None when `context.auto_compact` is off."""
    if not config.context.auto_compact:
        return None
    system_tokens = sum(text_tokens(x) for x in fixed)
    policy = compaction_policy(config)
    monitor = ContextMonitor(limits, policy, system_tokens=system_tokens)
    ctx = config.context
    return AutoCompaction(
        monitor,
        prune=prune_policy(policy.threshold) if ctx.prune else None,
        idle=IdlePolicy(min_tokens=ctx.idle_compact_tokens, lifetime_s=ctx.cache_ttl_s)
        if ctx.idle_compact
        else None,
    )


def runaway_guard(
    limits: ModelLimits, config: AgentConfig, *, fixed: Sequence[str] = ()
) -> RunawayGuard:
    """The runaway guard of an agent without automatic compaction (the `context` policy's
    `runaway_total` and `runaway_growth`)."""
    system_tokens = sum(text_tokens(x) for x in fixed)
    monitor = ContextMonitor(
        limits, compaction_policy(config), system_tokens=system_tokens, compacts=False
    )
    return RunawayGuard(monitor)


class Resolver(Protocol):
    """`resolve_models`'s signature: what turns a model argument and a config into a chain."""

    def __call__(
        self,
        model: ModelLike | None,
        config: AgentConfig,
        *,
        base_url: str | None = None,
        note: Note = ...,
        project_urls: Mapping[str, str] | None = None,
    ) -> tuple[Provider, ...]: ...


KNOWN_TOOLS = frozenset(
    {t.name for t in builtin_tools()}
    | {"question", "web_fetch", "web_search", "task", "skill", RECALL_TOOL, lsp_tool.name}
)
"""Every tool name tether has (offered or not in a given run), for the rules' check."""


def unknown_rules(loaded: LoadedSettings, tools: Sequence[Tool]) -> list[str]:
    """One warning line per `permissions.allow|ask|deny` rule of the loaded files that names
    no tool (`KNOWN_TOOLS`, the tools of `tools`, MCP names): it would never match, and a typo
    in a `deny` rule disarms it silently."""
    known = KNOWN_TOOLS | {t.name for t in tools}
    lines: list[str] = []
    for path, layer in zip(loaded.sources, loaded.layers, strict=True):
        section = layer.get("permissions")
        if not isinstance(section, dict):
            continue
        for action in ("deny", "ask", "allow"):
            listed = cast(dict[str, Any], section).get(action)
            for text in cast(list[Any], listed) if isinstance(listed, list) else []:
                try:
                    rule = parse_rule(str(text))
                except RuleError:
                    continue
                if names_no_tool(rule, known):
                    lines.append(
                        f"warning: permissions.{action} rule {rule.text!r} in {path} names no "
                        f"tool ({rule.tool!r}), so it never matches; the tools: "
                        f"{', '.join(sorted(known))}, and MCP tools as mcp__<server>__<tool>"
                    )
    return lines


def settings_chain(
    cwd: Path | str,
    *,
    model: ModelLike | None,
    base_url: str | None,
    overrides: Mapping[str, Any] | None,
    note: Note,
    resolve: Resolver | None = None,
    seen: list[LoadedSettings] | None = None,
) -> tuple[Path, AgentConfig, tuple[Provider, ...], str | None]:
    """The one construction path from a folder and the model flags to a config and a provider
    chain (`tether run`, `tether chat`, ACP, Jobs through `from_settings_files`;
    `tether compact` directly): the resolved folder, the config (the settings files the user
    trusts, then `overrides`), the chain (`model` strict, else the selection; each model
    string parsed once, `ModelRef.parse`; project base URLs noted), and why the project's files
    were not loaded (None: they were). `resolve`: what resolves the chain (default
    `resolve_models`; `tether.agent.assembly.chains.ChainCache.resolve` reuses providers).
    `seen`: gets the loaded settings files (their rules' sources, `unknown_rules`).

    Raises:
        ConfigError: (AuthError included) as `load_settings`, `resolve_models`.
    """
    root = Path(cwd).resolve()
    loaded, refused = trusted_settings(root)
    for line in loaded.warnings:  # agent files skipped (`tether.settings.agent_files`)
        note(line)
    if seen is not None:
        seen.append(loaded)
    cfg = loaded.settings.with_values(overrides) if overrides else loaded.settings
    chain = (resolve or resolve_models)(
        model, cfg, base_url=base_url, note=note, project_urls=project_base_urls(loaded, root)
    )
    return root, cfg, chain, refused


def from_settings_files(
    cwd: Path | str,
    *,
    model: ModelLike | None,
    base_url: str | None,
    overrides: Mapping[str, Any] | None,
    note: Note,
    resolve: Resolver | None = None,
) -> tuple[Path, AgentConfig, tuple[Provider, ...], list[Tool], str | None]:
    """What `tether run` reads in `cwd`: the folder, config, chain and refusal of
    `settings_chain`, and the tools (built-ins plus tool folders, and `lsp` when a language
    server is installed; the embedded model without `EMBEDDED_WITHHELD`). The project's
    settings file and tool folders are loaded only when the user approved them as they are now
    (`tether trust`, `tether.settings.trust`); else the user settings alone are used.

    Raises:
        ConfigError: (AuthError included) as `load_settings`, `resolve_models`, `folder_tools`.
    """
    seen: list[LoadedSettings] = []
    root, cfg, chain, refused = settings_chain(
        cwd, model=model, base_url=base_url, overrides=overrides, note=note, resolve=resolve,
        seen=seen,
    )
    tools = folder_tools(cfg, root, note, project_tools=refused is None)
    for line in unknown_rules(seen[0], tools) if seen else ():
        note(line)
    if _embedded(chain):
        tools = [t for t in tools if t.name not in EMBEDDED_WITHHELD]
    elif not any(t.name == lsp_tool.name for t in tools) and resolve_servers(cfg.lsp, os.environ)[0]:
        tools.append(lsp_tool)  # a language server is installed (and `lsp.enabled`)
    return root, cfg, chain, tools, refused


EMBEDDED_WITHHELD = frozenset({"shell_output", "shell_kill", lsp_tool.name})
"""Tools the embedded model is not offered: its catalog is one line per tool, and every extra
tool costs a tiny model its pick. With `lsp` offered SmolLM2 called it after `ls` in 5 tasks of
`bench/tasks.py` (all failed); with the two background-shell tools in the catalog it lost
read_json_port (its answer no longer quoted the port). Diagnostics after edits still come."""


def _embedded(chain: tuple[Provider, ...]) -> bool:
    return bool(chain) and chain[0].name == "local"
