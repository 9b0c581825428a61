"""Load the bug-report cases of tests/cases and convert their neutral schema to Turns.

Generic on purpose (shared by every test folder):
    load_case(name) -> dict          # {"name", "title", "kind", "text", "input", "inputs"}
    neutral_to_turns(messages, *, id_prefix="m") -> tuple[Turn, ...]

`input` is the first ```json block of the case file, parsed; `inputs` lists all of them.
Neutral -> tether: role "tool" becomes a `user` turn of tool_result blocks; "meta" becomes the
turn's Provenance (provider/api/model); a tool_call with a null id gets the id the assembler
would mint (`<turn id>_call<k>`); string "args" are parsed strictly (kept as raw_arguments with
`invalid` set when they do not parse); a thinking block's "provider" becomes its `producer`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from tether.messages import (
    CompactSummaryBlock,
    ContentBlock,
    ImageBlock,
    Provenance,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Turn,
    tool_result,
)

CASES_DIR = Path(__file__).resolve().parents[1] / "cases"
_JSON_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)

_API_OF_PROVIDER = {
    "openai": "openai-chat",
    "gemini": "google",
    "vertex": "google",
}
_PROVIDER_OF_API = {
    "openai-chat": "openai",
    "openai-responses": "openai",
}
TARGET_APIS = ("anthropic", "openai-chat", "openai-responses", "google", "ollama")


def load_case(name: str) -> dict[str, Any]:
    """Read case `name` (e.g. "T01"): its title, kind, full text and JSON input(s)."""
    text = (CASES_DIR / f"{name}.md").read_text(encoding="utf-8")
    blocks = [json.loads(m) for m in _JSON_BLOCK.findall(text)]
    title = text.splitlines()[0].lstrip("# ").strip() if text else name
    kind_match = re.search(r"^- Kind: (K\d+)", text, re.MULTILINE)
    return {
        "name": name,
        "title": title,
        "kind": kind_match.group(1) if kind_match else None,
        "text": text,
        "input": blocks[0] if blocks else None,
        "inputs": blocks,
    }


def provenance_from_meta(meta: dict[str, Any] | None) -> Provenance | None:
    """A neutral "meta" object as a Provenance (None without one)."""
    if not meta:
        return None
    provider = str(meta.get("provider", ""))
    api = meta.get("api")
    if api is None:
        api = provider if provider in TARGET_APIS else _API_OF_PROVIDER.get(provider, provider)
        provider = _PROVIDER_OF_API.get(provider, provider)
    return Provenance(provider=provider, api=str(api), model=str(meta.get("model", "")))


def _block(b: dict[str, Any], turn_id: str, k: int) -> ContentBlock:
    kind = b["type"]
    if kind == "text":
        return TextBlock(text=b["text"])
    if kind == "tool_call":
        args: Any = b.get("args", {})
        raw: str | None = None
        invalid: str | None = None
        if isinstance(args, str):
            try:
                parsed: Any = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                args = cast("dict[str, Any]", parsed)
            else:
                raw, invalid, args = args, "the arguments are not a JSON object", {}
        return ToolCallBlock(
            id=b.get("id") or f"{turn_id}_call{k}",
            name=b["name"],
            arguments=args,
            raw_arguments=raw,
            invalid=invalid,
            provider_meta=b.get("provider_meta"),
        )
    if kind == "tool_result":
        content: Any = b.get("content", "")
        if isinstance(content, list):
            content = cast("list[Any]", content)
            return tool_result(
                b["tool_call_id"],
                "".join(str(x) for x in content),
                is_error=bool(b.get("is_error")),
            )
        return tool_result(b["tool_call_id"], str(content), is_error=bool(b.get("is_error")))
    if kind == "thinking":
        return ThinkingBlock(
            text=b.get("text", ""),
            signature=b.get("signature"),
            producer=b.get("provider"),
            model=b.get("model"),
            item_id=b.get("item_id"),
            encrypted_content=b.get("encrypted_content"),
            summary=tuple(str(s) for s in b.get("summary") or ()),
        )
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(data=b["data"], producer=b.get("provider", "anthropic"))
    if kind == "image":
        return ImageBlock(media_type=b.get("media_type", "image/png"), data=b.get("data", ""))
    if kind in ("compact_summary", "marker"):
        return CompactSummaryBlock(
            summary=b.get("summary", ""),
            replaces_turn_ids=tuple(b.get("replaces_turn_ids", b.get("replaces", ()))),
            generation=int(b.get("generation", 1)),
        )
    raise ValueError(f"unknown neutral block type {kind!r}")


def neutral_message_to_turn(message: dict[str, Any], turn_id: str) -> Turn:
    """One neutral message as a Turn (role "tool" -> a user turn of results)."""
    role = message["role"]
    if role == "tool":
        role = "user"
    content = tuple(_block(b, turn_id, k) for k, b in enumerate(message.get("content", []), 1))
    return Turn(
        id=message.get("id") or turn_id,
        role=role,
        content=content,
        provenance=provenance_from_meta(message.get("meta")) if role == "assistant" else None,
    )


def neutral_to_turns(messages: list[dict[str, Any]], *, id_prefix: str = "m") -> tuple[Turn, ...]:
    """Neutral messages as Turns, ids `<id_prefix><index>` unless a message carries an "id"."""
    return tuple(neutral_message_to_turn(m, f"{id_prefix}{i}") for i, m in enumerate(messages))
