"""A stored session as Markdown or JSON lines, and what the HTML page shares with them.

Owns: `markdown`, `jsonl`, and the labels every format uses: the session's and each request's
usage and cost line, image and compaction labels, tool names by call id, image `data:` URIs.
Every text goes through the caller's `Redactor` (tool output's masking).
Does not own: choosing a format (`tether.session.export`), the HTML page
(`tether.session.export_html`), reading the session (`tether.session.store`).

Pure: a `LoadedSession` (its image bytes restored) in, text out.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    turn_to_dict,
)
from tether.providers.pricing import cost_usd, turns_cost_usd, turns_usage, usage_line
from tether.session.model import LoadedSession
from tether.wire.interrupts import is_cancelled_reply

CANCELLED_TEXT = "(the request was cancelled before any reply)"
"""What an export shows for a cancelled reply (an empty assistant turn, stop reason
`interrupted`), as the TUI's transcript shows `cancelled` there."""

Redactor = Callable[[str], str]
"""Masks secrets in one text (`tether.tools.env.redact_secrets` with known values)."""

_OPAQUE_KEYS = frozenset({"data", "signature", "encrypted_content"})
"""Fields of a turn's JSON that are bytes or provider tokens, not text (never redacted)."""


def session_usage_line(turns: tuple[Turn, ...]) -> str:
    """The session's summed usage and cost (`tether.providers.pricing.usage_line`)."""
    return usage_line(turns_usage(turns), turns_cost_usd(turns))


def turn_usage_line(turn: Turn) -> str | None:
    """One assistant turn's model, usage and cost, or None when it stored no usage."""
    if turn.usage is None:
        return None
    model = turn.provenance.model if turn.provenance else None
    cost = cost_usd(turn.usage, model) if model else None
    line = usage_line(turn.usage, cost)
    return f"{turn.provenance.provider}/{model} · {line}" if turn.provenance else line


