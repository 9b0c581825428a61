"""`tether run`: one headless agent run from flags, settings, stdin and a stored session.

Owns: validating the run's inputs (prompt or stdin messages, `--session` / `--resume` /
`--no-session`), opening the session, building the agent (`tether.cli.agent_setup`), running
it with SIGINT/SIGTERM as cancellation, the closing usage line, and the exit code.
Does not own: argument parsing (`tether.cli.main`), the loop (`tether.agent`).

Exit codes: 0 success · 1 usage/other (also: `--max-turns` reached before a final answer, a
`user_prompt` hook refused the prompt, the next request would pass `--max-budget-usd`, an image
that cannot be attached or a model that reads text only) ·
2 auth · 3 network · 4 provider error · 5 malformed input · 130 cancelled (the partial turn is
persisted first).
"""

from __future__ import annotations

import asyncio
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
from tether.cli import cancel
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
from tether.cli.stdin import MalformedInputError, StdinInput, parse_stdin
from tether.errors import AuthError, ConfigError, RunError, SessionError, exit_code_for
from tether.messages import ContentBlock, ImageBlock
from tether.providers.pricing import turns_cost_usd, turns_usage_line
from tether.sandbox.detect import detect_sandbox
from tether.sandbox.policy import NO_SANDBOX_WARNING
from tether.session import SessionStore, SessionWriter

if TYPE_CHECKING:
    pass


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


def run_command(opts: RunOptions) -> int:
    """Run `tether run` with `opts`; returns the exit code (module docstring). What stdout
    shows is the config's `run.output_format` (`--output-format` sets it; `tether.cli.formats`):
    with `json` or `text` the result is printed once the run has ended."""
    fmt = opts.output_format
    if fmt is not None and fmt not in OUTPUT_FORMATS:
        err(f"--output-format {fmt!r}: give one of {', '.join(OUTPUT_FORMATS)}")
        return EXIT_USAGE
    sink = OutputSink(fmt)
    code = _run_command(opts, sink)
    sink.finish(code)
    return code


def _run_command(opts: RunOptions, sink: OutputSink) -> int:
    if opts.continue_last:
        if opts.resume or opts.session_id or opts.no_session:
            err("--continue cannot be combined with --resume, --session or --no-session")
            return EXIT_USAGE
        last = latest_session(opts.cwd.resolve())
        if last is None:
            err(f"no session to continue in {opts.cwd.resolve()}")
            return EXIT_USAGE
        opts = replace(opts, resume=last, continue_last=False)
    if opts.print_system:
        return print_system(opts)
    if opts.session_id and opts.resume:
        err("--session and --resume cannot be combined")
        return EXIT_USAGE
    if opts.no_session and (opts.session_id or opts.resume):
        err("--no-session cannot be combined with --session or --resume")
        return EXIT_USAGE
    try:
        setup.check_flags(opts.model, opts.base_url)
    except ConfigError as exc:
        err(str(exc))
        return EXIT_USAGE
    prompt = opts.prompt
    if prompt is not None:
        prompt = clean_text(prompt)
        if not prompt.strip():
            err("empty prompt")
            return EXIT_USAGE
    new_id = default_id_factory()
    stdin = StdinInput(None, ())
    if prompt is None and not sys.stdin.isatty():
        try:
            stdin = parse_stdin(clean_text(sys.stdin.read()), new_id)
        except MalformedInputError as exc:
            err(f"malformed input: {exc}")
            return EXIT_MALFORMED
    if prompt is None and not stdin.messages and not opts.resume:
        err("no prompt: give one as an argument or on stdin")
        return EXIT_USAGE
    root = opts.cwd.resolve()
    if not root.is_dir():
        err(f"--cwd {opts.cwd} is not a folder")
        return EXIT_USAGE
    if opts.images and prompt is None:
        err("--image needs the prompt as an argument")
        return EXIT_USAGE
    try:
        images = attached_images(prompt, opts.images, root)
    except ConfigError as exc:
        sink.error = f"usage: {exc}"
        err(str(exc))
        return EXIT_USAGE
    try:
        agent, writer, prompt = _build(opts, root, stdin, new_id, prompt, sink, images)
    except AuthError as exc:
        sink.error = f"auth: {exc}"
        err(str(exc))
        return EXIT_AUTH
    except MalformedInputError as exc:
        sink.error = f"malformed: {exc}"
        err(f"malformed input: {exc}")
        return EXIT_MALFORMED
    except (ConfigError, SessionError) as exc:
        sink.error = f"usage: {exc}"
        err(str(exc))
        return EXIT_USAGE
    start = len(agent.history)
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    try:
        for turn in stdin.messages:
            agent.append(turn)
        from tether.agent.attachments import prompt_content

        content = prompt_content(prompt, images) if prompt is not None else None
        return asyncio.run(_drive(agent, content))
    except asyncio.CancelledError:  # a signal landed as the run was returning
        err("cancelled")
        return EXIT_CANCELLED
    except ConfigError as exc:
        err(str(exc))
        return EXIT_USAGE
    finally:
        ran = agent.history[start:]
        sink.cost_usd = turns_cost_usd(ran)
        err(f"usage: {turns_usage_line(ran)}")
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


