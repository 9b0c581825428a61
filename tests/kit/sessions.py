"""Helpers shared by the session tests: turn builders and raw-line utilities."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from tether.messages import (
    Provenance,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
    turn_to_dict,
)


def user(turn_id: str, text: str = "hello") -> Turn:
    """A user turn with one text block."""
    return text_turn(turn_id, "user", text)


def assistant(turn_id: str, text: str = "ok") -> Turn:
    """An assistant turn with one text block."""
    return text_turn(turn_id, "assistant", text)


def rich_turn(turn_id: str, text_bytes: int = 400) -> Turn:
    """An assistant turn with thinking, text (multi-byte, U+2028, newlines) and a tool call."""
    text = ("héllo\u2028wörld\n✓ " * (text_bytes // 20 + 1))[: max(text_bytes // 2, 1)]
    return Turn(
        id=turn_id,
        role="assistant",
        content=(
            ThinkingBlock(text="think", signature="sig==", producer="anthropic"),
            TextBlock(text=text),
            ToolCallBlock(id=f"call_{turn_id}", name="read_file", arguments={"path": "a.py"}),
        ),
        usage=Usage(input_tokens=10, output_tokens=5),
        provenance=Provenance(provider="anthropic", api="anthropic", model="m"),
        stop_reason="tool_use",
    )


def results_turn(turn_id: str, call_id: str) -> Turn:
    """A user turn carrying one tool_result."""
    return Turn(id=turn_id, role="user", content=(tool_result(call_id, "file text"),))


def header_line(session_id: str = "s", cwd: str = "/w") -> bytes:
    """A valid session header line, with its newline."""
    rec = {"type": "session", "version": 1, "id": session_id, "created_ms": 1, "cwd": cwd}
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def turn_line(turn: Turn, parent_id: str | None, ts_ms: int = 1) -> bytes:
    """A valid turn entry line, with its newline."""
    rec = {
        "type": "turn",
        "id": turn.id,
        "parent_id": parent_id,
        "ts_ms": ts_ms,
        "turn": turn_to_dict(turn),
    }
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def neutral_to_tether(line: str) -> bytes:
    """Convert one line of the cases' neutral format to a tether entry line (no newline).

    `{"type":"message","id":…,"parent":…,"role":…,"text":…}` becomes a turn entry; anything else
    (damaged lines, other record types) is kept verbatim.
    """
    try:
        obj: object = json.loads(line)
    except ValueError:
        return line.encode()
    if not isinstance(obj, dict):
        return line.encode()
    rec = cast(dict[str, Any], obj)
    if rec.get("type") != "message":
        return line.encode()
    turn = text_turn(rec["id"], rec["role"], rec["text"])
    return turn_line(turn, rec.get("parent"))[:-1]


def entries(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a session file's well-formed lines after the header."""
    out: list[dict[str, Any]] = []
    for raw in path.read_bytes().split(b"\n")[1:]:
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue
    return out
