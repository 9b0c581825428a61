"""The `tether` command line (typer).

Owns: argument parsing, the headless JSONL event stream on stdout (diagnostics on stderr only),
exit codes, signal handling, and the `sessions` subcommands.

Exit codes: 0 success · 1 usage/other · 2 auth · 3 network · 4 provider error · 5 malformed input ·
130 cancelled (SIGINT/SIGTERM; the partial turn is persisted first).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from tether.agent.events import AgentEvent, event_to_json
from tether.agent.loop import Agent, default_id_factory
from tether.cli.compact import ContextOptions, compact_command, context_manager
from tether.cli.settings_cmds import config_app, login, logout, provider_from_settings
from tether.cli.stdin import MalformedInputError, StdinInput, parse_stdin
from tether.errors import AuthError, ConfigError, RunError, SessionError, exit_code_for
from tether.messages import Turn, turn_to_dict
from tether.providers.pricing import turns_cost_usd, turns_usage, usage_line
from tether.providers.retry import RetryPolicy
from tether.session import SessionStore
from tether.settings import load_settings
from tether.tools.builtins import builtin_tools
from tether.tools.policy import NO_SANDBOX_WARNING
from tether.tools.sandbox import detect_sandbox

app = typer.Typer(
    name="tether",
    help="tether: an agent harness for long sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
sessions_app = typer.Typer(help="List, show and delete stored sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
app.add_typer(config_app, name="config")
app.command()(login)
app.command()(logout)

EXIT_OK, EXIT_USAGE, EXIT_AUTH, EXIT_MALFORMED, EXIT_CANCELLED = 0, 1, 2, 5, 130


def _clean_text(text: str) -> str:
    """Undecodable input bytes (surrogate escapes) become U+FFFD, so the session stays UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _err(message: str) -> None:
    print(f"tether: {message}", file=sys.stderr, flush=True)


class _EventWriter:
    """Writes events as JSON lines to stdout. If the reader goes away (`| head`, a closed
    stdout), events stop but the run goes on and is persisted."""

    def __init__(self) -> None:
        self.open = sys.stdout is not None

    def __call__(self, event: AgentEvent) -> None:
        if not self.open:
            return
        try:
            sys.stdout.write(event_to_json(event) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):  # ValueError: write to a closed file
            self.open = False
            _err("stdout closed: events are no longer written; the session is still persisted")
            # Point stdout at devnull so the interpreter's exit flush does not fail again.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@app.command()
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="The task. Read from stdin when omitted.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="provider/model, e.g. local, openai/gpt-4o.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Endpoint for an OpenAI-compatible server.")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(min=1, help="Cap on model requests (default: run.max_turns, 50).")
    ] = None,
    session: Annotated[str | None, typer.Option(help="Persist under this new session id.")] = None,
    resume: Annotated[
        str | None, typer.Option(help="Replay this session, then continue it.")
    ] = None,
    system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
    cwd: Annotated[Path, typer.Option(help="Working folder the tools are confined to.")] = Path(
        "."
    ),
    no_session: Annotated[
        bool, typer.Option("--no-session", help="Do not persist the run.")
    ] = False,
    safe: Annotated[
        bool, typer.Option("--safe", help="Safe mode: only read-only tools (read, ls, glob, grep).")
    ] = False,
    network: Annotated[
        bool, typer.Option("--network", help="Let sandboxed tool commands use the network.")
    ] = False,
    no_compact: Annotated[
        bool, typer.Option("--no-compact", help="Disable automatic compaction.")
    ] = False,
    context_window: Annotated[
        int | None,
        typer.Option(min=256, help="The model's context window in tokens (default: known table)."),
    ] = None,
) -> None:
    """Run the agent headless: events as JSON lines on stdout, diagnostics on stderr."""
    raise typer.Exit(
        _run(
            prompt,
            model,
            base_url,
            max_turns,
            session,
            resume,
            system,
            cwd,
            no_session,
            safe=safe,
            network=network,
            compact=ContextOptions(enabled=not no_compact, context_window=context_window),
        )
    )


