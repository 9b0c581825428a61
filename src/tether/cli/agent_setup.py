"""From settings and flags to a configured `Agent`: the wiring of `tether run`.

Owns: the provider chain for a run (`--model`, else the settings' `model` selection resolved
against the configured providers), and turning each settings section into the loop's
parameters (`retry` → `RetryPolicy`, `tools` → timeouts, output threshold, refused env names,
path deny list, network, safe mode, tool folders; `context` → the compaction policy and model
windows; `run` → turns, continuations, thinking-budget decay). Flags win over settings.
Does not own: the settings files (`tether.settings`), the loop (`tether.agent`), argument
parsing (`tether.cli.main`).

Model selection (settings `model`), resolved once at start; a mistake is a `ConfigError` then:
    unset                    each configured provider (`providers.<name>`) with a `model`, in
                             order; with none configured, the embedded `local` model
    "provider/model"         pinned to that provider (a configured name or a built-in type)
    "model" (no slash)       that model on every configured provider, in order
    {provider, model?}       pinned; no model = the provider's configured default
The chain is de-duplicated; entries whose key is missing are skipped with a note (the run
fails with the first one's error only when none resolves).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tether.agent.context import ContextManager
from tether.agent.limits import GeometricDecay, StepDecay, ThinkingDecay
from tether.cli.settings_cmds import project_base_url
from tether.compaction.monitor import ContextMonitor
from tether.compaction.pressure import CompactionPolicy, ModelLimits, text_tokens
from tether.compaction.windows import parse_windows_setting
from tether.credentials import find_key
from tether.errors import ConfigError
from tether.providers.base import Provider
from tether.providers.fallback import ModelRef, check_provider_names
from tether.providers.registry import PROVIDERS, resolve_provider
from tether.providers.retry import RetryPolicy
from tether.settings import LoadedSettings, Settings
from tether.tools.base import Tool
from tether.tools.builtins import builtin_tools
from tether.tools.env import DEFAULT_REFUSED
from tether.tools.paths import DEFAULT_POLICY, PathPolicy
from tether.tools.sandbox import Sandbox
from tether.tools.scan import scan_tool_folders

if TYPE_CHECKING:
    from tether.mcp import McpTools

PROJECT_TOOL_FOLDER = Path(".tether") / "tools"
"""Scanned for tool modules when it exists (relative to the project), besides `tools.folders`."""


def model_refs(settings: Settings) -> tuple[ModelRef, ...]:
    """The settings' model selection as an ordered, de-duplicated chain (module docstring).

    Raises:
        ConfigError: an unknown provider name, a blank model, a bare model name with no
            configured provider, duplicate or blank provider names.
    """
    configured = {name: p.model or "" for name, p in settings.providers.items()}
    check_provider_names(list(configured))
    known = set(configured) | set(PROVIDERS)
    refs: list[ModelRef] = []
    raw = settings.model
    items: list[object] = [] if raw is None else [raw] if isinstance(raw, str) else list(raw)
    if not items:
        refs = [ModelRef(provider=n, model=m) for n, m in configured.items() if m]
        return tuple(dict.fromkeys(refs)) or (ModelRef(provider="local", model=""),)
    for item in items:
        if isinstance(item, str):
            name, slash, model = item.strip().partition("/")
            if slash or name == "local":
                if name not in known:
                    raise ConfigError(
                        f"unknown provider {name!r} in the settings' model {item!r} "
                        f"(configured: {', '.join(configured) or 'none'}; built in: "
                        f"{', '.join(PROVIDERS)})"
                    )
                refs.append(ModelRef(provider=name, model=model or configured.get(name, "")))
            elif not configured:
                raise ConfigError(
                    f"model {item!r} names no provider and none is configured; write provider/model"
                )
            else:
                refs += [ModelRef(provider=n, model=item.strip()) for n in configured]
        else:
            spec = getattr(item, "spec", None)
            if not isinstance(spec, str):
                raise ConfigError(
                    f"a model selection entry must be text or {{provider, model}}: {item!r}"
                )
            name, _, model = spec.partition("/")
            if name not in known:
                raise ConfigError(f"unknown provider {name!r} in the settings' model selection")
            refs.append(ModelRef(provider=name, model=model or configured.get(name, "")))
    return tuple(dict.fromkeys(refs))


def provider_chain(
    model: str | None,
    base_url: str | None,
    loaded: LoadedSettings,
    note: Callable[[str], None],
    project_dir: Path | None = None,
) -> list[Provider]:
    """The run's providers in fallback order: `--model` alone when given, else the settings'
    selection (entries that do not resolve, e.g. for a missing key, are skipped with a note).
    A provider whose `base_url` comes from the project's settings file is noted, since the key
    is sent there.

    Raises:
        ConfigError: (AuthError included) the selection is invalid, or no entry resolves (the
            first entry's error).
    """
    settings = loaded.settings
    specs = (
        [model]
        if model
        else [f"{r.provider}/{r.model}" if r.model else r.provider for r in model_refs(settings)]
    )
    chain: list[Provider] = []
    errors: list[ConfigError] = []
    for spec in specs:
        try:
            provider = resolve_provider(spec, base_url=base_url, providers=settings.providers)
        except ConfigError as exc:  # AuthError included: try the next entry
            if model:
                raise
            note(f"note: skipping model {spec!r} from the settings: {exc}")
            errors.append(exc)
            continue
        name = spec.partition("/")[0]
        url = project_base_url(loaded, project_dir, name) if project_dir and not base_url else None
        if url:
            note(f"note: provider {name!r} uses base_url {url!r} from the project settings")
        chain.append(provider)
    if not chain:
        raise errors[0]
    return chain


def retry_policy(settings: Settings) -> RetryPolicy:
    """`retry` settings, then `TETHER_RETRY_BASE` / `_MAX` / `_ATTEMPTS` from the environment."""
    r = settings.retry
    base = RetryPolicy(
        max_attempts=r.max_attempts, retry_base_s=r.base_s, retry_max_s=max(r.max_s, r.base_s)
    )
    return RetryPolicy.from_env(base=base)


def thinking_decay(settings: Settings) -> ThinkingDecay | None:
    """`run.thinking` as a decay policy (None: no thinking budget set, or decay `none` with a
    budget, which the loop sends unchanged every turn).

    Raises:
        ConfigError: a decay that lacks its parameters, or inconsistent ones.
    """
    t = settings.run.thinking
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


def path_policy(settings: Settings) -> PathPolicy:
    """The built-in dotenv rules plus `tools.deny_paths` (refused to read and to write)."""
    extra = tuple(settings.tools.deny_paths)
    return PathPolicy(
        deny_read=(*DEFAULT_POLICY.deny_read, *extra),
        deny_write=(*DEFAULT_POLICY.deny_write, *extra),
    )


def refused_env(settings: Settings) -> tuple[str, ...]:
    """Variable names tools never see: the built-in list, `tools.refused_env`, and every
    configured provider's `api_key_env`."""
    return tuple(dict.fromkeys((*DEFAULT_REFUSED, *settings.refused_env())))


def provider_keys(chain: Sequence[Provider], settings: Settings) -> tuple[str, ...]:
    """The API keys the run's providers use, wherever tether found them (environment, keyring,
    credential file): redacted from tool output, since a tool could print a credential file."""
    keys: list[str] = []
    for p in chain:
        endpoint = settings.providers.get(p.name)
        try:
            found = find_key(
                p.name,
                type_=endpoint.type if endpoint else None,
                api_key_env=endpoint.api_key_env if endpoint else None,
            )
        except ConfigError:  # an unsafe credential file: resolving the provider said so
            continue
        if found is not None:
            keys.append(found.key)
    return tuple(dict.fromkeys(keys))


def run_tools(settings: Settings, root: Path, note: Callable[[str], None]) -> list[Tool]:
    """The built-in tools plus those of the tool folders (`tools.folders`, relative to the
    project, and `.tether/tools/` when it exists). A tool file that fails to import is skipped
    with a note.

    Raises:
        ConfigError: a missing configured folder, or two tools with one name.
    """
    folders = [root / f for f in settings.tools.folders]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        raise ConfigError(f"tools.folders: not a folder: {', '.join(missing)}")
    if (root / PROJECT_TOOL_FOLDER).is_dir():
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextOptions:
    """`tether run`'s context flags: `--no-compact`, `--context-window N` (tokens)."""

    enabled: bool = True
    context_window: int | None = None


def compaction_policy(settings: Settings) -> CompactionPolicy:
    """`context` settings as the compaction policy."""
    c = settings.context
    return CompactionPolicy(
        threshold=c.threshold,
        output_reserve=c.output_reserve,
        runaway_total=c.runaway_total,
        runaway_growth=c.runaway_growth,
        thinking_budget=settings.run.thinking.budget_tokens or 0,
    )


def configured_windows(settings: Settings) -> dict[str, ModelLimits]:
    """`context.windows` as limits per model name.

    Raises:
        ConfigError: an entry of the wrong shape (names the model).
    """
    raw = {name: w.model_dump(exclude_none=True) for name, w in settings.context.windows.items()}
    try:
        return parse_windows_setting(raw)
    except ValueError as exc:
        raise ConfigError(f"context.windows: {exc}") from None


def fixed_text(system: str | None, tools: Sequence[Tool]) -> list[str]:
    """What every request carries besides the turns: the system prompt and the tool schemas."""
    return [system or "", *(json.dumps(t.parameters) for t in tools)]


def run_limits(
    provider: Provider, options: ContextOptions, settings: Settings, *, warn: Callable[[str], None]
) -> ModelLimits:
    """The first provider's model limits: `--context-window`, else `context.windows`, else
    what the provider reports, else the known-models table, else a default with a warning."""
    from tether.cli.compact import model_limits

    return model_limits(
        provider, options.context_window, warn, configured=configured_windows(settings)
    )


def output_threshold_chars(settings: Settings, limits: ModelLimits) -> int:
    """The persisted-output threshold: `tools.output_threshold_chars`, but never more than a
    quarter of the context window (at ~4 characters per token, the window's token count in
    characters), so one tool result cannot fill a small window (case T25); at least 4,096
    (the stub alone is ~3 KiB)."""
    return max(4_096, min(settings.tools.output_threshold_chars, limits.context_window))


def context_manager_for(
    limits: ModelLimits,
    options: ContextOptions,
    settings: Settings,
    *,
    fixed: Sequence[str] = (),
) -> ContextManager | None:
    """The run's `ContextManager`, or None with `--no-compact` / `context.auto_compact: false`."""
    if not options.enabled or not settings.context.auto_compact:
        return None
    system_tokens = sum(text_tokens(x) for x in fixed)
    monitor = ContextMonitor(limits, compaction_policy(settings), system_tokens=system_tokens)
    return ContextManager(monitor)


def mcp_tools(
    settings: Settings,
    root: Path,
    *,
    session_dir: Path | None,
    sandbox: Sandbox | None,
    on_warning: Callable[[str, str], None],
) -> McpTools | None:
    """The run's MCP servers (`mcp.servers`), or None when none is enabled. Nothing starts
    here: `await McpTools.start()` does (see `tether.mcp.tools`)."""
    if not any(s.enabled for s in settings.mcp.servers.values()):
        return None
    from tether.mcp import McpTools
    from tether.providers.models import default_cache_dir

    return McpTools(
        settings.mcp.servers,
        root=root,
        session_dir=session_dir,
        sandbox=sandbox,
        refused_env=refused_env(settings),
        on_warning=on_warning,
        default_start=settings.mcp.start,
        cache_dir=default_cache_dir(),
    )
