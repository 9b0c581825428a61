"""Other agents' stored sessions (transcripts) as tether turns, for `tether replay`.

Owns: `import_transcript` (a file → `ImportedTranscript`: its format and its turns, in order)
and one reader per format: Claude Code JSONL (one message per line, sidechains included), Codex
rollout JSONL (`response_item` messages, function calls and their outputs), mini-swe-agent
`.traj.json` (an OpenAI-style message list), OpenHands event lists (actions with
`tool_call_metadata` and their observations), SWE-agent `.traj` (`history`, with or without
function calling).
Does not own: tether's own session files (`tether.session.SessionStore`), the wire view built
from the turns (`tether.wire`): the turns are kept as stored, however messy (unanswered
calls, adjacent same-role turns); the wire view repairs them.

Errors: `SessionError` for a file that cannot be read or whose format is not recognized; a
line or entry of an unexpected shape is skipped, not fatal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tether.errors import SessionError
from tether.messages import (
    ContentBlock,
    Provenance,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    tool_result,
)

TranscriptFormat = Literal["claude-code", "codex", "mini-swe-agent", "openhands", "swe-agent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedTranscript:
    """A foreign session as tether turns.

    Attributes:
        format: which agent wrote it.
        turns: the turns in file order (ids `<format>-<n>` unless the file has its own).
    """

    format: TranscriptFormat
    turns: tuple[Turn, ...]


def _obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    """The JSON objects of a list (anything else: none)."""
    items: list[Any] = value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
    for item in items:
        if isinstance(item, dict):
            yield _obj(item)


def _text_of(content: Any) -> str:
    """Text of a string or a list of `{type: text|input_text|output_text, text}` parts."""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in _dicts(content))


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Call arguments from a JSON string or an object: (object, raw text when not an object)."""
    if isinstance(raw, dict):
        return _obj(raw), None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (_obj(value), None) if isinstance(value, dict) else ({}, text)


def _call(call_id: str, name: str, raw: Any) -> ToolCallBlock:
    args, bad = _arguments(raw)
    return ToolCallBlock(
        id=call_id,
        name=name or "unknown",
        arguments=args,
        raw_arguments=bad,
        invalid=None if bad is None else "the stored arguments are not a JSON object",
    )


def _turn(turn_id: str, role: Role, content: list[ContentBlock], prov: Provenance | None) -> Turn:
    return Turn(id=turn_id, role=role, content=tuple(content), provenance=prov)


# -- Claude Code ------------------------------------------------------------------------------


def _claude_block(b: dict[str, Any]) -> ContentBlock | None:
    kind = b.get("type")
    if kind == "text" and isinstance(b.get("text"), str):
        return TextBlock(text=b["text"])
    if kind == "thinking":
        return ThinkingBlock(
            text=str(b.get("thinking", "")), signature=b.get("signature"), producer="anthropic"
        )
    if kind == "tool_use":
        return _call(str(b.get("id", "")), str(b.get("name", "")), b.get("input") or {})
    if kind == "tool_result":
        return tool_result(
            str(b.get("tool_use_id", "")),
            _text_of(b.get("content")),
            is_error=bool(b.get("is_error")),
        )
    return None


def _claude_code(rows: list[dict[str, Any]]) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    for k, row in enumerate(rows):
        msg = _obj(row.get("message"))
        if row.get("type") not in ("user", "assistant") or not msg:
            continue
        role: Role = "assistant" if msg.get("role") == "assistant" else "user"
        raw: Any = msg.get("content")
        blocks: list[ContentBlock] = (
            [TextBlock(text=raw)]
            if isinstance(raw, str)
            else [b for b in map(_claude_block, _dicts(raw)) if b is not None]
        )
        prov = (
            Provenance(provider="anthropic", api="anthropic", model=str(msg.get("model", "")))
            if role == "assistant"
            else None
        )
        turns.append(_turn(str(row.get("uuid") or f"claude-code-{k}"), role, blocks, prov))
    return tuple(turns)


# -- Codex rollout ----------------------------------------------------------------------------

_CODEX = Provenance(provider="openai", api="openai-responses", model="")


def _codex(rows: list[dict[str, Any]]) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    for k, row in enumerate(rows):
        p = _obj(row.get("payload"))
        if row.get("type") != "response_item":
            continue
        kind = p.get("type")
        tid = f"codex-{k}"
        if kind == "message":
            role: Role = "assistant" if p.get("role") == "assistant" else "user"
            text = _text_of(p.get("content"))
            prov = _CODEX if role == "assistant" else None
            turns.append(_turn(tid, role, [TextBlock(text=text)], prov))
        elif kind == "function_call":
            call = _call(str(p.get("call_id", "")), str(p.get("name", "")), p.get("arguments"))
            turns.append(_turn(tid, "assistant", [call], _CODEX))
        elif kind == "function_call_output":
            out: Any = p.get("output")
            text = out if isinstance(out, str) else _text_of(_obj(out).get("content", out))
            turns.append(_turn(tid, "user", [tool_result(str(p.get("call_id", "")), text)], None))
    return tuple(turns)


