"""Tool definition: a Python function (sync or async) with type hints becomes a `Tool`.

Owns: `Tool`, the `@tool` decorator, `ToolContext` (what a tool may know of its run), `ToolOutput`
(a result with an explicit error flag) and `ToolError` (a fault a tool reports in its own words).
The arguments' JSON schema is built with pydantic from the signature; parameter descriptions come
from the docstring's Google-style `Args:` section (parsed by griffe).
Does not own: running a call (`tether.tools.run`), the registry (`tether.tools.registry`), path
containment (`tether.tools.paths`) or the built-in tools (`tether.tools.builtins`).

Shapes:
    Tool(name, description, parameters: JSON schema dict, fn, safe, timeout_s, inline,
         on_timeout, timeout_param, source)
    ToolContext(root: Path, env: Mapping[str, str], session_dir: Path | None, policy, wrap,
                questions, sandbox: Sandbox | None, network: bool)

Return shapes a tool may use (converted by `tether.tools.run`): a str; a list of
TextBlock/ImageBlock parts; a `ToolOutput`; None; or an envelope dict whose keys are all among
`result`, `system`, `display` and which has `result` — `system` (str or list of str) becomes
system notes appended to the results turn after all tool_results, `display` goes to the host
only (an event field), never to the model nor into the stored tool_result.

The timeout parameter: a parameter named `timeout` (seconds, with a default) is offered to the
model, read by the runner as the call's time limit (capped at `MAX_CALL_TIMEOUT_S`) and stripped
before the function is called.
"""

from __future__ import annotations

import inspect
import os
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, overload

from griffe import (
    Docstring,
    DocstringElement,
    DocstringSection,
    DocstringSectionAdmonition,
    DocstringSectionParameters,
    DocstringSectionText,
)
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema

from tether.errors import TetherError
from tether.messages import ImageBlock, TextBlock
from tether.providers.base import ToolSpec

if TYPE_CHECKING:
    from tether.tools.limits import ResourceLimits
    from tether.tools.paths import PathPolicy
    from tether.tools.question import QuestionBridge
    from tether.tools.sandbox import Sandbox, SandboxConfig

TIMEOUT_PARAM = "timeout"
"""The name of the harness-read time-limit parameter (seconds)."""
MAX_CALL_TIMEOUT_S = 1200.0
"""The cap on a model-chosen `timeout` argument (20 min)."""

Wrap = Callable[[list[str]], list[str]]
"""Rewrites a subprocess argv before it starts (e.g. an OS sandbox's `Sandbox.wrap`)."""


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


