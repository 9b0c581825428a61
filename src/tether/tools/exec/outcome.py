"""A tool call's outcome as plain data, and the rules that make one from whatever happened.

Owns: `Outcome` (parts, error flag, system notes, display value; JSON for the worker protocol),
the result conversion rules (`to_outcome`: a str → one text part; TextBlock/ImageBlock parts
kept; blank text dropped; an envelope `{"result": ..., "system"?: str | [str], "display"?: any}`
(no other keys) split into the result, system notes and a display value; anything else → JSON
text), and the outcomes of a fault (`exception_outcome`, `describe_exception`,
`format_validation_error`), of a timeout (`timed_out_outcome`, `call_on_timeout`) and of an error
text (`error_outcome`).
Does not own: running a call (`tether.tools.exec.run` in process, `tether.tools.exec.worker` in
a subprocess): both import this module.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from tether.errors import ToolError
from tether.messages import ImageBlock, ResultPart, TextBlock
from tether.tools.base import TimedOut, Tool
from tether.tools.context import ToolOutput

ENVELOPE_KEYS = frozenset({"result", "system", "display"})

Part = TextBlock | ImageBlock
PARTS_CODEC: TypeAdapter[tuple[ResultPart, ...]] = TypeAdapter(tuple[ResultPart, ...])


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A tool's converted return value, before it is tied to a call id (JSON-able: the worker
    process sends it as one line).

    Attributes:
        parts: the result's text/image parts (blank text dropped; may be empty).
        is_error: whether the result is a failure.
        system_notes: system notes for the model (appended after the turn's tool_results).
        display: a JSON-able value for the host only, or None.
        raw: the exact output bytes the parts stand for (`ToolOutput.raw`: bytes, or a file
            holding them), or None.
    """

    parts: tuple[Part, ...] = ()
    is_error: bool = False
    system_notes: tuple[str, ...] = ()
    display: Any = None
    raw: bytes | Path | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form (`from_json` reverses it; `raw` as base64)."""
        return {
            "parts": PARTS_CODEC.dump_python(self.parts, mode="json"),
            "is_error": self.is_error,
            "system_notes": list(self.system_notes),
            "display": self.display,
            "raw": None if self.raw is None else _raw_json(self.raw),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        """Rebuild an Outcome from `to_json` output.

        Raises:
            pydantic.ValidationError, KeyError, TypeError: malformed data.
        """
        notes = cast("list[object]", data.get("system_notes") or [])
        raw = data.get("raw")
        return cls(
            parts=PARTS_CODEC.validate_python(data["parts"]),
            is_error=bool(data.get("is_error", False)),
            system_notes=tuple(str(n) for n in notes),
            display=data.get("display"),
            raw=None if raw is None else _raw_from_json(raw),
        )


def _raw_json(raw: bytes | Path) -> str | dict[str, str]:
    """`raw` as JSON: bytes as base64, a file as `{"file": path}`."""
    if isinstance(raw, Path):
        return {"file": str(raw)}
    return base64.b64encode(raw).decode("ascii")


def _raw_from_json(raw: object) -> bytes | Path:
    if isinstance(raw, dict):
        return Path(str(cast("dict[str, object]", raw)["file"]))
    return base64.b64decode(str(raw))


def error_outcome(text: str) -> Outcome:
    """An is_error outcome holding one text part."""
    return Outcome(parts=(TextBlock(text=text or "error"),), is_error=True)


def format_validation_error(tool_name: str, err: ValidationError) -> str:
    """A compact, model-readable summary of a pydantic validation error."""
    lines = [f"invalid arguments for tool `{tool_name}`; the call was not run:"]
    for e in err.errors(include_url=False):
        loc = ".".join(str(p) for p in e["loc"]) or "(arguments)"
        lines.append(f"- {loc}: {e['msg']}")
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    """`value` as plain JSON data (pydantic's rules: models and dataclasses become objects,
    tuples and sets lists; any other non-JSON leaf becomes its `str`)."""
    return to_jsonable_python(value, fallback=str)


def _notes(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    items = cast("Sequence[object]", value) if isinstance(value, list | tuple) else [value]
    return tuple(str(v) for v in items if str(v).strip())


def _is_envelope(raw: object) -> bool:
    if not isinstance(raw, dict):
        return False
    keys = cast("dict[object, object]", raw).keys()
    return "result" in keys and keys <= ENVELOPE_KEYS


def to_outcome(raw: Any) -> Outcome:
    """Convert a tool's return value to an Outcome (see the module docstring for the shapes)."""
    is_error = False
    notes: tuple[str, ...] = ()
    display: Any = None
    exact: bytes | Path | None = None
    if _is_envelope(raw):
        env = cast("dict[str, Any]", raw)
        notes, display = _notes(env.get("system")), _jsonable(env.get("display"))
        raw = env["result"]
    if isinstance(raw, ToolOutput):
        is_error = raw.is_error
        notes += _notes(raw.system)
        if raw.display is not None:
            display = _jsonable(raw.display)
        exact = raw.raw
        raw = raw.content
    return Outcome(
        parts=_parts(raw), is_error=is_error, system_notes=notes, display=display, raw=exact
    )


def _parts(raw: Any) -> tuple[Part, ...]:
    """Convert a plain return value to parts; blank text parts are dropped."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (TextBlock(text=raw),) if raw.strip() else ()
    if isinstance(raw, TextBlock | ImageBlock):
        raw = (raw,)
    if isinstance(raw, list | tuple):
        items = cast("Sequence[object]", raw)
        blocks = [p for p in items if isinstance(p, TextBlock | ImageBlock)]
        if len(blocks) == len(items):
            return tuple(p for p in blocks if not (isinstance(p, TextBlock) and not p.text.strip()))
    try:
        text = json.dumps(cast(object, raw), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(cast(object, raw))
    return (TextBlock(text=text),) if text.strip() else ()


def describe_exception(e: BaseException) -> str:
    """`ExcType: message` (a `ToolError`'s message as-is)."""
    if isinstance(e, ToolError):
        return str(e) or type(e).__name__
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def exception_outcome(e: BaseException) -> Outcome:
    """The is_error outcome for an exception a tool raised (`ToolError` text as-is)."""
    return error_outcome(describe_exception(e))


def timed_out_outcome(name: str, limit_s: float, final: Outcome | None, note: str = "") -> Outcome:
    """The is_error outcome of a timed-out call; `final` is what `on_timeout` returned."""
    head = f"`{name}` timed out after {limit_s:g} s{note}"
    if final is None:
        return error_outcome(head)
    return Outcome(
        parts=(TextBlock(text=head), *final.parts),
        is_error=True,
        system_notes=final.system_notes,
        display=final.display,
    )


async def call_on_timeout(tool: Tool, info: TimedOut, grace_s: float) -> tuple[Outcome | None, str]:
    """Run `tool.on_timeout(info)` within `grace_s`; returns (its outcome or None, a note when it
    failed)."""
    hook = tool.on_timeout
    if hook is None:
        return None, ""
    try:
        async with asyncio.timeout(grace_s):
            if inspect.iscoroutinefunction(hook):
                raw = await hook(info)
            else:
                raw = await asyncio.to_thread(hook, info)
    except TimeoutError:
        return None, f" (its on_timeout cleanup did not finish within {grace_s:g} s)"
    except Exception as e:
        return None, f" (its on_timeout cleanup failed: {describe_exception(e)})"
    return (None if raw is None else to_outcome(raw)), ""
