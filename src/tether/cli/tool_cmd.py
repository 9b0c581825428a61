"""`tether tool NAME --json ARGS` and `tether tool --list` (issue 39, audit row 10): the user
calls one tool directly, `secret` ones included, with the tools and tool context `tether run`
builds in that folder (settings, tool folders, sandbox, path policy, environment, MCP servers).

Exit codes: 0 the tool's result printed on stdout · 1 an unknown tool, arguments that are not a
JSON object or that the tool refuses, a tool error (its text on stderr), a `bash` command that
exited non-zero or was killed (its output on stdout, with the `(exit code N)` line), a
`bash` call with `run_in_background` (its shell would stop when `tether tool` exits) or a
settings problem. Only the setup notes about the tools are printed (not the context line or an
unknown window's note: no model is called). No model is called, so a model whose credentials are missing is no error
here: the tools are built around `NoModel`, which answers any request (a `task` subagent's)
with one auth error. The tools are every tool `tether run` offers a model in that folder: with
the embedded model as the settings' model (which is offered fewer), they are built around
`NoModel` too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from tether.cli.output import EXIT_OK, EXIT_USAGE, err
from tether.errors import AuthError, ConfigError, SessionError
from tether.messages import Target
from tether.providers.base import ModelRequest, StreamError, StreamEvent

if TYPE_CHECKING:
    from tether.agent.agent import Agent


class NoModel:
    """The provider of `tether tool` when the settings' model has no credentials: the user's
    direct call needs no model; a request (a `task` subagent's) is one auth error naming why."""

    name = "none"
    target: Target = "openai-chat"
    model = "none"

    def __init__(self, why: str) -> None:
        self.why = why

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        del request
        yield StreamError(kind="auth", message=self.why)


MODEL_NOTES = ("context: ", "tether does not know the context window of model ")
"""The starts of the setup notes that only concern the model's requests (the context line of
instruction files and skills, `prompting.context_report`; an unknown window,
`catalog.unknown_window_warning`): `tether tool` calls no model, so it does not print them."""


def tool_note(line: str) -> None:
    """A setup note of `tether tool`: on stderr unless it is about the model (`MODEL_NOTES`)."""
    if not line.startswith(MODEL_NOTES):
        err(line)


EMBEDDED_NO_TASK = (
    "tether tool runs no subagent on the embedded model: give --model provider/model to run `task`"
)


def tool_command(
    name: str | None,
    arguments: str | None,
    *,
    list_tools: bool,
    cwd: Path,
    model: str | None = None,
    base_url: str | None = None,
) -> int:
    """Run `tether tool`; returns the exit code (module docstring)."""
    from tether.agent.agent import Agent
    from tether.agent.host import Host
    from tether.agent.sessions import AgentSession
    from tether.tools.direct import parse_arguments

    if not list_tools and not name:
        err("name a tool (tether tool NAME --json ARGS), or list them: tether tool --list")
        return EXIT_USAGE
    args, why = parse_arguments(arguments)
    if args is None:
        err(f"--json: {why}")
        return EXIT_USAGE
    if name == "bash" and args.get("run_in_background"):
        err(
            "tether tool runs no background shell (it would stop when tether tool exits): "
            "drop run_in_background to run the command in the foreground"
        )
        return EXIT_USAGE
    root = cwd.resolve()
    if not root.is_dir():
        err(f"--cwd {cwd} is not a folder")
        return EXIT_USAGE
    try:
        try:
            agent = Agent.from_settings(
                root, model=model, base_url=base_url, host=Host(note=tool_note),
                session=AgentSession(),
            )
        except AuthError as exc:  # the tools need no model
            agent = Agent.from_settings(
                root, model=NoModel(str(exc)), host=Host(note=tool_note), session=AgentSession()
            )
        if model is None and agent.provider.name == "local":
            # the embedded model is offered fewer tools (`EMBEDDED_WITHHELD`, no `skill`); the
            # user's own calls are not the model's: every tool, as `tether run` on any other
            agent = Agent.from_settings(
                root, model=NoModel(EMBEDDED_NO_TASK), host=Host(), session=AgentSession()
            )
    except (ConfigError, SessionError) as exc:
        err(str(exc))
        return EXIT_USAGE
    return asyncio.run(_call(agent, name, args, list_tools=list_tools))


async def _call(
    agent: Agent, name: str | None, args: dict[str, object], *, list_tools: bool
) -> int:
    from tether.tools.builtin.bash import command_failed
    from tether.tools.direct import call_directly, tool_lines

    try:
        await agent.start()  # MCP servers: their tools too
        parts = agent.parts
        if list_tools:
            print("\n".join(tool_lines(parts.registry)))
            return EXIT_OK
        assert name is not None
        block = await call_directly(
            parts.registry,
            name,
            dict(args),
            parts.tool_context,
            timeout_s=parts.run.tool_timeout_s,
            redact=parts.redact,
            rules=parts.tool_calls.approval.rules,
        )
    finally:
        await agent.aclose()
    if block.is_error:
        err(block.text.strip().replace("\n", " ") or "the tool failed")
        return EXIT_USAGE
    text = block.text
    print(text if not text.endswith("\n") else text[:-1])
    if name == "bash" and command_failed(text):  # the output is printed; the exit code says it
        return EXIT_USAGE
    return EXIT_OK