class ToolError(TetherError):
    """A tool fault reported to the model as-is (no `ExcType:` prefix), as an is_error result."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a running tool may know of its environment; injected into a parameter annotated
    `ToolContext` (that parameter is excluded from the schema).

    Attributes:
        root: the working folder, as a real path (symlinks resolved).
        env: the scrubbed environment for subprocesses (see `tether.tools.env.scrubbed_env`).
        session_dir: the session's artifact folder, or None when there is no session.
        policy: an optional deny-list for file paths (see `tether.tools.paths.PathPolicy`).
        wrap: rewrites the argv of a tool worker process before it starts (an OS sandbox hook);
            None is the identity.
        questions: how the `question` tool reaches the user, or None when headless.

        sandbox: the OS sandbox subprocesses run in (`tether.tools.sandbox`), or None for
            none (the agent then offers only safe tools, see `tether.tools.policy`).
        network: whether sandboxed subprocesses may use the network.
        limits: process-count and file-size limits of tool subprocesses
            (`tether.tools.limits`); None: the defaults.
        call_id: the id of the tool call being run (set per call by the loop), or None.
        spawn: runs a subagent for the `task` tool (`tether.agent.subagents`; set by the
            agent), or None.
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

    def sandbox_config(self, readable: Sequence[Path] = ()) -> SandboxConfig:
        """What a subprocess of this context may touch (`tether.tools.sandbox.SandboxConfig`):
        writes beneath `root` (or only the policy's `write_paths`), `.git`, `.tether` and the
        policy's protected folders read-only, tether's own folders hidden, a PID namespace,
        network per `network`, `readable` folders kept visible read-only."""
        from tether.tools.sandbox import SandboxConfig

        policy = self.policy
        protected = () if policy is None else tuple(Path(p) for p in policy.protected)
        write_paths = None
        if policy is not None and policy.write_paths is not None:
            from tether.tools.paths import expand_write_paths

            write_paths = expand_write_paths(self.root, policy.write_paths)
        if policy is not None and policy.allow_protected_writes:
            protected = ()
        return SandboxConfig(
            root=self.root,
            network=self.network,
            extra_readable=tuple(readable),
            isolate_pids=True,
            write_paths=write_paths,
            protected=protected,
            writable_protected=policy is not None and policy.allow_protected_writes,
        )

    def wrap_argv(self, argv: list[str], readable: Sequence[Path] = ()) -> list[str]:
        """`argv` through the `wrap` hook; without one, through the OS sandbox (see
        `sandbox_config`); unchanged when there is neither."""
        if self.wrap is not None:
            return self.wrap(list(argv))
        if self.sandbox is not None:
            return self.sandbox.wrap(list(argv), self.sandbox_config(readable))
        return list(argv)

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
        )


ResultContent = str | Sequence[TextBlock | ImageBlock]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result with an explicit error flag (return it instead of a bare str/list).

    Attributes:
        content: text, or text/image parts.
        is_error: True to mark the result as failed without raising.
        system: system notes for the model, appended after the turn's tool_results.
        display: a JSON-able value for the host only (never sent to the model nor stored).
    """

    content: ResultContent
    is_error: bool = False
    system: str | Sequence[str] | None = None
    display: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedOut:
    """What an `on_timeout` callback is told about the call that ran out of time.

    Attributes:
        tool: the tool name.
        arguments: the call's validated arguments (the context and `timeout` excluded).
        ctx: the call's context.
        limit_s: the limit that expired (seconds).
    """

    tool: str
    arguments: Mapping[str, Any]
    ctx: ToolContext | None
    limit_s: float


OnTimeout = Callable[[TimedOut], Any]
"""Called once when a call times out (sync or async); it has `ON_TIMEOUT_GRACE_S` to clean up.
It may return a final result (any tool return shape) or None."""


class _NoTitles(GenerateJsonSchema):
    """Schema generator that omits the per-field `title` keys (tokens sent every turn)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description}), parsed by
    griffe (as pydantic-ai does). The description is the docstring without its `Args:` section:
    the text (hard-wrapped paragraphs joined) and the other sections (`Returns:`, `Note:`, ...)
    rendered back as `Title:` plus indented items. A section needs a blank line before it.
    """
    if not doc:
        return "", {}
    sections = Docstring(inspect.cleandoc(doc), lineno=1).parse("google", warnings=False)
    kept: list[str] = []
    params: dict[str, str] = {}
    for section in sections:
        if isinstance(section, DocstringSectionText):
            kept.append(_unwrap(section.value.splitlines()))
        elif isinstance(section, DocstringSectionParameters):
            for p in section.value:
                params[p.name] = " ".join(p.description.split())
        elif isinstance(section, DocstringSectionAdmonition):
            body = _unwrap(section.value.description.splitlines())
            kept.append(f"{section.title or 'Note'}:\n" + _indent(body))
        else:
            kept.append(_render_section(section))
    return "\n\n".join(k for k in kept if k).strip(), params


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())


def _render_section(section: DocstringSection) -> str:
    """A non-parameter section as `Title:` and indented `name: description` items."""
    title = section.title or section.kind.value.capitalize()
    value: object = section.value
    lines: list[str] = []
    items: list[object] = list(cast("list[object]", value)) if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, DocstringElement):
            name = getattr(item, "name", "") or str(item.annotation or "")
            desc = " ".join(item.description.split())
            lines.append(f"{name}: {desc}" if name else desc)
        elif isinstance(item, tuple):  # examples: (kind, text)
            lines.append(str(cast("tuple[object, ...]", item)[-1]))
        else:
            lines.append(str(item))
    return f"{title}:\n" + _indent("\n".join(lines))


_BLOCK_START = re.compile(r"^(\s|[-*+>|]|\d+[.)]\s|```)")