def _run(
    prompt: str | None,
    model: str | None,
    base_url: str | None,
    max_turns: int | None,
    session_id: str | None,
    resume: str | None,
    system: str | None,
    cwd: Path,
    no_session: bool,
    *,
    safe: bool = False,
    network: bool = False,
    compact: ContextOptions | None = None,
) -> int:
    if session_id and resume:
        _err("--session and --resume cannot be combined")
        return EXIT_USAGE
    if no_session and (session_id or resume):
        _err("--no-session cannot be combined with --session or --resume")
        return EXIT_USAGE
    if prompt is not None:
        prompt = _clean_text(prompt)
        if not prompt.strip():
            _err("empty prompt")
            return EXIT_USAGE
    new_id = default_id_factory()
    stdin = StdinInput(None, ())
    if prompt is None and not sys.stdin.isatty():
        try:
            stdin = parse_stdin(_clean_text(sys.stdin.read()), new_id)
        except MalformedInputError as exc:
            _err(f"malformed input: {exc}")
            return EXIT_MALFORMED
    if prompt is None and not stdin.messages and not resume:
        _err("no prompt: give one as an argument or on stdin")
        return EXIT_USAGE
    root = cwd.resolve()
    if not root.is_dir():
        _err(f"--cwd {cwd} is not a folder")
        return EXIT_USAGE
    try:
        cfg = load_settings(root)  # CLI flags win over the settings
        provider = provider_from_settings(model, base_url, cfg, root)

        # settings, then TETHER_RETRY_BASE / _MAX / _ATTEMPTS from the environment on top
        retry = RetryPolicy.from_env(
            base=RetryPolicy(
                max_attempts=cfg.settings.retry.max_attempts,
                retry_base_s=cfg.settings.retry.base_s,
                retry_max_s=max(cfg.settings.retry.max_s, cfg.settings.retry.base_s),
            )
        )

        sandbox = detect_sandbox()
        if sandbox is None:
            _err(f"warning: {NO_SANDBOX_WARNING}")
        store = SessionStore()
        history: tuple[Turn, ...] = ()
        writer = None
        if resume:
            loaded = store.load(resume)
            if not loaded.report.ok:
                _err(loaded.report.describe())
            history = loaded.turns
            if loaded.header.cwd and Path(loaded.header.cwd) != root:
                _err(
                    f"note: session {resume} was started in {loaded.header.cwd}; tools now work in {root}"
                )
            writer = store.open_for_append(resume)
        elif not no_session:
            writer = store.create(session_id, cwd=str(root))
    except AuthError as exc:
        _err(str(exc))
        return EXIT_AUTH
    except (ConfigError, SessionError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    tools = builtin_tools()
    agent = Agent(
        provider,
        tools=tools,
        root=root,
        system=system or stdin.system,
        history=history,
        session=writer,
        max_turns=max_turns or cfg.settings.run.max_turns,
        tool_timeout_s=cfg.settings.tools.timeout_s,
        id_factory=new_id,
        on_event=_EventWriter(),
        session_dir=store.artifact_dir(writer.id) if writer else None,
        retry=retry,
        sandbox=sandbox,
        safe_mode=safe,
        network=network,
        compaction=context_manager(
            provider,
            compact or ContextOptions(),
            warn=_err,
            fixed_text=[system or stdin.system or "", *(json.dumps(t.parameters) for t in tools)],
        ),
    )
    start = len(agent.history)
    try:
        for turn in stdin.messages:
            agent.history.append(turn)
            if writer is not None:
                writer.append(turn)
        return asyncio.run(_drive(agent, prompt))
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_USAGE
    finally:
        ran = agent.history[start:]
        _err(f"usage: {usage_line(turns_usage(ran), turns_cost_usd(ran))}")
        if writer is not None:
            writer.close()
            _err(f"session {writer.id} ({writer.path})")


async def _drive(agent: Agent, prompt: str | None) -> int:
    """Run the agent; SIGINT/SIGTERM cancel it (the loop persists the partial turn first)."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await agent.run(prompt)
    except RunError as exc:
        _err(str(exc))
        return exit_code_for(exc.kind)
    except asyncio.CancelledError:
        _err("cancelled")
        return EXIT_CANCELLED
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return EXIT_OK


@app.command()
def compact(
    session_id: Annotated[str, typer.Argument(help="The stored session to compact.")],
    focus: Annotated[str | None, typer.Option(help="What the summary must keep.")] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="provider/model writing the summary.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="Endpoint for an OpenAI-compatible server.")
    ] = None,
    context_window: Annotated[
        int | None, typer.Option(min=256, help="The summarizing model's window, in tokens.")
    ] = None,
    keep_turns: Annotated[int, typer.Option(min=0, help="Recent turns kept verbatim.")] = 0,
) -> None:
    """Compact a stored session: append a summary marker; print tokens before/after as JSON."""
    raise typer.Exit(
        compact_command(
            session_id,
            focus=focus,
            model=model,
            base_url=base_url,
            context_window=context_window,
            keep_turns=keep_turns,
            err=_err,
        )
    )


@app.command()
def models(
    provider: Annotated[str | None, typer.Argument(help="openai, google, ollama, ...")] = None,
    base_url: Annotated[str | None, typer.Option(help="The provider's endpoint.")] = None,
) -> None:
    """List models, one JSON line per provider: live, else last cached listing, else bundled."""
    from tether.providers.models import MODEL_PROVIDERS, list_all, listing_to_dict

    if base_url and not provider:
        _err("--base-url needs a provider")
        raise typer.Exit(EXIT_USAGE)
    try:
        names = (provider,) if provider else MODEL_PROVIDERS
        listings = asyncio.run(list_all(names, base_url=base_url))
    except ConfigError as exc:
        _err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    for listing in listings:
        print(json.dumps(listing_to_dict(listing)))
        note = f" ({listing.note})" if listing.note else ""
        _err(f"{listing.provider}: {len(listing.models)} models from {listing.source}{note}")


@sessions_app.command("list")
def sessions_list() -> None:
    """List stored sessions, newest first: id, turns, created, first prompt."""
    for info in SessionStore().list():
        row = {
            "id": info.id,
            "turns": info.turn_count,
            "created_ms": info.created_ms,
            "modified_ms": info.modified_ms,
            "cwd": info.cwd,
            "preview": info.preview,
            "parent": list(info.parent) if info.parent else None,
            "error": info.error,
        }
        print(json.dumps(row))


@sessions_app.command("show")
def sessions_show(session_id: str) -> None:
    """Print a session's turns as JSON lines (malformed lines are reported on stderr), then the
    session's summed usage and cost on stderr."""
    try:
        loaded = SessionStore().load(session_id)
    except SessionError as exc:
        _err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    if not loaded.report.ok:
        _err(loaded.report.describe())
    for turn in loaded.turns:
        print(json.dumps(turn_to_dict(turn)))
    _err(f"usage: {usage_line(turns_usage(loaded.turns), turns_cost_usd(loaded.turns))}")


@sessions_app.command("delete")
def sessions_delete(session_id: str) -> None:
    """Delete a session's file and its whole artifact folder."""
    try:
        SessionStore().delete(session_id)
    except SessionError as exc:
        _err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    _err(f"deleted {session_id}")


def main() -> None:
    """Console entry point. Usage errors exit 1 (click's default 2 is our auth code)."""
    try:
        code = app(standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.exit(EXIT_CANCELLED)
    except Exception as exc:
        show = getattr(exc, "show", None)
        if not callable(show):  # not a CLI usage error (typer vendors its own click)
            raise
        show()
        sys.exit(EXIT_USAGE)
    sys.exit(code if isinstance(code, int) else EXIT_OK)
