"""`tether run`: one headless agent run from flags, settings, stdin and a stored session.

Owns: validating the run's inputs (prompt or stdin messages, `--session` / `--resume` /
`--no-session`), opening the session, building the agent (`tether.cli.agent_setup`), running
it with SIGINT/SIGTERM as cancellation, the closing usage line, and the exit code.
Does not own: argument parsing (`tether.cli.main`), the loop (`tether.agent`).

Exit codes: 0 success · 1 usage/other (also: `--max-turns` reached before a final answer, a
`user_prompt` hook refused the prompt, the next request would pass `--max-budget-usd`, an image
that cannot be attached or a model that reads text only, `--max-tool-calls` reached, the final
answer did not validate against `--output-schema`) ·
2 auth · 3 network · 4 provider error · 5 malformed input · 124 the run's time limit passed
(`--timeout`, `run.timeout`; cancelled as by a signal) · 130 cancelled (the partial turn is
persisted first).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from tether.agent.agent import Agent
from tether.agent.host import Host
from tether.agent.runtime import Runtime, default_id_factory
from tether.agent.sessions import AgentSession
from tether.agent.turn.budget import usd
from tether.cli import agent_setup as setup
from tether.cli import cancel, logsink, run_input, run_limits
from tether.cli.cancel import SIGNALS
from tether.cli.formats import OUTPUT_FORMATS, OutputSink
from tether.cli.output import (
    EXIT_AUTH,
    EXIT_CANCELLED,
    EXIT_MALFORMED,
    EXIT_OK,
    EXIT_USAGE,
    clean_text,
    err,
)
from tether.cli.stdin import StdinInput, binary_why, parse_stdin, plain_text
from tether.cli.token import give_token
from tether.errors import (
    AuthError,
    ConfigError,
    MalformedInputError,
    RunError,
    SessionError,
    exit_code_for,
)
from tether.messages import ContentBlock, Turn
from tether.plural import counted
from tether.providers.pricing import turns_cost_usd
from tether.sandbox.detect import detect_sandbox
from tether.sandbox.policy import NO_SANDBOX_WARNING
from tether.session import SessionStore, SessionWriter

if TYPE_CHECKING:
    from tether.agent.mentions import Mentions


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """`tether run`'s flags (None: take the setting or the default)."""

    prompt: str | None = None
    model: str | None = None
    base_url: str | None = None
    max_turns: int | None = None
    session_id: str | None = None
    resume: str | None = None
    system: str | None = None
    append_system: str | None = None
    print_system: bool = False
    continue_last: bool = False
    cwd: Path = Path(".")
    no_session: bool = False
    safe: bool = False
    network: bool = False
    context: setup.ContextOptions = field(default_factory=setup.ContextOptions)
    plan: bool = False
    max_budget_usd: float | None = None
    images: tuple[Path, ...] = ()
    output_format: str | None = None
    tools: str | None = None
    timeout: str | None = None
    effort: str | None = None
    add_dirs: tuple[str, ...] = ()
    worktree: str | None = None
    name: str | None = None
    output_schema: str | None = None
    max_tool_calls: int | None = None
    token: str | None = field(default=None, repr=False)  # `--token`: never shown
    log_level: str | None = None
    no_stdin: bool = False


EXIT_TIMEOUT = 124
"""The exit code of a run stopped by `--timeout` / `run.timeout` (as `timeout(1)`)."""


def run_command(opts: RunOptions) -> int:
    """Run `tether run` with `opts`; returns the exit code (module docstring). What stdout
    shows is the config's `run.output_format` (`--output-format` sets it; `tether.cli.formats`):
    with `json` or `text` the result is printed once the run has ended."""
    fmt = opts.output_format
    if fmt is not None and fmt not in OUTPUT_FORMATS:  # no format to print a result in
        err(f"--output-format {fmt!r}: give one of {', '.join(OUTPUT_FORMATS)}")
        return EXIT_USAGE
    sink = OutputSink(fmt)
    try:
        setup.effort_override(opts.effort)
        setup.add_dir_override(opts.add_dirs, opts.cwd.resolve())
    except ConfigError as exc:
        code = refuse(sink, EXIT_USAGE, str(exc))
        sink.finish(code)
        return code
    if opts.worktree is not None:
        return _in_worktree(opts, sink)
    code = _run_command(opts, sink)
    sink.finish(code)
    return code


