"""The headless stdin grammar of `tether run`.

A whole JSON context first: if all of stdin parses as one JSON value, it is either
    {"system"?: str, "messages": [message, ...]}   or   [message, ...]   or   {"prompt": str}
    or one message {"role": ..., "content": ...} (the same as a one-line message stream).
Otherwise stdin is read line by line: a line that parses as a JSON object is one message; any
other line is user text (consecutive text lines join into one user message, so a pasted
multi-line prompt stays one message).

Malformed (exit 5), never sent as a prompt:
    * stdin that is not text: NUL bytes (a binary file) or bytes that are not UTF-8
      (`binary_why`), with or without a prompt argument;
    * stdin that starts as JSON and does not parse: `{` or `[` followed by the start of a JSON
      value (`[{"role":…` cut short, `{"prompt": "x"` with no brace). `[WIP] fix it` or
      `{name} is a placeholder` do not start as JSON and stay text;
    * stdin that is one JSON scalar (`"hello"`, `null`, `42`, `true`): not a context, and not
      a literal prompt either (send the text itself);
    * in a stream of JSON message lines, a line starting with `{"` that does not parse (a cut
      message).

message = {"role": "user" | "assistant" | "system", "content": str | [content block, ...]}
(content blocks in tether's own JSON form, see `tether.messages`).

With a prompt argument, stdin that is plain text (`plain_text`: user text lines only, no JSON
context or message line) is added after the prompt (`cat log | tether run "summarize"`, as
Claude Code's `-p`); other stdin is ignored, and said so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from tether.errors import MalformedInputError
from tether.messages import BLOCK_CODEC, ContentBlock, TextBlock, Turn


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
        parsed = False
        whole = None
    else:
        parsed = True
        if isinstance(whole, dict | list):
            return _context(cast(dict[str, Any] | list[Any], whole), new_id)
    if parsed:
        kind = "null" if whole is None else type(whole).__name__
        raise MalformedInputError(
            f"stdin is a JSON {kind}, not a JSON context or a prompt (send the text itself)"
        )
    streamed = _first_line_is_object(stripped)
    if _starts_as_json(stripped) and not streamed and not _prefix_parses(stripped):
        raise MalformedInputError("stdin starts as JSON but is not valid JSON (cut short?)")
    turns: list[Turn] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            turns.append(
                Turn(id=new_id(), role="user", content=(TextBlock(text="\n".join(pending)),))
            )
            pending.clear()

    for number, line in enumerate(text.splitlines(), 1):
        obj: Any = None
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                if streamed and line.lstrip().startswith('{"'):
                    raise MalformedInputError(
                        f"line {number} starts as a JSON message but is not valid JSON "
                        "(cut short?)"
                    ) from None
                obj = None
        if isinstance(obj, dict):
            flush()
            turns.append(_message(cast(dict[str, Any], obj), new_id))
        else:
            pending.append(line)
    flush()
    return StdinInput(None, tuple(turns))


def binary_why(text: str) -> str | None:
    """Why `text` (stdin, read with surrogate escapes) is no prompt: it holds NUL bytes (a
    binary file) or bytes that are not UTF-8; None for text."""
    if "\x00" in text:
        return "stdin holds NUL bytes (binary data, not text)"
    if any("\udc80" <= ch <= "\udcff" for ch in text):
        return "stdin is not UTF-8 text"
    return None


def plain_text(text: str) -> bool:
    """True when `text` is user text by the grammar: not empty, not a JSON value, not
    something that starts as JSON, and no line a JSON object (a message)."""
    stripped = text.strip()
    if not stripped or _starts_as_json(stripped):
        return False
    try:
        json.loads(stripped)
    except json.JSONDecodeError:
        pass
    else:
        return False
    for line in text.splitlines():
        if line.lstrip().startswith("{"):
            try:
                if isinstance(json.loads(line), dict):
                    return False
            except json.JSONDecodeError:
                continue
    return True


_VALUE_START = frozenset('{["-0123456789tfn')


def _starts_as_json(text: str) -> bool:
    """True when `text` opens a JSON array or object: `[` then the start of a value (or `]`),
    or `{` then `"` (or `}`)."""
    rest = text[1:].lstrip()
    if text[0] == "[":
        return not rest or rest[0] in _VALUE_START or rest[0] == "]"
    if text[0] == "{":
        return not rest or rest[0] in '"}'
    return False


def _prefix_parses(text: str) -> bool:
    """True when a whole JSON value opens `text` and text follows it (`[1] see the note`)."""
    try:
        json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return False
    return True


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
