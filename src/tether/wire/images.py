"""The unreadable-image pass: an image block whose data is not the image it says it is.

Owns: `readable_image` (one block's verdict: its base64 decodes and its first bytes are the
format its `media_type` names; computed once per block and kept) and `drop_unreadable_images`
/ `drop_unreadable_image` (the pass: such a block becomes a short text note).
Does not own: reading images from files (`tether.agent.attachments`, Pillow), where a session
stores the bytes (`tether.session`).

Why: an old ACP session stored images unchecked (invalid base64, or "hello" labelled
`image/png`); every later request of that session carried them and a provider answers 400 for
each. This pass is pure (data in, data out), returns its input when nothing changes, and is
idempotent. The verdict is cached per block (`functools.lru_cache`: a frozen block hashes by
its fields, and a string's hash is kept by the string), so the view that runs every turn does
not decode an image again.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Sequence
from dataclasses import replace

from tether.messages import ImageBlock, TextBlock, Turn

_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/jpg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def note_for(block: ImageBlock) -> str:
    """The text an unreadable image leaves in the request."""
    return f"[an image ({block.media_type}) was left out: its data is not a readable image]"


@functools.lru_cache(maxsize=512)  # the blocks a session holds anyway
def readable_image(block: ImageBlock) -> bool:
    """Whether `block` holds the image it says: its base64 decodes and starts with the magic
    bytes of its `media_type` (a type not listed here, or data kept in a file and not loaded,
    is left to the provider: True)."""
    if not block.data:
        return block.file is not None
    magic = _MAGIC.get(block.media_type.lower())
    if magic is None:
        return True
    try:
        head = base64.b64decode(block.data, validate=True)[:16]
    except (binascii.Error, ValueError):
        return False
    if block.media_type.lower() == "image/webp" and head[8:12] != b"WEBP":
        return False
    return head.startswith(magic)


def drop_unreadable_image(turn: Turn) -> Turn:
    """`turn` with each unreadable image block replaced by its note; `turn` itself when none."""
    content = turn.content
    if not any(isinstance(b, ImageBlock) and not readable_image(b) for b in content):
        return turn
    kept = tuple(
        TextBlock(text=note_for(b)) if isinstance(b, ImageBlock) and not readable_image(b) else b
        for b in content
    )
    return replace(turn, content=kept)


def drop_unreadable_images(turns: Sequence[Turn]) -> tuple[Turn, ...]:
    """`drop_unreadable_image` over `turns`; the input (as a tuple) when nothing changes."""
    out = tuple(drop_unreadable_image(t) for t in turns)
    if all(a is b for a, b in zip(out, turns, strict=True)):
        return turns if isinstance(turns, tuple) else out
    return out
