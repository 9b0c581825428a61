"""The `tether compact SESSION` command.

Owns: compacting a stored session (append the marker turn); the summary call goes through the
same parts as a run's requests (`tether.agent.assembly.assemble.assemble`: the chain, its retries and
fallback, the model's limits).
Does not own: the compaction itself (`tether.compaction`, `tether.agent.turn.compacting`; its
summary cap, `summary_cap`), reading the settings and resolving the model (the construction
path of every entry point, `tether.agent.assembly.build.settings_chain`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from tether.agent.assembly import build
from tether.agent.assembly.assemble import assemble
from tether.agent.sessions import AgentSession
from tether.compaction.rounds import Scope
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.summarize import SummaryRequest, compact_conversation, summary_cap
from tether.errors import (
    AuthError,
    CompactInvalidInputError,
    CompactionFailedError,
    ConfigError,
    SessionError,
    exit_code_for,
)
from tether.messages import Turn
from tether.session import SessionStore

EXIT_USAGE, EXIT_AUTH = 1, 2


def session_model(turns: Sequence[Turn]) -> str | None:
    """`provider/model` of the session's last assistant turn (its provenance), or None when
    none has one or it was the embedded model (whose file name is no `--model`)."""
    for turn in reversed(turns):
        prov = turn.provenance
        if turn.role == "assistant" and prov is not None and prov.model:
            return None if prov.provider == "local" else f"{prov.provider}/{prov.model}"
    return None


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
    is `--model`, else the session's own (its last assistant turn's), else the settings'
    selection (of the current folder's project); windows come from `--context-window`, else
    the settings, else the table. Nothing to summarize, or a summary not shorter than what it
    replaces, writes nothing: one line, exit 1."""
    from tether.cli.agent_setup import check_flags

    store = SessionStore()
    root = Path.cwd()
    try:
        check_flags(model, base_url)
        session_id = store.find(session_id, root.resolve()) or session_id  # a name, as --resume
        loaded = store.load(session_id)
        if model is None and (model := session_model(loaded.turns)) is not None:
            err(
                f"note: the summary is written by {model}, the session's model (--model picks another)"
            )
        overrides = {"context.window": context_window} if context_window is not None else None
        root, config, chain, refused = build.settings_chain(
            root, model=model, base_url=base_url, overrides=overrides, note=err
        )
        if refused is not None:  # the project's files are not loaded: say so, as `tether run`
            err(f"warning: {refused}")
        parts = assemble(
            config, chain, root=root, session=AgentSession(), compaction=False, note=err
        )
    except AuthError as exc:
        err(str(exc))
        return EXIT_AUTH
    except (ConfigError, SessionError) as exc:
        err(str(exc))
        return EXIT_USAGE
    if not loaded.report.ok:
        err(loaded.report.describe())
    limits = parts.limits
    try:
        request = SummaryRequest(
            snapshot=CompactionSnapshot.of(loaded.turns),
            scope=Scope.tail(keep_turns) if keep_turns else Scope.full(),
            instructions=focus,
            window_tokens=limits.context_window,
            summary_max_tokens=summary_cap(limits),
            marker_id=parts.new_id(),
        )
        result = asyncio.run(
            compact_conversation(parts.provider, request, call=parts.summary_call(None))
        )
    except CompactInvalidInputError as exc:
        err(f"nothing to compact in {session_id}: {exc}; nothing written")
        return EXIT_USAGE
    except CompactionFailedError as exc:
        err(str(exc))
        return exit_code_for(exc.kind)
    if result.tokens_after >= result.tokens_before:  # a summary longer than what it replaces
        err(
            f"not compacted {session_id}: the summary ({result.tokens_after} tokens with what "
            f"stays) is not shorter than the conversation ({result.tokens_before}); nothing written"
        )
        return EXIT_USAGE
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
