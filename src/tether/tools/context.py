"""What a running tool knows of its run, and what it hands back: plain data, no behaviour.

Owns: `ToolContext` (the working folder, environment, path policy, OS sandbox, limits, question
bridge and subagent spawner a call runs with), `ToolOutput` (a result with an explicit error
flag), `Wrap` (a subprocess argv hook), `LspHook` (what `write` / `edit` tell the language servers), `Spawner` (the `task` tool's subagent runner) and the
question protocol (`QuestionBridge` with its `QuestionSpec` / `OptionSpec` / `Answer` shapes).
Does not own: the `Tool` definition (`tether.tools.base`), what a sandboxed subprocess may touch
(`tether.sandbox.config.sandbox_config`), the `question` tool (`tether.tools.builtin.question`).

Shapes:
    ToolContext(root: Path, env: Mapping[str, str], session_dir: Path | None, policy, wrap,
                questions, sandbox: Sandbox | None, network: bool, limits, call_id, spawn,
                web: WebPolicy | None, shells: BackgroundShells | None,
                lsp: LspHook | None, states: ToolStates | None, tool_name: str | None)
    ctx.state -> ToolState (the running tool's durable values, `tether.tools.state`)
    ToolOutput(content: str | Sequence[TextBlock | ImageBlock], is_error, system, display,
               raw: bytes | None)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tether.errors import ToolError
from tether.messages import ImageBlock, TextBlock
from tether.tools.state import ToolState, ToolStates

SettingsT = TypeVar("SettingsT", bound=BaseModel)

if TYPE_CHECKING:
    from tether.sandbox.base import Sandbox
    from tether.sandbox.limits import ResourceLimits
    from tether.sandbox.policy import PathPolicy
    from tether.tools.exec.background import BackgroundShells
    from tether.tools.fetch import WebPolicy

Wrap = Callable[[list[str]], list[str]]
"""Rewrites a subprocess argv before it starts (e.g. an OS sandbox's `Sandbox.wrap`)."""

ResultContent = str | Sequence[TextBlock | ImageBlock]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result with an explicit error flag (return it instead of a bare str/list).

    Attributes:
        content: text, or text/image parts.
        is_error: True to mark the result as failed without raising.
        system: system notes for the model, appended after the turn's tool_results.
        display: a JSON-able value for the host only (never sent to the model nor stored).
        raw: the exact bytes the content's output stands for, when the tool has them (a
            command's stdout and stderr as written, without the tool's notes): the output
            gate saves these, not the text, when it saves the output, and the stub's size
            describes them (`tether.tools.exec.persist`). None: the text is the output. A
            path: a file holding those bytes (an output too large to hold in memory, spilled
            to the session's `tool-results/` folder); the gate moves it into place.
    """

    content: ResultContent
    is_error: bool = False
    system: str | Sequence[str] | None = None
    display: Any = None
    raw: bytes | Path | None = None


class LspHook(Protocol):
    """What `write` / `edit` tell the language servers (`tether.lsp.manager.LspManager`)."""

    async def before_change(self, path: Path) -> object:
        """Before `path` (a real path) changes: a baseline to hand to `after_change`."""
        ...

    async def after_change(self, path: Path, before: object) -> str | None:
        """After `path` changed: the diagnostics block for the result, or None."""
        ...

    def touch(self, path: Path) -> None:
        """`path` was read: start its server and open it in the background (returns at once)."""
        ...

    async def aclose(self) -> None:
        """Stop the servers."""
        ...


class Spawner(Protocol):
    """Runs a subagent to completion for a `task` call (`tether.agent.subagents.Subagents`)."""

    async def __call__(
        self,
        *,
        call_id: str,
        name: str,
        prompt: str,
        agent: str | None,
        tools: Sequence[str] | None,
        model: str | None,
    ) -> ToolOutput: ...


MAX_HEADER_CHARS = 16
MAX_LABEL_CHARS = 60


class OptionSpec(BaseModel):
    """One answer to choose."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    label: Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]
    description: str = ""
    preview: str | None = Field(
        default=None, description="Shown only while this option is highlighted (code, a plan)."
    )


class QuestionSpec(BaseModel):
    """One question."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    header: Annotated[
        str,
        Field(min_length=1, max_length=MAX_HEADER_CHARS, description="A short chip, e.g. 'Auth'."),
    ]
    question: Annotated[str, Field(min_length=1, description="The question, self-contained.")]
    options: Annotated[list[OptionSpec], Field(min_length=2, max_length=16)]
    multi_select: bool = Field(default=False, description="Allow choosing several options.")


@dataclass(frozen=True, slots=True)
class Answer:
    """The user's answer to one question: chosen `labels`, or free `text`, or `abandoned`
    (the user closed the prompt without answering)."""

    labels: tuple[str, ...] = ()
    text: str | None = None
    abandoned: bool = False

    def to_dict(self) -> dict[str, object]:
        """`{"labels": [...]}`, `{"text": "..."}` or `{"abandoned": true}`."""
        if self.abandoned:
            return {"abandoned": True}
        if self.text is not None:
            return {"text": self.text}
        return {"labels": list(self.labels)}


ABANDONED = Answer(abandoned=True)


class QuestionBridge(Protocol):
    """How a host puts questions to its user."""

    async def ask(self, questions: Sequence[QuestionSpec]) -> Sequence[Answer]:
        """Ask `questions` (1-4); return one `Answer` per question, in order (`ABANDONED` for
        each when the user dismissed the prompt). Raise to report that no answer can be had."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a running tool may know of its environment; injected into a parameter annotated
    `ToolContext` (that parameter is excluded from the schema).

    Attributes:
        root: the working folder, as a real path (symlinks resolved).
        env: the scrubbed environment for subprocesses (see `tether.tools.env.scrubbed_env`).
        session_dir: the session's artifact folder, or None when there is no session.
        policy: an optional deny-list for file paths (see `tether.sandbox.policy.PathPolicy`).
        wrap: rewrites the argv of a tool worker process before it starts (an OS sandbox hook);
            None is the identity.
        questions: how the `question` tool reaches the user, or None when headless.

        sandbox: the OS sandbox subprocesses run in (`tether.sandbox`), or None for none (the
            agent then offers only safe tools, see `tether.sandbox.policy`).
        network: whether sandboxed subprocesses may use the network.
        limits: process-count and file-size limits of tool subprocesses
            (`tether.sandbox.limits`); None: the defaults.
        call_id: the id of the tool call being run (set per call by the loop), or None.
        spawn: runs a subagent for the `task` tool (`tether.agent.subagents`; set by the
            agent), or None.
        web: what `web_fetch` may reach (`tether.tools.fetch.WebPolicy`, from `tools.web`);
            None: the defaults (private addresses refused).
        shells: the agent's background shells (`bash` with `run_in_background`,
            `shell_output`, `shell_kill`; `tether.tools.exec.background`), or None: none
            may be started.
        lsp: the language servers `write` / `edit` report to and take diagnostics from
            (`tether.lsp`), or None.
        states: the session's durable per-tool state (`tether.tools.state`; set by the
            agent), or None: none.
        tool_name: the name of the tool being run (set per call by `run_tool`), or None.
    """

    root: Path
    env: Mapping[str, str]
    session_dir: Path | None = None
    policy: PathPolicy | None = None
    wrap: Wrap | None = field(default=None, repr=False, compare=False)
    questions: QuestionBridge | None = field(default=None, repr=False, compare=False)

    sandbox: Sandbox | None = None
    network: bool = False
    limits: ResourceLimits | None = None
    call_id: str | None = None
    spawn: Spawner | None = field(default=None, repr=False, compare=False)
    web: WebPolicy | None = None
    shells: BackgroundShells | None = field(default=None, repr=False, compare=False)
    lsp: LspHook | None = field(default=None, repr=False, compare=False)
    max_timeout_s: float = 1200.0
    """The ceiling of a model-chosen time limit, seconds (`tools.max_timeout`): a tool's
    `timeout` argument and `bash`'s `timeout_s` are capped at it."""
    states: ToolStates | None = field(default=None, repr=False, compare=False)
    tool_name: str | None = None
    tool_settings: Mapping[str, BaseModel] = field(default_factory=dict[str, BaseModel], repr=False)
    """Each tool's own validated settings, by tool name (`ToolContext.settings`)."""

    @property
    def state(self) -> ToolState:
        """The running tool's own durable values (kept in the session, back on resume; 64 KiB
        of JSON a value): `ctx.state.get(key)`, `ctx.state.set(key, value)`.

        Raises:
            ToolError: there is no session state here (a tool run outside an agent, or a
                folder-scanned tool, which runs in a worker process).
        """
        if self.states is None or self.tool_name is None:
            raise ToolError("durable tool state is not available to this call")
        return self.states.for_tool(self.tool_name)

    def settings(self, model: type[SettingsT]) -> SettingsT:
        """The running tool's own settings (`@tool(settings=model)`: `tools.settings.<name>`
        in a settings file, validated when the agent was built), else `model`'s defaults."""
        found = self.tool_settings.get(self.tool_name or "")
        return found if isinstance(found, model) else model()

    @classmethod
    def create(
        cls,
        root: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        session_dir: Path | None = None,
        policy: PathPolicy | None = None,
        wrap: Wrap | None = None,
        questions: QuestionBridge | None = None,
        sandbox: Sandbox | None = None,
        network: bool = False,
        limits: ResourceLimits | None = None,
        shells: BackgroundShells | None = None,
    ) -> ToolContext:
        """A context with `root` resolved to its real path and, unless `env` is given, the
        current process environment scrubbed of secrets.

        Args:
            root: the working folder (must exist).
            env: the environment for subprocesses, used as given; None scrubs `os.environ`.
            session_dir: the session's artifact folder.
            policy: a deny-list for file paths.
            wrap: the worker argv hook (None: identity).
            questions: the question bridge (None: headless).

            sandbox: the OS sandbox for subprocesses, or None.
            network: whether sandboxed subprocesses may use the network.
            limits: process-count and file-size limits (None: the defaults).
            shells: the background shells (None: `run_in_background` is refused).

        Raises:
            NotADirectoryError: `root` is not an existing directory.
        """
        from tether.tools.env import scrubbed_env

        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise NotADirectoryError(f"working folder is not a directory: {real}")
        return cls(
            root=real,
            env=scrubbed_env() if env is None else dict(env),
            session_dir=session_dir,
            policy=policy,
            wrap=wrap,
            questions=questions,
            sandbox=sandbox,
            network=network,
            limits=limits,
            shells=shells,
        )
