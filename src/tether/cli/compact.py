"""CLI glue for context management: a model's limits for the CLI, and the
`tether compact SESSION` command.

Owns: resolving the window (`--context-window`, else `resolve_limits(model)` with a visible
warning for unknown models), and compacting a stored session (append the marker turn).
Does not own: the compaction itself (`tether.compaction`, `tether.agent.context`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from tether.agent.loop import default_id_factory
from tether.compaction.pressure import ModelLimits
from tether.compaction.rounds import CompactInvalidInputError, Scope
from tether.compaction.summarize import CompactionFailedError, compact_conversation
from tether.compaction.windows import resolve_limits
from tether.errors import AuthError, ConfigError, SessionError, exit_code_for
from tether.providers.base import Provider
from tether.session import SessionStore

EXIT_USAGE, EXIT_AUTH, EXIT_MALFORMED = 1, 2, 5


def model_limits(
    provider: Provider,
    context_window: int | None,
    warn: Callable[[str], None],
    *,
    configured: Mapping[str, ModelLimits] | None = None,
) -> ModelLimits:
    """The limits for `provider`'s model: a forced window (`--context-window`), else the
    settings' `context.windows` entry (`configured`), else what the provider reports (a
    `context_window` attribute, e.g. the local model's n_ctx), else the known-models table, else
    a conservative default with a warning on stderr (T20). A provider with a
    `use_context_window(tokens)` method (Ollama: `num_ctx`) is told the resolved window."""
    reported: ModelLimits | None = None
    window = getattr(provider, "context_window", None)  # e.g. the local model's n_ctx
    if isinstance(window, int) and window > 0:
        out = getattr(provider, "max_output_tokens", None)
        reported = ModelLimits(
            context_window=window,
            max_output_tokens=out if isinstance(out, int) and out > 0 else max(window // 4, 1),
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
    use_window = getattr(provider, "use_context_window", None)
    if callable(use_window):  # a server that allocates the window per request (Ollama num_ctx)
        use_window(known.context_window)
    return known


def compact_command(
    session_id: str,
    *,
    focus: str | None,
    model: str | None,
    base_url: str | None,
    context_window: int | None,
    keep_turns: int,
    err: Callable[[str], None],
) -> int:
    """`tether compact`: load, summarize, append the marker; print one JSON line
    `{"session_id", "marker_id", "tokens_before", "tokens_after", "turns_replaced"}`. The model
    is `--model`, else the settings' selection (of the current folder's project), like
    `tether run`; windows come from `--context-window`, else the settings, else the table."""
    from tether.cli.agent_setup import (
        check_flags,
        configured_windows,
        provider_chain,
        trusted_settings,
    )

    store = SessionStore()
    try:
        check_flags(model, base_url)
        cfg, _ = trusted_settings(Path.cwd(), err, lambda _e: None)
        provider = provider_chain(model, base_url, cfg, err, Path.cwd())[0]
        windows = configured_windows(cfg.settings)
        loaded = store.load(session_id)
    except AuthError as exc:
        err(str(exc))
        return EXIT_AUTH
    except (ConfigError, SessionError) as exc:
        err(str(exc))
        return EXIT_USAGE
    if not loaded.report.ok:
        err(loaded.report.describe())
    limits = model_limits(provider, context_window, err, configured=windows)
    new_id = default_id_factory()
    try:
        result = asyncio.run(
            compact_conversation(
                provider,
                loaded.turns,
                Scope.tail(keep_turns) if keep_turns else Scope.full(),
                focus,
                window_tokens=limits.context_window,
                summary_max_tokens=max(
                    64, min(4096, limits.context_window // 4, limits.max_output_tokens)
                ),
                marker_id=new_id(),
            )
        )
    except CompactInvalidInputError as exc:
        err(f"cannot compact {session_id}: {exc}")
        return EXIT_MALFORMED
    except CompactionFailedError as exc:
        err(str(exc))
        return exit_code_for(exc.kind)
    try:
        with store.open_for_append(session_id) as writer:
            writer.append(result.marker_turn)
    except SessionError as exc:
        err(str(exc))
        return EXIT_USAGE
    print(
        json.dumps(
            {
                "session_id": session_id,
                "marker_id": result.marker_turn.id,
                "generation": result.generation,
                "tokens_before": result.tokens_before,
                "tokens_after": result.tokens_after,
                "turns_replaced": len(result.replaced_ids),
            }
        )
    )
    err(f"compacted {session_id}: {result.tokens_before} → {result.tokens_after} tokens")
    return 0