REFUSAL_KINDS = {EXIT_USAGE: "usage", EXIT_AUTH: "auth", EXIT_MALFORMED: "malformed"}
"""The `error` field's kind (`--output-format json`) of a run refused with each exit code."""


def refuse(sink: OutputSink, code: int, reason: str, *, line: str | None = None) -> int:
    """Refuse the run before it starts: `line` (default `reason`) on stderr, and `kind:
    reason` as the json result's `error` (its kind from `code`: `usage`, `auth`,
    `malformed`); returns `code`."""
    if sink.error is None:
        sink.error = f"{REFUSAL_KINDS[code]}: {reason}"
    err(line if line is not None else reason)
    return code


def stopped(sink: OutputSink | None, kind: str, reason: str, code: int) -> int:
    """End a run on an error stop: `stopped: reason; exit CODE` on stderr, and `kind: reason`
    as the json result's `error` unless the run's `error` event already gave one; returns
    `code`."""
    if sink is not None and sink.error is None:
        sink.error = f"{kind}: {reason}"
    err(f"stopped: {reason}; exit {code}")
    return code


def _in_worktree(opts: RunOptions, sink: OutputSink) -> int:
    """`--worktree NAME`: the run in a new git worktree (`tether.worktrees`), removed at the
    end when nothing changed, else kept; one stderr line says which."""
    from tether.errors import WorktreeError
    from tether.worktrees import close, create, folder_in

    assert opts.worktree is not None
    cwd = opts.cwd.resolve()
    try:
        tree = create(cwd, opts.worktree)
    except WorktreeError as exc:
        sink.finish(refuse(sink, EXIT_USAGE, str(exc)))
        return EXIT_USAGE
    try:
        code = _run_command(replace(opts, cwd=folder_in(tree, cwd), worktree=None), sink)
    finally:
        err(close(tree))
    sink.finish(code)
    return code


