"""The headless stdin grammar of `tether run`.

A whole JSON context first: if all of stdin parses as one JSON value, it is either
    {"system"?: str, "messages": [message, ...]}   or   [message, ...]   or   {"prompt": str}
    or one message {"role": ..., "content": ...} (the same as a one-line message stream).
Otherwise stdin is read line by line: a line that parses as a JSON object is one message; any
other line is user text (consecutive text lines join into one user message, so a pasted
multi-line prompt stays one message).

message = {"role": "user" | "assistant" | "system", "content": str | [content block, ...]}
(content blocks in tether's own JSON form, see `tether.messages`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from tether.errors import TetherError
from tether.messages import BLOCK_CODEC, ContentBlock, TextBlock, Turn


class MalformedInputError(TetherError, ValueError):
    """stdin does not follow the grammar (exit code 5)."""


@dataclass(frozen=True, slots=True)
class StdinInput:
    """Parsed stdin: an optional system prompt and the messages, in order."""

    system: str | None
    messages: tuple[Turn, ...]


def parse_stdin(text: str, new_id: Callable[[], str]) -> StdinInput:
    """Parse stdin per the module grammar.

    Raises:
        MalformedInputError: a JSON context or message of the wrong shape.
    """
    stripped = text.strip()
    if not stripped:
        return StdinInput(None, ())
    try:
        whole: Any = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    else:
        if isinstance(whole, dict | list):
            return _context(cast(dict[str, Any] | list[Any], whole), new_id)
    if whole is None and stripped[0] == "{" and not _first_line_is_object(stripped):
        raise MalformedInputError("stdin starts like a JSON context but is not valid JSON")
    turns: list[Turn] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            turns.append(
                Turn(id=new_id(), role="user", content=(TextBlock(text="\n".join(pending)),))
            )
            pending.clear()

    for line in text.splitlines():
        obj: Any = None
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
        if isinstance(obj, dict):
            flush()
            turns.append(_message(cast(dict[str, Any], obj), new_id))
        else:
            pending.append(line)
    flush()
    return StdinInput(None, tuple(turns))


def _first_line_is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text.splitlines()[0]), dict)
    except json.JSONDecodeError:
        return False


def _context(value: dict[str, Any] | list[Any], new_id: Callable[[], str]) -> StdinInput:
    if isinstance(value, list):
        return StdinInput(None, tuple(_message(_obj(m), new_id) for m in value))
    if "prompt" in value and "messages" not in value:
        prompt = value["prompt"]
        if not isinstance(prompt, str):
            raise MalformedInputError('"prompt" must be a string')
        turn = Turn(id=new_id(), role="user", content=(TextBlock(text=prompt),))
        return StdinInput(_system(value), (turn,))
    if "role" in value and "messages" not in value:  # one message, as on a line of its own
        return StdinInput(None, (_message(value, new_id),))
    messages = value.get("messages")
    if not isinstance(messages, list):
        raise MalformedInputError('a JSON context needs "messages": [...] (or "prompt": "...")')
    return StdinInput(
        _system(value),
        tuple(_message(_obj(m), new_id) for m in cast(list[Any], messages)),
    )


def _system(value: dict[str, Any]) -> str | None:
    system = value.get("system")
    if system is not None and not isinstance(system, str):
        raise MalformedInputError('"system" must be a string')
    return system


def _obj(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedInputError(f"a message must be a JSON object, got {type(value).__name__}")
    return cast(dict[str, Any], value)


def _message(obj: dict[str, Any], new_id: Callable[[], str]) -> Turn:
    role = obj.get("role", "user")
    if role not in ("user", "assistant", "system"):
        raise MalformedInputError(f"unknown role {role!r}: use user, assistant or system")
    content = obj.get("content", obj.get("text"))
    blocks: tuple[ContentBlock, ...]
    if isinstance(content, str):
        blocks = (TextBlock(text=content),)
    elif isinstance(content, list):
        try:
            blocks = tuple(BLOCK_CODEC.validate_python(b) for b in cast(list[Any], content))
        except ValidationError as exc:
            raise MalformedInputError(f"bad content block: {exc.errors()[0]['msg']}") from exc
    else:
        raise MalformedInputError('a message needs "content": a string or a list of blocks')
    return Turn(id=new_id(), role=role, content=blocks)