# -- OpenAI-style message lists (mini-swe-agent, SWE-agent) -----------------------------------


def _messages(items: list[dict[str, Any]], fmt: TranscriptFormat) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    for k, m in enumerate(items):
        role = m.get("role")
        tid = f"{fmt}-{k}"
        text = _text_of(m.get("content"))
        if role == "system":
            turns.append(_turn(tid, "system", [TextBlock(text=text)], None))
        elif role == "assistant":
            blocks: list[ContentBlock] = [TextBlock(text=text)] if text else []
            for c in _dicts(m.get("tool_calls")):
                fn = _obj(c.get("function"))
                blocks.append(
                    _call(str(c.get("id", "")), str(fn.get("name", "")), fn.get("arguments"))
                )
            turns.append(_turn(tid, "assistant", blocks, None))
        elif role == "tool":
            ids = [str(i) for i in m.get("tool_call_ids") or [m.get("tool_call_id", "")]]
            results: list[ContentBlock] = [tool_result(i, text) for i in ids]
            turns.append(_turn(tid, "user", results, None))
        elif role == "user":
            turns.append(_turn(tid, "user", [TextBlock(text=text)], None))
    return tuple(turns)


# -- OpenHands --------------------------------------------------------------------------------


def _openhands(events: list[dict[str, Any]]) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    seen_responses: set[str] = set()
    for k, ev in enumerate(events):
        tid = f"openhands-{ev.get('id', k)}"
        meta = _obj(ev.get("tool_call_metadata"))
        if "observation" in ev:
            if meta.get("tool_call_id"):
                block = tool_result(str(meta["tool_call_id"]), str(ev.get("content", "")))
                turns.append(_turn(tid, "user", [block], None))
            continue
        if "action" not in ev:
            continue
        if ev.get("source") == "user":
            turns.append(_turn(tid, "user", [TextBlock(text=str(ev.get("message", "")))], None))
            continue
        if not meta:
            if ev.get("action") == "message" and ev.get("message"):
                turns.append(_turn(tid, "assistant", [TextBlock(text=str(ev["message"]))], None))
            continue
        response = _obj(meta.get("model_response"))
        rid = str(response.get("id", tid))
        if rid in seen_responses:  # one model response, several actions: imported once
            continue
        seen_responses.add(rid)
        choices = list(_dicts(response.get("choices")))
        message = _obj(choices[0].get("message")) if choices else {}
        blocks: list[ContentBlock] = []
        text = _text_of(message.get("content"))
        if text:
            blocks.append(TextBlock(text=text))
        for c in _dicts(message.get("tool_calls")):
            fn = _obj(c.get("function"))
            blocks.append(_call(str(c.get("id", "")), str(fn.get("name", "")), fn.get("arguments")))
        prov = Provenance(
            provider="openhands", api="openai-chat", model=str(response.get("model", ""))
        )
        turns.append(_turn(tid, "assistant", blocks, prov))
    return tuple(turns)


# -- detection --------------------------------------------------------------------------------


def _jsonl(text: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a damaged line: skipped
        if isinstance(row, dict):
            rows.append(_obj(row))
    return rows


def parse_transcript(text: str) -> ImportedTranscript:
    """A transcript's text → its format and turns (see the module docstring).

    Raises:
        SessionError: the format is not one of the known ones.
    """
    stripped = text.lstrip()
    data: Any = None
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None  # JSONL
    if isinstance(data, dict) and isinstance(_obj(data).get("history"), list):
        history = list(_dicts(_obj(data)["history"]))
        return ImportedTranscript(format="swe-agent", turns=_messages(history, "swe-agent"))
    if isinstance(data, list):
        items = list(_dicts(data))
        if items and all("source" in it for it in items):
            return ImportedTranscript(format="openhands", turns=_openhands(items))
        if items and all("role" in it for it in items):
            return ImportedTranscript(format="mini-swe-agent", turns=_messages(items, "mini-swe-agent"))
    rows = _jsonl(text) if data is None or isinstance(data, dict) else []
    if any(r.get("type") == "response_item" for r in rows):
        return ImportedTranscript(format="codex", turns=_codex(rows))
    if any(r.get("type") in ("user", "assistant") and "message" in r for r in rows):
        return ImportedTranscript(format="claude-code", turns=_claude_code(rows))
    raise SessionError(
        "not a transcript tether can import (Claude Code or Codex JSONL, mini-swe-agent, "
        "OpenHands or SWE-agent JSON)"
    )


def import_transcript(path: Path | str) -> ImportedTranscript:
    """Read a transcript file (see `parse_transcript`).

    Raises:
        SessionError: the file cannot be read or is not a known transcript format.
    """
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise SessionError(f"cannot read {p}: {exc.strerror or exc}") from exc
    try:
        return parse_transcript(text)
    except SessionError as exc:
        raise SessionError(f"{p}: {exc}") from None