def _run_command(opts: RunOptions, sink: OutputSink) -> int:
    if opts.continue_last:
        if opts.resume or opts.session_id or opts.no_session:
            why = "--continue cannot be combined with --resume, --session or --no-session"
            return refuse(sink, EXIT_USAGE, why)
        last = latest_session(opts.cwd.resolve())
        if last is None:
            return refuse(sink, EXIT_USAGE, f"no session to continue in {opts.cwd.resolve()}")
        opts = replace(opts, resume=last, continue_last=False)
    try:
        opts = _named(opts)
    except ConfigError as exc:
        return refuse(sink, EXIT_USAGE, str(exc))
    if opts.print_system:
        return print_system(opts, sink)
    if opts.session_id and opts.resume:
        return refuse(sink, EXIT_USAGE, "--session and --resume cannot be combined")
    if opts.no_session and (opts.session_id or opts.resume):
        why = "--no-session cannot be combined with --session or --resume"
        return refuse(sink, EXIT_USAGE, why)
    try:
        setup.check_flags(opts.model, opts.base_url)
        give_token(opts.token, opts.model)  # `tether.cli.token`
        logsink.level_for(opts.log_level, None)  # a bad --log-level: one line, exit 1
    except ConfigError as exc:
        return refuse(sink, EXIT_USAGE, str(exc))
    prompt = opts.prompt
    if prompt is not None:
        prompt = clean_text(prompt)
        if not prompt.strip():
            return refuse(sink, EXIT_USAGE, "empty prompt")
    new_id = default_id_factory()
    stdin = StdinInput(None, ())
    try:
        if prompt is None and not opts.no_stdin and not sys.stdin.isatty():
            raw = sys.stdin.read()
            if (why := binary_why(raw)) is not None:
                raise MalformedInputError(f"{why}: nothing sent (attach a file as @path instead)")
            stdin = parse_stdin(clean_text(raw), new_id)
        piped = run_input.piped_text() if prompt is not None and not opts.no_stdin else ""
    except MalformedInputError as exc:
        return refuse(sink, EXIT_MALFORMED, str(exc), line=f"malformed input: {exc}")
    if piped and not plain_text(piped):
        err(
            "note: stdin ignored: beside a prompt argument only plain text is added to it "
            "(send a JSON context or message lines on stdin alone)"
        )
        piped = ""
    elif piped:  # visible: a `while read` loop's input read into one prompt would not be
        err(
            f"note: {counted(len(piped.splitlines()), 'line')} of stdin added after the prompt "
            "(--no-stdin leaves stdin alone)"
        )
    if prompt is None and not opts.resume:
        if not stdin.messages:
            why = "no prompt: give one as an argument" + (
                "" if opts.no_stdin else " or on stdin"
            )
            return refuse(sink, EXIT_USAGE, why)
        if all(t.role == "system" for t in stdin.messages):  # nothing to answer: refused alike
            why = "no prompt: the stdin context holds only system messages; add a user message"
            return refuse(sink, EXIT_USAGE, why)
    root = opts.cwd.resolve()
    if not root.is_dir():
        return refuse(sink, EXIT_USAGE, f"--cwd {opts.cwd} is not a folder")
    if opts.images and prompt is None:
        return refuse(sink, EXIT_USAGE, "--image needs the prompt as an argument")
    try:  # a missing or unreadable image is one line before any setup (attached in `_build`)
        images = run_input.flag_images(prompt, opts.images, root)
    except ConfigError as exc:
        return refuse(sink, EXIT_USAGE, str(exc))
    stdin_texts = [piped, *(t.text for t in stdin.messages if t.role == "user")]
    if (note := run_input.stdin_mention_note(stdin_texts, root)) is not None:
        err(note)
    try:
        agent, writer, prompt, attachments = _build(opts, root, stdin, new_id, prompt, sink, images)
    except AuthError as exc:
        return refuse(sink, EXIT_AUTH, str(exc))
    except MalformedInputError as exc:
        return refuse(sink, EXIT_MALFORMED, str(exc), line=f"malformed input: {exc}")
    except (ConfigError, SessionError) as exc:
        return refuse(sink, EXIT_USAGE, str(exc))
    start = len(agent.history)
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    try:
        for turn in stdin.messages:
            agent.append(turn)
        from tether.agent.mentions import mention_content

        content = mention_content(prompt, attachments) if prompt is not None else None
        if piped and content is not None:  # after the prompt; its `@words` attach nothing
            content = run_input.with_piped(content, piped)
        return asyncio.run(_drive(agent, content, sink))
    except asyncio.CancelledError:  # a signal landed as the run was returning
        cancel.say()
        return EXIT_CANCELLED
    except ConfigError as exc:
        return refuse(sink, EXIT_USAGE, str(exc))
    finally:
        ran = agent.history[start:]
        sink.cost_usd = turns_cost_usd(ran)
        children = sink.done.children_usage if sink.done is not None else None
        err(f"usage: {sink.usage_line(ran, children)}")  # subagents' included
        if writer is not None:
            sink.session_id = writer.id
            try:
                writer.sync()  # the run's turns and saved outputs survive an OS crash too
            except OSError as exc:
                err(f"could not fsync the session: {exc}")
            finally:
                writer.close()
            err(f"session {writer.id} ({writer.path})")
        _set_handlers(previous)  # everything is persisted: the CLI's own handlers again


def _named(opts: RunOptions) -> RunOptions:
    """`--resume NAME` made the id of the newest session so named (this folder's first), and
    `--name` checked (`tether.session.names`).

    Raises:
        ConfigError: an unusable name, or `--name` with `--no-session`.
    """
    from tether.session.names import check_free, check_name

    if opts.name is not None:
        if opts.no_session:
            raise ConfigError("--name names a stored session: it cannot go with --no-session")
        opts = replace(opts, name=check_name(opts.name))
    if opts.resume:
        found = SessionStore().find(opts.resume, opts.cwd.resolve())
        opts = replace(opts, resume=found or opts.resume)
    if opts.name is not None:  # a name another session has is refused (resumed: its own is fine)
        check_free(SessionStore().list(), opts.name, own_id=opts.resume)
    return opts


