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
the part that follows it (a function call first: a signature that arrived on a thought part or
an empty part right before an unsigned call is that call's), or on the text part before it when
it was trailing. Gemini 3 validates that the first function call of each step of the current
turn carries its signature (single call: on it; parallel calls: on the first; sequential
calls: on each step's call); a step whose first call has none (another provider's turn, a
lost or undecodable signature) gets the documented placeholder `skip_thought_signature_validator`
("migrating from other models") on that first call only: with parallel calls Gemini signs
only the first, so its siblings go out as they came, without a placeholder. Unsigned thinking text (another
model's) is not sent. Model contents left adjacent once system turns are lifted out are
merged (one step), so roles alternate.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from google.genai import types as gt

from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.base import ToolSpec
from tether.providers.images import fit_image
from tether.wire import decode_gemini_signature

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


def decode_signature(text: str) -> bytes | None:
    """The bytes of a stored signature (standard or URL-safe base64), or None when it is not
    base64 (`tether.wire.decode_gemini_signature`; the wire pass drops and reports such a
    signature, so the request is still sent)."""
    return decode_gemini_signature(text)


# ---------------------------------------------------------------------------------------------
# Request conversion


def _image(block: ImageBlock) -> gt.Part:
    """An image part, fitted to Gemini's image limits (`tether.providers.images`)."""
    fitted = fit_image(block, "google")
    return _blob(fitted.media_type, fitted.data)


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
            rest.extend(_image(p) for p in block.content if isinstance(p, ImageBlock))
        elif isinstance(block, TextBlock):
            if block.text:
                rest.append(gt.Part(text=block.text))
        elif isinstance(block, ImageBlock):
            rest.append(_image(block))
        elif isinstance(block, DocumentBlock):
            rest.append(_blob(block.media_type, block.data))
        elif isinstance(block, CompactSummaryBlock):
            rest.append(gt.Part(text=block.summary))
    return results + rest


def _model_parts(turn: Turn) -> list[gt.Part]:
    """Model parts in order. Signed thinking (kept by the wire pass only on the issuing route)
    becomes a thought part with its signature; a signature-only block signs the next part: the
    function call that follows it, else the neighbouring text part (module docstring); a
    signature that arrived on a thought part right before an unsigned function call is sent on
    the function-call part, where Gemini validates it. Unsigned thinking text is not sent
    (Gemini has no field for another model's reasoning); a signature that is not base64 is
    dropped (the wire pass reports it)."""
    parts: list[gt.Part] = []
    pending: bytes | None = None  # a signature waiting for the next text or call part
    for block in turn.content:
        if isinstance(block, TextBlock):
            if block.text or pending is not None:
                parts.append(gt.Part(text=block.text, thought_signature=pending))
                pending = None
        elif isinstance(block, ThinkingBlock):
            sig = decode_signature(block.signature) if block.signature else None
            if sig is None:
                continue
            if block.text:
                parts.append(gt.Part(text=block.text, thought=True, thought_signature=sig))
            else:
                pending = sig
        elif isinstance(block, ToolCallBlock):
            raw = (block.provider_meta or {}).get(SIGNATURE_KEY)
            sig = decode_signature(raw) if isinstance(raw, str) else None
            if sig is None and pending is not None:
                sig, pending = pending, None
            elif sig is None and parts and parts[-1].thought and parts[-1].thought_signature:
                sig = parts[-1].thought_signature
                parts[-1] = parts[-1].model_copy(update={"thought_signature": None})
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


def _sign_calls(parts: list[gt.Part]) -> list[gt.Part]:
    """The first function-call part of a step (one model content) without a signature gets
    Gemini's documented placeholder `skip_thought_signature_validator` (Gemini 3 validates that
    the first function call of each step of the current turn carries a signature; a call
    another model made, or whose signature was lost, has none: "Thought signatures" guide,
    migrating from other models). Its parallel siblings are left as they are: "only the first
    functionCall part will contain the signature" (same guide), and a placeholder there is a
    signature Gemini never issued."""
    for k, p in enumerate(parts):
        if p.function_call is not None:
            if p.thought_signature:
                return parts
            skip = decode_signature(SKIP_SIGNATURE)
            return [*parts[:k], p.model_copy(update={"thought_signature": skip}), *parts[k + 1 :]]
    return parts


def to_gemini_contents(messages: Sequence[Turn]) -> tuple[list[gt.Content], list[str]]:
    """Convert a wire view (target `google`) into Gemini `contents`.

    Returns:
        (contents, system_texts): system-role turns go to `systemInstruction` (returned to be
        appended to it). Turns that end up empty are dropped, and contents of one role left
        adjacent by those moves are merged (function responses first), so roles alternate and
        a function call always follows a user or function-response content (Gemini: "function
        call turn comes immediately after a user turn or after a function response turn").
    """
    # A result names its call from the assistant turn right before it (where the view puts
    # it), never from the whole history: an id a later turn reuses must not lend its name.
    names: dict[str, str] = {}
    out: list[gt.Content] = []
    system: list[str] = []
    for turn in messages:
        if turn.role == "system":
            if turn.text:
                system.append(turn.text)
            continue
        if turn.role == "assistant":
            names = {c.id: c.name for c in turn.tool_calls}
            parts = _model_parts(turn)
            role = "model"
        else:
            parts = _user_parts(turn, names)
            role = "user"
        if not parts:
            continue
        if out and out[-1].role == role:
            merged = [*(out[-1].parts or ()), *parts]
            if role == "user":
                merged.sort(key=lambda p: p.function_response is None)
            out[-1] = gt.Content(role=role, parts=merged)
        else:
            out.append(gt.Content(role=role, parts=parts))
    for k, content in enumerate(out):
        if content.role == "model":
            out[k] = gt.Content(role="model", parts=_sign_calls(list(content.parts or ())))
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