def check_input_fits(prompt: str | None, stdin: StdinInput, window_tokens: int) -> None:
    """Refuse new input that cannot fit the model's window before anything is sent or written
    (the rule: `tether.agent.input_fit.input_overflow`, which the TUI uses too).

    Raises:
        MalformedInputError: the prompt and stdin messages are estimated above the window
            (exit 5); the message names both figures and the way out (a file the agent reads).
    """
    from tether.agent.input_fit import input_overflow

    why = input_overflow(prompt, window_tokens, messages=stdin.messages, system=stdin.system)
    if why is not None:
        raise MalformedInputError(why)


def latest_session(root: Path) -> str | None:
    """The id of the most recently changed session started in `root` (subagents' sessions
    left out), or None."""
    rows = [
        i
        for i in SessionStore().list()
        if i.error is None and i.caller is None and i.cwd and Path(i.cwd) == root
    ]
    return max(rows, key=lambda i: i.modified_ms).id if rows else None


def print_system(opts: RunOptions) -> int:
    """`--print-system`: the system prompt the run would send (a resumed session's stored
    one), on stdout; nothing is sent or written."""
    root = opts.cwd.resolve()
    if not root.is_dir():
        err(f"--cwd {opts.cwd} is not a folder")
        return EXIT_USAGE
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
        err(str(exc))
        return EXIT_AUTH
    except (ConfigError, SessionError) as exc:
        err(str(exc))
        return EXIT_USAGE
    from tether.tokens import text_tokens

    text = agent.system or ""
    print(text)
    err(f"system prompt: {len(text)} characters, ~{text_tokens(text)} tokens (estimated)")
    return EXIT_OK


def attached_images(prompt: str | None, files: Sequence[Path], root: Path) -> list[ImageBlock]:
    """The images of `--image FILE` (in order), then those a prompt mentions as `@shot.png`
    (`tether.agent.attachments`), paths relative to `root`.

    Raises:
        ConfigError: a file is missing or not an image (one line naming it).
    """
    from tether.agent.attachments import mentioned_images, read_image

    names: list[Path | str] = [*files, *(mentioned_images(prompt) if prompt else ())]
    return [read_image(name, root=root) for name in names]


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
    if opts.append_system is not None:
        overrides["run.append_system"] = opts.append_system
    return overrides


def _build(
    opts: RunOptions,
    root: Path,
    stdin: StdinInput,
    new_id: Callable[[], str],
    prompt: str | None,
    sink: OutputSink | None = None,
    images: Sequence[ImageBlock] = (),
) -> tuple[Agent, SessionWriter | None, str | None]:
    """Flags → config overrides → `Agent.from_settings` (the settings files, tool folders and
    credentials of `root`; its MCP servers start with the run); a `/name args` prompt
    expanded (its `model` taken unless `--model` pins one). Raises ConfigError / AuthError /
    SessionError before anything is written (the writer is opened last)."""
    overrides = _overrides(opts)
    if detect_sandbox() is None:
        err(f"warning: {NO_SANDBOX_WARNING}")
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
        session = AgentSession.new(store, cwd=root, session_id=opts.session_id)
    agent = Agent.from_settings(
        root,
        model=opts.model,
        base_url=opts.base_url,
        overrides=overrides,
        system=opts.system or stdin.system,
        host=Host(on_event=sink, note=err),
        session=session,
        runtime=Runtime(new_id=new_id),
    )
    if prompt is not None:
        prompt = _command_prompt(agent, prompt, pinned=opts.model is not None)
    sink.use(agent.config.run.output_format)
    check_input_fits(prompt, stdin, agent.limits.context_window)
    agent.set_plan_mode(opts.plan)
    from tether.agent.attachments import image_refusal

    refusal = image_refusal(agent.provider, len(images))
    if refusal is not None:
        raise ConfigError(refusal)
    session.open()  # last: a taken id is reported before anything runs
    return agent, session.writer, prompt