def latest_session(root: Path) -> str | None:
    """The id of the most recently changed session started in `root` (subagents' sessions
    left out), or None."""
    return SessionStore().latest(root)  # headers only: the resume decodes the file once


def print_system(opts: RunOptions, sink: OutputSink | None = None) -> int:
    """`--print-system`: the system prompt the run would send (a resumed session's stored
    one), on stdout; nothing is sent or written."""
    sink = sink or OutputSink()
    root = opts.cwd.resolve()
    if not root.is_dir():
        return refuse(sink, EXIT_USAGE, f"--cwd {opts.cwd} is not a folder")
    overrides = _overrides(opts)
    try:
        session = AgentSession.resume(SessionStore(), opts.resume) if opts.resume else AgentSession()
        agent = Agent.from_settings(
            root,
            model=opts.model,
            base_url=opts.base_url,
            overrides=overrides,
            system=opts.system,
            host=Host(note=err),
            session=session,
        )
    except AuthError as exc:
        return refuse(sink, EXIT_AUTH, str(exc))
    except (ConfigError, SessionError) as exc:
        return refuse(sink, EXIT_USAGE, str(exc))
    from tether.tokens import text_tokens

    text = agent.system or ""
    print(text)
    err(f"system prompt: {len(text)} characters, ~{text_tokens(text)} tokens (estimated)")
    return EXIT_OK


def _overrides(opts: RunOptions) -> dict[str, Any]:
    overrides = setup.flag_overrides(
        max_turns=opts.max_turns,
        safe=opts.safe,
        network=opts.network,
        context=opts.context,
        output_format=opts.output_format,
    )
    if opts.max_budget_usd is not None:
        overrides["run.max_budget_usd"] = opts.max_budget_usd
    overrides.update(run_limits.overrides(opts.output_schema, opts.max_tool_calls))
    overrides.update(setup.effort_override(opts.effort))
    overrides.update(setup.add_dir_override(opts.add_dirs, opts.cwd.resolve()))
    if opts.append_system is not None:
        overrides["run.append_system"] = opts.append_system
    if opts.tools is not None:
        names = [n.strip() for n in opts.tools.split(",") if n.strip()]
        if not names:
            raise ConfigError("--tools is empty: name at least one tool")
        overrides["tools.only"] = names
    if opts.timeout is not None:
        from tether.durations import parse_duration
        from tether.errors import DurationError

        given = opts.timeout.strip()
        value = given
        if value.replace(".", "", 1).isdigit():  # a bare number on the command line: seconds
            value += "s"
        try:
            seconds = parse_duration(value)
        except DurationError:
            raise ConfigError(
                f"--timeout {given!r}: give seconds (600) or a duration like 90s, 10m, 1h30m, "
                "at most a year"
            ) from None
        if seconds <= 0:
            raise ConfigError("--timeout must be above 0")
        overrides["run.timeout_s"] = value  # a string, as in the file (a number is ms there)
    return overrides


