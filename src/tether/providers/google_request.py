"""Gemini request building (target `google`): wire view → `contents` and tools.

Owns: converting a wire view into google-genai `Content`/`Part` objects, replaying thought
signatures on the part they came with, and the signature codec.
Does not own: the stream or the provider (`tether.providers.google`), the wire passes.

Shapes (Gemini API `models.streamGenerateContent`):
    contents: [{"role": "user"|"model", "parts": [
        {"text"}, {"inlineData": {"mimeType", "data"}},
        {"text", "thought": true, "thoughtSignature"},                 # kept thinking
        {"functionCall": {"id", "name", "args"}, "thoughtSignature"?},
        {"functionResponse": {"id", "name", "response": {"output"|"error": str}}}]}]
    tools: [{"functionDeclarations": [{"name", "description", "parametersJsonSchema"}]}]

Signatures (Gemini "Thought signatures" guide: return every signature in the part it came
with): a function call's signature is its `provider_meta["thought_signature"]`; a signed
thought part is a `ThinkingBlock` with text and signature; a signature that came on a plain
text part is a signature-only `ThinkingBlock` (empty text) at that part's position, replayed on
the text part that follows it, or on the one before it when it was trailing. Gemini 3 rejects
a model turn whose function calls carry no signature (a turn another provider produced): the
first call of such a turn gets the documented placeholder `skip_thought_signature_validator`
("migrating from other models"). Unsigned thinking text (another model's) is not sent.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from google.genai import types as gt

from tether.messages import (
    CompactSummaryBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ToolSpec

SIGNATURE_KEY = "thought_signature"
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Gemini's documented placeholder for function calls that came from another model."""

_THINKING_MODEL = re.compile(r"gemini-(2\.5|[3-9])", re.IGNORECASE)


def is_thinking_model(model: str) -> bool:
    """Whether `model` thinks (Gemini 2.5 and later): only those accept `thinkingConfig`."""
    return _THINKING_MODEL.search(model) is not None


def encode_signature(raw: bytes) -> str:
    """A signature as stored: standard base64 of the bytes the SDK decoded (the API's text)."""
    return base64.b64encode(raw).decode("ascii")


def decode_signature(text: str) -> bytes:
    """The bytes of a stored signature (standard or URL-safe base64)."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---------------------------------------------------------------------------------------------
# Request conversion


def _blob(media_type: str, data: str) -> gt.Part:
    try:
        raw = base64.b64decode(data)
    except (binascii.Error, ValueError):
        raw = data.encode()
    return gt.Part(inline_data=gt.Blob(mime_type=media_type, data=raw))


def _user_parts(turn: Turn, names: dict[str, str]) -> list[gt.Part]:
    """Function responses first (in order), then the rest. A result names its call's function
    (Gemini matches responses by name and, when given, id)."""
    results: list[gt.Part] = []
    rest: list[gt.Part] = []
    for block in turn.content:
        if isinstance(block, ToolResultBlock):
            key = "error" if block.is_error else "output"
            results.append(
                gt.Part(
                    function_response=gt.FunctionResponse(
                        id=block.tool_call_id,
                        name=names.get(block.tool_call_id, "tool"),
                        response={key: block.text},
                    )
                )
            )
            rest.extend(
                _blob(p.media_type, p.data) for p in block.content if isinstance(p, ImageBlock)
            )
        elif isinstance(block, TextBlock):
            if block.text:
                rest.append(gt.Part(text=block.text))
        elif isinstance(block, ImageBlock | DocumentBlock):
            rest.append(_blob(block.media_type, block.data))
        elif isinstance(block, CompactSummaryBlock):
            rest.append(gt.Part(text=block.summary))
    return results + rest


def _signature_only(block: ContentBlock) -> bool:
    return isinstance(block, ThinkingBlock) and not block.text and bool(block.signature)


def _model_parts(turn: Turn) -> list[gt.Part]:
    """Model parts in order. Signed thinking (kept by the wire pass only on the issuing route)
    becomes a thought part with its signature; a signature-only block signs the neighbouring
    text part (module docstring); unsigned thinking text is not sent (Gemini has no field for
    another model's reasoning)."""
    parts: list[gt.Part] = []
    pending: bytes | None = None  # a signature waiting for the next text part
    signed_call = any(
        isinstance(b, ToolCallBlock) and (b.provider_meta or {}).get(SIGNATURE_KEY)
        for b in turn.content
    )
    first_call = True
    for block in turn.content:
        if isinstance(block, TextBlock):
            if block.text or pending is not None:
                parts.append(gt.Part(text=block.text, thought_signature=pending))
                pending = None
        elif isinstance(block, ThinkingBlock):
            if _signature_only(block):
                assert block.signature is not None
                pending = decode_signature(block.signature)
            elif block.signature and block.text:
                sig = decode_signature(block.signature)
                parts.append(gt.Part(text=block.text, thought=True, thought_signature=sig))
        elif isinstance(block, ToolCallBlock):
            meta = block.provider_meta or {}
            sig_text = meta.get(SIGNATURE_KEY)
            sig: bytes | None = None
            if isinstance(sig_text, str):
                sig = decode_signature(sig_text)
            elif first_call and not signed_call:
                sig = decode_signature(SKIP_SIGNATURE)
            first_call = False
            call = gt.FunctionCall(id=block.id, name=block.name, args=block.arguments)
            parts.append(gt.Part(function_call=call, thought_signature=sig))
    if pending is not None:
        # A trailing signature: it belongs to the last text part when there is one.
        for k in range(len(parts) - 1, -1, -1):
            part = parts[k]
            if part.text is not None and not part.thought and part.thought_signature is None:
                parts[k] = part.model_copy(update={"thought_signature": pending})
                break
        else:
            parts.append(gt.Part(text="", thought_signature=pending))
    return parts


def to_gemini_contents(messages: Sequence[Turn]) -> tuple[list[gt.Content], list[str]]:
    """Convert a wire view (target `google`) into Gemini `contents`.

    Returns:
        (contents, system_texts): system-role turns go to `systemInstruction` (returned to be
        appended to it). Turns that end up empty are dropped.
    """
    names = {b.id: b.name for t in messages for b in t.content if isinstance(b, ToolCallBlock)}
    out: list[gt.Content] = []
    system: list[str] = []
    for turn in messages:
        if turn.role == "system":
            if turn.text:
                system.append(turn.text)
            continue
        if turn.role == "assistant":
            parts = _model_parts(turn)
            role = "model"
        else:
            parts = _user_parts(turn, names)
            role = "user"
        if parts:
            out.append(gt.Content(role=role, parts=parts))
    return out, system


def to_gemini_tools(tools: Sequence[ToolSpec]) -> list[gt.Tool]:
    """Tools → one `Tool` with a `FunctionDeclaration` per tool (`parametersJsonSchema`: the
    JSON schema as is, no OpenAPI subset conversion)."""
    if not tools:
        return []
    decls = [
        gt.FunctionDeclaration(
            name=t.name, description=t.description, parameters_json_schema=t.parameters
        )
        for t in tools
    ]
    return [gt.Tool(function_declarations=decls)]