def _unwrap(lines: list[str]) -> str:
    """Join hard-wrapped lines of a paragraph with spaces; blank lines, list items, indented
    and fenced lines keep their breaks."""
    out: list[str] = []
    for line in lines:
        if (
            out
            and line
            and out[-1]
            and not _BLOCK_START.match(line)
            and not _BLOCK_START.match(out[-1])
        ):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool the model may call.

    Build one with `tool(fn)` / `@tool`; direct construction is for hand-written schemas (then
    `args_model` may be None and the arguments are passed to `fn` unvalidated, as keywords).

    Attributes:
        name: the name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`).
        description: what it does, for the model.
        parameters: the JSON schema of its arguments (an object schema, no `$schema` key).
        fn: the function; sync or async. Returns str, a list of TextBlock/ImageBlock parts, a
            `ToolOutput`, or None (anything else is rendered with `str`).
        safe: True when the tool only reads (may run without confirmation, in parallel).
        timeout_s: its own time limit in seconds, or None for the runner's default.
        inline: for a sync fn, run it on the event loop instead of a worker thread (cheaper;
            only for fast, non-blocking functions: an inline tool cannot be timed out).
        args_model: the pydantic model validating the arguments, or None.
        context_param: the name of the parameter receiving the `ToolContext`, or None.
        is_async: True when `fn` is a coroutine function.
        on_timeout: called when a call times out (see `OnTimeout`), or None.
        timeout_param: the name of the harness-read time-limit parameter (`timeout`), or None.
        source: the tool file for a folder-scanned tool (it runs in a worker process), or None.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] = field(repr=False)
    safe: bool = False
    timeout_s: float | None = None
    inline: bool = False
    args_model: type[BaseModel] | None = field(default=None, repr=False, compare=False)
    context_param: str | None = field(default=None, repr=False)
    is_async: bool = field(default=False, repr=False)
    on_timeout: OnTimeout | None = field(default=None, repr=False, compare=False)
    timeout_param: str | None = field(default=None, repr=False)
    source: Path | None = None
    _spec: ToolSpec | None = field(default=None, init=False, repr=False, compare=False)

    def spec(self) -> ToolSpec:
        """The tool as offered to the model (computed once)."""
        if self._spec is None:
            spec = ToolSpec(
                name=self.name, description=self.description, parameters=self.parameters
            )
            object.__setattr__(self, "_spec", spec)
            return spec
        return self._spec

    def bind(self, arguments: Mapping[str, Any], ctx: ToolContext | None = None) -> dict[str, Any]:
        """Validate `arguments` and return the keyword arguments for `fn` (context injected).

        Raises:
            pydantic.ValidationError: the arguments do not match the schema.
        """
        if self.args_model is None:
            kwargs = dict(arguments)
        else:
            kwargs = self.args_model.model_validate(arguments).__dict__.copy()
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return kwargs

    def split_timeout(self, kwargs: dict[str, Any]) -> float | None:
        """Remove the `timeout` argument from bound `kwargs` (in place) and return it (s)."""
        if self.timeout_param is None:
            return None
        value = kwargs.pop(self.timeout_param, None)
        return None if value is None else float(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, no timeout)."""
        return self.fn(*args, **kwargs)


_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _build(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    safe: bool,
    timeout_s: float | None,
    inline: bool,
    on_timeout: OnTimeout | None = None,
) -> Tool:
    tool_name = name or getattr(fn, "__name__", "")
    if not _NAME_RE.match(tool_name):
        raise ValueError(f"invalid tool name {tool_name!r}: use 1-64 of [a-zA-Z0-9_-]")
    doc_text, arg_docs = parse_docstring(inspect.getdoc(fn))
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    timeout_param: str | None = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"tool {tool_name!r}: *args/**kwargs are not supported ({pname})")
        if param.kind is param.POSITIONAL_ONLY:
            raise ValueError(f"tool {tool_name!r}: positional-only parameter {pname!r}")
        annotation = hints.get(pname, Any)
        if annotation is ToolContext:
            context_param = pname
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        if pname == TIMEOUT_PARAM:
            if default is ...:
                raise ValueError(
                    f"tool {tool_name!r}: the `timeout` parameter needs a default (the runner "
                    "strips it before calling the function)"
                )
            timeout_param = pname
            arg_docs.setdefault(pname, f"time limit in seconds (at most {MAX_CALL_TIMEOUT_S:g})")
        fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
    model = create_model(
        f"{tool_name}_args",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    schema = model.model_json_schema(schema_generator=_NoTitles)
    schema.pop("title", None)
    schema.pop("$schema", None)
    schema.setdefault("properties", {})
    return Tool(
        name=tool_name,
        description=description if description is not None else (doc_text or tool_name),
        parameters=schema,
        fn=fn,
        safe=safe,
        timeout_s=timeout_s,
        inline=inline,
        args_model=model,
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(fn),
        on_timeout=on_timeout,
        timeout_param=timeout_param,
    )


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safe: bool = False,
    timeout_s: float | None = None,
    inline: bool = False,
    on_timeout: OnTimeout | None = None,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safe: bool = False,
    timeout_s: float | None = None,
    inline: bool = False,
    on_timeout: OnTimeout | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safe: bool = False,
    timeout_s: float | None = None,
    inline: bool = False,
    on_timeout: OnTimeout | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a `Tool` from a typed function; usable as `@tool`, `@tool(safe=True)` or `tool(fn)`.

    Args:
        fn: the function (sync or async). Every parameter needs a pydantic-compatible type hint
            (missing hints mean `Any`); a parameter annotated `ToolContext` is injected.
        name: the tool name; defaults to the function name.
        description: the description; defaults to the docstring without its `Args:` section.
        safe: True when the tool only reads.
        timeout_s: its own time limit in seconds (None: the runner's default).
        inline: run a sync fn on the event loop rather than in a worker thread.
        on_timeout: called once (with a `TimedOut`) when a call times out; it may clean up and
            return a final result within `ON_TIMEOUT_GRACE_S` (see `tether.tools.run`).

    Returns:
        The Tool, or a decorator producing it when `fn` is omitted.

    Raises:
        ValueError: an invalid name or an unsupported signature (*args, **kwargs, positional-only,
            a `timeout` parameter without a default).
        pydantic.errors.PydanticSchemaGenerationError: a parameter type pydantic cannot handle.
    """

    def decorate(f: Callable[..., Any]) -> Tool:
        return _build(
            f,
            name=name,
            description=description,
            safe=safe,
            timeout_s=timeout_s,
            inline=inline,
            on_timeout=on_timeout,
        )

    if fn is not None:
        return decorate(fn)

    return decorate