def _build(
    opts: RunOptions,
    root: Path,
    stdin: StdinInput,
    new_id: Callable[[], str],
    prompt: str | None,
    sink: OutputSink | None = None,
    images: run_input.FlagImages | None = None,
) -> tuple[Agent, SessionWriter | None, str | None, Mentions]:
    """Flags → config overrides → `Agent.from_settings` (the settings files, tool folders and
    credentials of `root`; its MCP servers start with the run); a `/name args` prompt
    expanded (its `model` taken unless `--model` pins one); then what the prompt attaches
    (`--image`, and its `@path` words — a command's body's too — under the agent's read deny
    list), its notes on stderr. Raises ConfigError / AuthError / SessionError before anything
    is written (the writer is opened last)."""
    overrides = _overrides(opts)
    sink = sink or OutputSink()
    store = SessionStore()
    if opts.resume:
        session = AgentSession.resume(store, opts.resume)
        assert session.loaded is not None
        if not session.loaded.report.ok:
            err(session.loaded.report.describe())
        cwd = session.loaded.header.cwd
        if cwd and Path(cwd) != root:
            err(f"note: session {opts.resume} was started in {cwd}; tools now work in {root}")
    elif opts.no_session:
        session = AgentSession()
    else:
        if opts.session_id and store.exists(opts.session_id):  # before any setup line
            raise SessionError(
                f"session {opts.session_id} already exists at {store.path(opts.session_id)} "
                f"(--session starts a new one; --resume {opts.session_id} goes on with it)"
            )
        session = AgentSession.new(store, cwd=root, session_id=opts.session_id)
    if detect_sandbox() is None:
        err(f"warning: {NO_SANDBOX_WARNING}")
    try:
        agent = Agent.from_settings(
            root,
            model=opts.model,
            base_url=opts.base_url,
            overrides=overrides,
            system=opts.system or stdin.system,
            host=Host(on_event=logsink.logged(sink), note=err),
            session=session,
            runtime=Runtime(new_id=new_id),
        )
    except ConfigError as exc:
        raise setup.named_flag(exc, opts.tools) from None
    setup.check_safe_tools(agent.registry, agent.config.tools.only, opts.safe)
    # by default no sink: the one-line `tether: …` diagnostics say it all, once
    logsink.install(logsink.level_for(opts.log_level, agent.config.log.level))
    if prompt is not None:
        prompt = _command_prompt(agent, prompt, pinned=opts.model is not None)
    sink.use(agent.config.run.output_format)
    run_limits.check_schema(agent)  # a bad schema is one line before any request
    from tether.agent.attachments import image_refusal

    typed = opts.prompt if prompt != opts.prompt else None  # a command's text: its words
    images = images or run_input.flag_images(None, opts.images, root)  # a caller's: unread
    attachments = run_input.prompt_attachments(prompt, images, root, agent, typed)
    for line in attachments.notes:
        err(f"note: {line}")
    run_input.check_input_fits(prompt, stdin, agent, [b.text for b in attachments.blocks])
    agent.set_plan_mode(opts.plan)
    refusal = image_refusal(agent.provider, len(attachments.images))
    if refusal is not None:
        raise ConfigError(refusal)
    session.open()  # last: a taken id is reported before anything runs
    if opts.name and session.writer is not None:
        from tether.session.names import NAME_EVENT

        session.writer.append_event(NAME_EVENT, {"name": opts.name})
    return agent, session.writer, prompt, attachments


def _command_prompt(agent: Agent, prompt: str, *, pinned: bool) -> str:
    """`prompt`, or the prompt of the `/name args` command it is (switching to the command's
    `model` unless the model is `pinned`).

    Raises:
        ConfigError: an unknown command (nothing is sent) or a model that does not resolve.
    """
    from tether.agent.assembly.prompting import command_prompt

    text, command = command_prompt(agent.root, agent.session.context, prompt, warn=err)
    if command is not None and command.model and not pinned:
        try:
            agent.switch_model(command.model)
        except AuthError:
            raise
        except ConfigError as exc:  # named by the file that set it, not by a flag
            m = command.model
            why = str(exc).replace(f" in --model {m!r}", "").replace(f"--model {m!r}", "it")
            raise ConfigError(f"{command.location}: model {m!r}: {why}") from None
    return text


