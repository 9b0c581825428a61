"""Tool definition: a Python function (sync or async) with type hints becomes a `Tool`.

Owns: `Tool`, the `@tool` decorator, `TimedOut` (what an `on_timeout` callback is told) and the
time-limit constants. The arguments' JSON schema is built with pydantic from the signature;
parameter descriptions come from the docstring's Google-style `Args:` section (parsed by griffe,
see `tether.tools._schema`).
Does not own: the context a tool runs with and `ToolOutput` (`tether.tools.context`), running a
call (`tether.tools.exec.run`), the registry (`tether.tools.registry`), path containment
(`tether.sandbox.paths`) or the built-in tools (`tether.tools.builtin`). A tool reports a fault
in its own words by raising `tether.errors.ToolError`.

Shapes:
    Tool(name, description, parameters: JSON schema dict, fn, safe, timeout_s, inline,
         on_timeout, timeout_param, source)

Return shapes a tool may use (converted by `tether.tools.exec.outcome`): a str; a list of
TextBlock/ImageBlock parts; a `ToolOutput`; None; or an envelope dict whose keys are all among
`result`, `system`, `display` and which has `result` — `system` (str or list of str) becomes
system notes appended to the results turn after all tool_results, `display` goes to the host
only (an event field), never to the model nor into the stored tool_result.

The timeout parameter: a parameter named `timeout` (seconds, with a default) is offered to the
model, read by the runner as the call's time limit (capped at `ToolContext.max_timeout_s`, the
`tools.max_timeout` setting, 20 min by default) and stripped
before the function is called.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, create_model

from tether.providers.base import ToolSpec
from tether.tools._schema import NoTitles, parse_docstring
from tether.tools.context import ToolContext

DEFAULT_TIMEOUT_S = 120.0
"""A call's time limit when neither the tool nor the caller sets one (s)."""
TIMEOUT_PARAM = "timeout"
"""The name of the harness-read time-limit parameter (seconds)."""
MAX_CALL_TIMEOUT_S = 1200.0
"""The default cap on a model-chosen `timeout` argument (20 min; the `tools.max_timeout`
setting, `ToolContext.max_timeout_s`)."""
TIMES_ITSELF_MARGIN_S = 30.0
"""For a tool that times itself (`Tool.times_itself`): how long past the ceiling the runner
waits before it stops the call."""

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
        secret: kept out of the model's catalog and uncallable by the model (a call naming it
            is an unknown tool); the user calls it (`tether tool NAME`, `/tool NAME` in the TUI:
            `tether.tools.direct`).
        times_itself: the tool enforces its own time limit, at most `ToolContext.max_timeout_s`
            (`bash`'s `timeout_s`); the runner's limit is that ceiling plus
            `TIMES_ITSELF_MARGIN_S`, a backstop.
        settings: the pydantic model of the tool's own settings (`tools.settings.<name>` in a
            settings file, validated by it when the agent is built; the tool reads them with
            `ctx.settings(Model)`), or None: the tool contributes its settings' schema.
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
    secret: bool = False
    times_itself: bool = False
    settings: type[BaseModel] | None = field(default=None, repr=False, compare=False)
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

    @property
    def reads_context(self) -> bool:
        """Whether a call can see its `ToolContext`: the tool takes one (`context_param`), runs
        in a worker process (which gets it), or has an `on_timeout` callback (told it). For
        any other tool the runner need not make a per-call copy of the context."""
        return self.context_param is not None or self.source is not None or self.on_timeout is not None

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
    secret: bool = False,
    times_itself: bool = False,
    settings: type[BaseModel] | None = None,
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
            arg_docs.setdefault(pname, "time limit in seconds")
        fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
    model = create_model(
        f"{tool_name}_args",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    schema = model.model_json_schema(schema_generator=NoTitles)
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
        secret=secret,
        times_itself=times_itself,
        settings=settings,
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
    secret: bool = False,
    times_itself: bool = False,
    settings: type[BaseModel] | None = None,
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
    secret: bool = False,
    times_itself: bool = False,
    settings: type[BaseModel] | None = None,
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
    secret: bool = False,
    times_itself: bool = False,
    settings: type[BaseModel] | None = None,
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
            return a final result within `ON_TIMEOUT_GRACE_S` (see `tether.tools.exec.run`).
        secret: only the user may call it (`Tool.secret`).
        times_itself: it enforces its own time limit (`Tool.times_itself`).
        settings: the pydantic model of its own settings (`Tool.settings`).

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
            secret=secret,
            times_itself=times_itself,
            settings=settings,
        )

    if fn is not None:
        return decorate(fn)

    return decorate