def _command_prompt(agent: Agent, prompt: str, *, pinned: bool) -> str:
    """`prompt`, or the prompt of the `/name args` command it is (switching to the command's
    `model` unless the model is `pinned`).

    Raises:
        ConfigError: an unknown command (nothing is sent) or a model that does not resolve.
    """
    from tether.agent.assembly.prompting import command_prompt

    text, command = command_prompt(agent.root, agent.session.context, prompt, warn=err)
    if command is not None and command.model and not pinned:
        agent.switch_model(command.model)
    return text


async def _drive(agent: Agent, prompt: str | list[ContentBlock] | None) -> int:
    """Run the agent; SIGINT/SIGTERM cancel it (the loop persists the partial turn first).
    MCP servers start first (their tools join the agent's registry) and stop at the end."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None

    def on_signal() -> None:
        cancel.note()  # exit 130 even when the cancel reaches a run that just finished
        task.cancel()

    for sig in SIGNALS:
        loop.add_signal_handler(sig, on_signal)
    try:
        await agent.start()
        result = await agent.run(prompt)
    except RunError as exc:
        err(str(exc))
        return exit_code_for(exc.kind)
    except asyncio.CancelledError:
        err("cancelled")
        return EXIT_CANCELLED
    finally:
        await agent.aclose()
        # From here to the end of `run_command` a signal is only recorded (`tether.cli.cancel`:
        # the process exits 130): an exception raised inside the closing event loop or the
        # session writer's close would end in a traceback or be lost.
        _set_handlers(dict.fromkeys(SIGNALS, _note_signal), loop)
    if result.stop_reason == "context_runaway":  # the runaway guard refused to go on
        err("stopped: context_overflow: the context ran away (see the error event); exit 4")
        return exit_code_for("context_overflow")
    if result.stop_reason == "prompt_denied":  # a user_prompt hook refused it: nothing sent
        err(f"stopped: a user_prompt hook refused the prompt; exit {EXIT_USAGE}")
        return EXIT_USAGE
    if result.stop_reason == "max_budget":  # the `warning` event `max_budget` says why
        budget = agent.parts.budget
        cap = f" {usd(budget.cap_usd)}" if budget is not None else ""
        err(f"stopped: the next request would pass --max-budget-usd{cap}; exit {EXIT_USAGE}")
        return EXIT_USAGE
    if agent.plan_mode and result.stop_reason in ("end_turn", "stop_sequence"):
        err("plan mode: nothing was changed; the plan is the `plan` event")
    if result.stop_reason == "max_turns":
        err(
            f"stopped: --max-turns reached ({result.turns} requests) before a final answer; "
            f"exit {EXIT_USAGE}"
        )
        return EXIT_USAGE  # the run did not finish its task
    return EXIT_OK


SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _note_signal(signum: int, frame: FrameType | None) -> None:
    """The handler while a run closes: record the signal; the process exits 130 at the end."""
    cancel.note()


Handler = Callable[[int, FrameType | None], Any] | int | None


def _set_handlers(
    handlers: dict[signal.Signals, Handler], loop: asyncio.AbstractEventLoop | None = None
) -> None:
    """Install `handlers` (after removing `loop`'s own), with the signals blocked meanwhile so
    none lands on the default action in between."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        for sig, handler in handlers.items():
            if loop is not None:
                loop.remove_signal_handler(sig)
            if handler is not None:
                signal.signal(sig, handler)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
