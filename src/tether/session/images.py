"""Image bytes in a session's artifact folder instead of inline in its JSONL file.

Owns: `externalize` (before a turn is written: each image's bytes go to
`<root>/<session id>/images/<sha256>.<ext>`, once per content, and the line keeps only the
reference) and `restore` (after a session is read: each reference becomes the bytes again).
Does not own: the line format (`tether.session.writer`), reading the file
(`tether.session.store`), what an image means to a provider (`tether.providers.images`).

A reference is relative to the sessions root (`ImageBlock.file`), so a fork's turns read from
its parent's file find the parent's images. The content hash names the file: the same image
attached twice is stored once, and a file is never rewritten (written to a temporary name,
then renamed into place).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tether.atomic import write_atomic

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tether.messages import (
        ContentBlock,
        ImageBlock,
        ResultPart,
        TextBlock,
        ToolResultBlock,
        Turn,
    )

IMAGES = "images"
"""The artifact sub-folder of a session's image bytes (`tether.session.layout.ArtifactKind`)."""

_SUFFIXES = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/heic": ".heic",
    "image/heif": ".heif",
}


_blocks: tuple[type[ImageBlock], type[ToolResultBlock]] | None = None
"""The block classes `has_inline_images` tests for, imported on its first call (this module
is imported without pydantic) and kept: an import statement costs ~1 us per stored turn."""


def has_inline_images(turn: Turn) -> bool:
    """Whether `turn` holds an image whose bytes are inline (what `externalize` moves out)."""
    global _blocks
    if _blocks is None:
        from tether.messages import ImageBlock, ToolResultBlock

        _blocks = (ImageBlock, ToolResultBlock)
    image, result = _blocks
    for block in turn.content:
        if isinstance(block, image):
            if block.data:
                return True
        elif isinstance(block, result):
            for part in block.content:  # a loop, not a generator: once per stored turn
                if isinstance(part, image) and part.data:
                    return True
    return False


def _stored(block: ImageBlock, session_id: str, session_dir: Path) -> ImageBlock:
    """`block` with its bytes in `session_dir/images/` and only the reference kept."""
    try:
        raw = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return block  # not base64: kept inline, as given
    name = hashlib.sha256(raw).hexdigest()[:32] + _SUFFIXES.get(block.media_type, ".img")
    folder = session_dir / IMAGES
    path = folder / name
    if not path.exists():
        write_atomic(path, raw, durable=False, mode=0o600, folder_mode=0o700)
    return replace(block, data="", file=f"{session_id}/{IMAGES}/{name}")


def externalize(turn: Turn, session_id: str, session_dir: Path) -> Turn:
    """`turn` as its session line holds it: every inline image's bytes written to
    `session_dir/images/` (once per content) and replaced by its reference (`file`, data
    empty). A turn without inline images is returned as it is.

    Raises:
        OSError: an image file cannot be written (the caller's write fails as a whole).
    """
    from tether.messages import ImageBlock, ToolResultBlock

    if not has_inline_images(turn):
        return turn
    out: list[ContentBlock] = []
    for block in turn.content:
        if isinstance(block, ImageBlock) and block.data:
            out.append(_stored(block, session_id, session_dir))
        elif isinstance(block, ToolResultBlock):
            parts: list[ResultPart] = [
                _stored(p, session_id, session_dir) if isinstance(p, ImageBlock) and p.data else p
                for p in block.content
            ]
            out.append(replace(block, content=tuple(parts)))
        else:
            out.append(block)
    return replace(turn, content=tuple(out))


def _read(block: ImageBlock, root: Path) -> ImageBlock | TextBlock:
    from tether.messages import TextBlock

    assert block.file is not None
    path = root / block.file
    try:
        if ".." in Path(block.file).parts:
            raise FileNotFoundError(block.file)
        raw = path.read_bytes()
    except OSError:
        return TextBlock(text=f"[image {block.file} is missing from the sessions folder]")
    return replace(block, data=base64.b64encode(raw).decode("ascii"))


def restore(turns: Sequence[Turn], root: Path) -> tuple[Turn, ...]:
    """`turns` with every image reference (`file` set, data empty) read back from under the
    sessions `root`; a missing file becomes a text block saying so (the rest loads).

    Returns:
        `turns` as a tuple (itself when it is one) when no turn holds a reference, else a
        new tuple.
    """
    from tether.messages import ImageBlock, ToolResultBlock

    def wanted(b: object) -> bool:
        return isinstance(b, ImageBlock) and b.file is not None and not b.data

    out: list[Turn] | None = None
    for i, turn in enumerate(turns):
        for b in turn.content:  # a plain loop: it runs once per loaded turn
            if isinstance(b, ImageBlock):
                if wanted(b):
                    break
            elif (
                isinstance(b, ToolResultBlock)
                and ImageBlock in map(type, b.content)
                and any(wanted(p) for p in b.content)
            ):
                break
        else:
            continue
        blocks: list[ContentBlock] = []
        for b in turn.content:
            if isinstance(b, ImageBlock) and wanted(b):
                blocks.append(_read(b, root))
            elif isinstance(b, ToolResultBlock):
                parts: list[ResultPart] = [
                    _read(p, root) if isinstance(p, ImageBlock) and wanted(p) else p
                    for p in b.content
                ]
                blocks.append(replace(b, content=tuple(parts)))
            else:
                blocks.append(b)
        if out is None:
            out = list(turns)
        out[i] = replace(turn, content=tuple(blocks))
    return tuple(turns if out is None else out)
