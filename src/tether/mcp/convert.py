"""MCP results to tether tool results (pure: data in, data out).

Owns: `call_result_parts` (a `tools/call` result → text/image parts and the error flag),
`resource_parts` (a `resources/read` result → parts) and `tool_schema` (an MCP tool's input
schema as the tool's JSON schema).
Does not own: running calls (`tether.mcp.connection`), the persisted-output gate (the loop
gates every tool result, MCP ones included: `tether.tools.exec.persist`).

Mapping (MCP content block → tool_result part), per the MCP `CallToolResult` shape
(https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result):
    text                      → text
    image                     → image (base64 data, its MIME type)
    audio                     → a text note (type, size); providers take no audio in results
    resource_link             → a text line naming the URI (readable with `mcp_read_resource`)
    resource (embedded) text  → text headed by its URI
    resource (embedded) blob  → an image when its MIME type is `image/*`, else a text note
    structuredContent         → its JSON as a text part, unless a text part already holds the
                                same JSON, or holds X for `{"result": X}` (servers SHOULD send
                                both; the model gets it once)
    isError                   → is_error
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, cast

import mcp_types as mt

from tether.messages import ImageBlock, TextBlock

Part = TextBlock | ImageBlock


def _b64_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _resource_contents(res: mt.TextResourceContents | mt.BlobResourceContents) -> Part:
    mime = res.mime_type or "unknown type"
    if isinstance(res, mt.TextResourceContents):
        return TextBlock(text=f"[resource {res.uri} ({mime})]\n{res.text}")
    if res.mime_type and res.mime_type.startswith("image/"):
        return ImageBlock(media_type=res.mime_type, data=res.blob)
    return TextBlock(
        text=f"[resource {res.uri} ({mime}): {_b64_size(res.blob)} bytes of binary data, not shown]"
    )


def content_part(block: mt.ContentBlock) -> Part:
    """One MCP content block as a tool_result part (module docstring)."""
    if isinstance(block, mt.TextContent):
        return TextBlock(text=block.text)
    if isinstance(block, mt.ImageContent):
        return ImageBlock(media_type=block.mime_type, data=block.data)
    if isinstance(block, mt.AudioContent):
        return TextBlock(
            text=f"[audio ({block.mime_type}), {_b64_size(block.data)} bytes, not shown]"
        )
    if isinstance(block, mt.EmbeddedResource):
        return _resource_contents(block.resource)
    mime = f", {block.mime_type}" if block.mime_type else ""
    return TextBlock(text=f"[resource link: {block.name} <{block.uri}>{mime}]")


def _same_json(text: str, value: Any) -> bool:
    """Whether `text` holds `value` as JSON, or holds X where `value` is `{"result": X}` (the
    SDKs wrap a tool's non-object return value that way for `structuredContent`)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    if parsed == value:
        return True
    return isinstance(value, dict) and list(cast(dict[str, Any], value)) == ["result"] and (
        cast(dict[str, Any], value)["result"] in (parsed, text)
    )


def call_result_parts(result: mt.CallToolResult) -> tuple[tuple[Part, ...], bool]:
    """A `tools/call` result as (parts, is_error); parts may be empty (the runner then puts
    its placeholder)."""
    parts = [content_part(b) for b in result.content]
    structured = result.structured_content
    if structured is not None and not any(
        isinstance(p, TextBlock) and _same_json(p.text, structured) for p in parts
    ):
        parts.append(TextBlock(text=json.dumps(structured, ensure_ascii=False)))
    return tuple(parts), bool(result.is_error)


def resource_parts(result: mt.ReadResourceResult) -> tuple[Part, ...]:
    """A `resources/read` result as parts, one per content item."""
    return tuple(_resource_contents(c) for c in result.contents)


def tool_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """An MCP tool's `inputSchema` passed through as the tool's JSON schema: a copy, without a
    top-level `$schema` key (providers reject it), with `type: object` and `properties` ensured
    (MCP requires an object root; some servers omit `properties` for no arguments)."""
    out: dict[str, Any] = dict(schema or {})
    out.pop("$schema", None)
    out.setdefault("type", "object")
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


def describe_tool(server: str, description: str | None, title: str | None = None) -> str:
    """The description offered to the model: the server's, with a note of which server."""
    text = (description or title or "").strip()
    return f"{text}\n\n(MCP server `{server}`)" if text else f"A tool of the MCP server `{server}`."