def created_text(loaded: LoadedSession) -> str:
    """The session's creation time, UTC, to the second."""
    when = datetime.fromtimestamp(loaded.header.created_ms / 1000, tz=UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def image_label(block: ImageBlock) -> str:
    """`image/png, 12.3 KB` (the decoded size), plus where the session stores it."""
    size = len(block.data) * 3 // 4
    where = f", {block.file}" if block.file else ""
    return f"{block.media_type}, {size / 1024:.1f} KB{where}"


def compaction_label(block: CompactSummaryBlock) -> str:
    n = len(block.replaces_turn_ids)
    return f"Compaction {block.generation}: a summary replaces {n} earlier turn{'s' * (n != 1)}"


def tool_names(turns: tuple[Turn, ...]) -> dict[str, str]:
    """Tool call id -> tool name, for labelling results."""
    return {b.id: b.name for t in turns for b in t.content if isinstance(b, ToolCallBlock)}


def arguments_text(block: ToolCallBlock) -> str:
    """A call's arguments as indented JSON (the raw text when they did not parse)."""
    if block.invalid is not None and block.raw_arguments is not None:
        return block.raw_arguments
    return json.dumps(block.arguments, indent=2, ensure_ascii=False)


def _fence(text: str, lang: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    run = longest = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _md_search(block: ServerToolBlock, redact: Redactor) -> str:
    """A server-side web search: `**Web search** `query` (id)`, then one `- [title](url)` line
    per result (or the error)."""
    head = f"**Web search** `{redact(block.query)}` ({block.id})"
    if block.error:
        return f"{head} — error {block.error}"
    lines = [f"- [{redact(h.title or h.url)}]({redact(h.url)})" for h in block.results]
    return "\n".join([head, "", *lines]) if lines else f"{head} — no results"


def _md_turn(turn: Turn, names: dict[str, str], redact: Redactor) -> list[str]:
    out: list[str] = []
    for block in turn.content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                out.append(redact(block.text))
        elif isinstance(block, ThinkingBlock):
            text = block.text or "\n".join(block.summary)
            if text.strip():
                out.append("> **Thinking**\n>\n" + _quote(redact(text)))
        elif isinstance(block, RedactedThinkingBlock):
            out.append("> **Thinking** (encrypted by the provider)")
        elif isinstance(block, ToolCallBlock):
            args = redact(arguments_text(block))
            out.append(f"**Tool call** `{block.name}` ({block.id})\n\n{_fence(args, 'json')}")
        elif isinstance(block, ToolResultBlock):
            name = names.get(block.tool_call_id, "?")
            head = f"**Result** of `{name}` ({block.tool_call_id})"
            head += " — error" if block.is_error else ""
            parts = [head, "", _fence(redact(block.text))]
            parts += [f"[image: {image_label(p)}]" for p in block.content if isinstance(p, ImageBlock)]
            out.append("\n".join(parts))
        elif isinstance(block, ImageBlock):
            out.append(f"[image: {image_label(block)}]")
        elif isinstance(block, DocumentBlock):
            out.append(f"[document: {block.title or block.media_type}]")
        elif isinstance(block, ServerToolBlock):
            out.append(_md_search(block, redact))
        else:
            out.append(f"> **{compaction_label(block)}**\n>\n" + _quote(redact(block.summary)))
    return out


def markdown(loaded: LoadedSession, redact: Redactor) -> str:
    """The Markdown transcript: a header (id, folder, created, usage and cost), then each turn
    under `## User` / `## Assistant` (model and usage), thinking and compaction summaries
    quoted, tool calls and results fenced, images named (`[image: …]`)."""
    h = loaded.header
    lines = [
        f"# Session {h.id}",
        "",
        f"- folder: `{redact(h.cwd)}`",
        f"- created: {created_text(loaded)}",
        f"- turns: {len(loaded.turns)}",
        f"- usage: {session_usage_line(loaded.turns)}",
    ]
    if h.parent_session:
        lines.append(f"- forked from: {h.parent_session}")
    names = tool_names(loaded.turns)
    for turn in loaded.turns:
        if is_cancelled_reply(turn):  # no empty `## Assistant` heading
            lines += ["", f"*{CANCELLED_TEXT}*"]
            continue
        marker = any(isinstance(b, CompactSummaryBlock) for b in turn.content)
        title = "Compaction" if marker else turn.role.capitalize()
        if turn.role == "user" and turn.content and all(
            isinstance(b, ToolResultBlock) for b in turn.content
        ):
            title = "Tool results"
        lines += ["", f"## {title}", ""]
        usage = turn_usage_line(turn)
        if usage:
            lines += [f"*{usage}*", ""]
        lines.append("\n\n".join(_md_turn(turn, names, redact)))
    return "\n".join(lines).rstrip() + "\n"


def _redacted(value: Any, redact: Redactor) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(v, redact) for v in cast(list[Any], value)]
    if isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        return {k: v if k in _OPAQUE_KEYS else _redacted(v, redact) for k, v in items}
    return value


def jsonl(loaded: LoadedSession, redact: Redactor) -> str:
    """A `session` header line (`id`, `created_ms`, `cwd`, `parent_session`, `usage`,
    `cost_usd`), then `{"type": "turn", "ts_ms", "turn"}` per turn, images inline (base64
    `data`, no `file`); every string redacted except bytes and provider tokens."""
    h = loaded.header
    usage = turns_usage(loaded.turns)
    head = {
        "type": "session",
        "id": h.id,
        "created_ms": h.created_ms,
        "cwd": redact(h.cwd),
        "parent_session": h.parent_session,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "cost_usd": turns_cost_usd(loaded.turns),
    }
    rows = [json.dumps(head, ensure_ascii=False)]
    for turn, ts in zip(loaded.turns, loaded.turn_ts_ms, strict=False):
        data = _redacted(turn_to_dict(turn), redact)
        _inline_images(data)
        rows.append(json.dumps({"type": "turn", "ts_ms": ts, "turn": data}, ensure_ascii=False))
    return "\n".join(rows) + "\n"


def _inline_images(value: Any) -> None:
    """Drop `file` from image dicts (the bytes are inline in `data`)."""
    if isinstance(value, list):
        for v in cast(list[Any], value):
            _inline_images(v)
    elif isinstance(value, dict):
        d = cast(dict[str, Any], value)
        if d.get("type") == "image":
            d.pop("file", None)
        for v in d.values():
            _inline_images(v)


def data_uri(block: ImageBlock) -> str | None:
    """`data:image/...;base64,...` for an image whose bytes are base64 of an image type, else
    None (nothing else may go into a page's `src`)."""
    if not block.media_type.startswith("image/") or not block.data:
        return None
    safe = block.media_type.replace('"', "").replace("<", "").replace(">", "")
    try:
        base64.b64decode(block.data, validate=True)
    except ValueError:
        return None
    return f"data:{safe};base64,{block.data}"