async def _drive(
    agent: Agent, prompt: str | list[ContentBlock] | None, sink: OutputSink | None = None
) -> int:
    """Run the agent; SIGINT/SIGTERM cancel it (the loop persists the partial turn first).
    MCP servers start first (their tools join the agent's registry) and stop at the end. An
    error stop's reason becomes `sink`'s `error` (`stopped`)."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        # A Python-level handler, not `loop.add_signal_handler`: the signal is recorded the
        # instant it arrives (exit 130 even when the cancel reaches a run that just finished).
        # With the loop's own handlers, a signal delivered while the run closed synchronously
        # (the final answer and the closing checkpoint written, `done` emitted) waited in the
        # loop's self-pipe, and removing the handlers below dropped it: exit 0.
        cancel.note()
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(task.cancel)  # also wakes a loop blocked in select

    _set_handlers(dict.fromkeys(SIGNALS, on_signal))
    limit = agent.config.run.timeout_s
    deadline = asyncio.timeout(limit)  # `run.timeout` / `--timeout`: the whole run
    try:
        await agent.start()
        async with deadline:
            result = await agent.run(prompt)
    except TimeoutError:
        if not deadline.expired():
            raise
        assert limit is not None
        why = f"the run's time limit ({limit:g} s, --timeout) passed"
        return stopped(sink, "timeout", why, EXIT_TIMEOUT)
    except RunError as exc:
        if sink is not None and sink.error is None:
            sink.error = f"{exc.kind}: {exc}"
        err(str(exc))
        return exit_code_for(exc.kind)
    except asyncio.CancelledError:
        cancel.say()
        return EXIT_CANCELLED
    finally:
        try:
            await agent.aclose()
        finally:
            # From here to the end of `run_command` a signal is only recorded
            # (`tether.cli.cancel`: the process exits 130): an exception raised inside the
            # closing event loop or the session writer's close would end in a traceback or be
            # lost.
            _set_handlers(dict.fromkeys(SIGNALS, _note_signal))
    if result.stop_reason == "context_runaway":  # the runaway guard refused to go on
        why = "context_overflow: the context ran away (see the error event)"
        code = stopped(sink, "context_overflow", why, exit_code_for("context_overflow"))
        hint = fork_hint(agent.session.id, agent.history)
        if hint:
            err(hint)
        return code
    if result.stop_reason == "prompt_denied":  # a user_prompt hook refused it: nothing sent
        return stopped(sink, "prompt_denied", "a user_prompt hook refused the prompt", EXIT_USAGE)
    if result.stop_reason == "max_budget":  # the `warning` event `max_budget` says why
        limit = agent.config.run.max_budget_usd  # the agent's public config, as the flag set it
        cap = f" {usd(limit)}" if limit is not None else ""
        why = f"the next request would pass --max-budget-usd{cap}"
        return stopped(sink, "max_budget", why, EXIT_USAGE)
    if agent.plan_mode and result.stop_reason in ("end_turn", "stop_sequence"):
        where = "`plan` event" if agent.config.run.output_format == "stream-json" else "answer"
        err(f"plan mode: nothing was changed; the plan is the {where}")
    if (why := run_limits.stop_reason_line(agent, result)) is not None:
        return stopped(sink, result.stop_reason, why, EXIT_USAGE)
    if result.stop_reason == "max_turns":  # the run did not finish its task
        why = f"--max-turns reached ({counted(result.turns, 'request')}) before a final answer"
        return stopped(sink, "max_turns", why, EXIT_USAGE)
    return EXIT_OK


def fork_hint(session_id: str | None, history: Sequence[Turn]) -> str | None:
    """The way on after the runaway guard stopped a run: each resume would compact once and stop
    again when the last user message alone is too large, so the line names the fork that leaves
    it out (`tether sessions fork ID --before N`); None without a session or a user message."""
    from tether.agent.turn.checkpoints import synthetic_user_turn
    from tether.checkpoint.timeline import user_turns

    if session_id is None:
        return None
    turns = user_turns(history, synthetic_user_turn)
    if not turns:
        return None
    n = turns[-1].number
    return (
        f"to go on without user message {n} (resuming stops here again), fork before it: "
        f"tether sessions fork {session_id} --before {n}"
    )


def _note_signal(signum: int, frame: FrameType | None) -> None:
    """The handler while a run closes: record the signal; the process exits 130 at the end."""
    cancel.note()


Handler = Callable[[int, FrameType | None], Any] | int | None


def _set_handlers(handlers: dict[signal.Signals, Handler]) -> None:
    """Install `handlers` with the signals blocked meanwhile, so a signal arriving during the
    swap is delivered (to the new handler) once both are in, never in between."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
