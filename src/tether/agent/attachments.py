"""Images a user attaches to a prompt: read from a file or the clipboard, mentioned as
`@shot.png` in the text (`tether.agent.mentions`), and refused up front for a model known to
read text only.

Owns: `read_image` / `image_from_bytes` (bytes checked with Pillow, a format no provider takes
converted to PNG once), `prompt_content` (a prompt's text and images as content blocks), and
`image_refusal` (the one check every host makes before anything is sent).
Does not own: fitting an image to a provider's limits (`tether.providers.images`, at request
time), storing its bytes (`tether.session.images`), the hosts' flags and keys (`--image`, the
TUI's Ctrl+V, ACP's image prompts).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from pathlib import Path

from tether.errors import ConfigError
from tether.messages import ContentBlock, ImageBlock, TextBlock
from tether.providers.base import Provider
from tether.providers.catalog import info_of
from tether.providers.images import image_facts

__all__ = [
    "MAX_ATTACH_BYTES",
    "image_from_bytes",
    "image_refusal",
    "prompt_content",
    "read_image",
]

MAX_ATTACH_BYTES = 50 * 1024 * 1024
"""The largest image file attached (bytes); each provider's own cap applies when it is sent
(`tether.providers.images.IMAGE_LIMITS`: larger images are scaled down then)."""

_SENT_AS_IS = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def image_from_bytes(data: bytes, *, name: str = "image") -> ImageBlock:
    """An image block of `data`, its media type read from the bytes; BMP and TIFF (which no
    provider takes) become PNG once, here.

    Raises:
        ConfigError: `data` is not an image (one line naming `name`).
    """
    try:
        facts = image_facts(data)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    media_type = facts.media_type
    if media_type not in _SENT_AS_IS:
        from PIL import Image

        out = io.BytesIO()
        with Image.open(io.BytesIO(data)) as img:
            img.save(out, format="PNG")
        data, media_type = out.getvalue(), "image/png"
    return ImageBlock(media_type=media_type, data=base64.b64encode(data).decode("ascii"))


def read_image(path: Path | str, *, root: Path | None = None) -> ImageBlock:
    """The image in file `path` (relative to `root` when given, `~` expanded).

    Raises:
        ConfigError: the file is missing, not a file, larger than `MAX_ATTACH_BYTES`, or not
            an image; the message is one line naming the path.
    """
    shown = str(path)
    p = Path(path).expanduser()
    if root is not None and not p.is_absolute():
        p = root / p
    try:
        size = p.stat().st_size
        if not p.is_file():
            raise ConfigError(f"{shown}: not a file")
        if size > MAX_ATTACH_BYTES:
            raise ConfigError(f"{shown}: {size} bytes is larger than {MAX_ATTACH_BYTES} bytes")
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{shown}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{shown}: {exc.strerror or exc}") from None
    return image_from_bytes(data, name=shown)


def prompt_content(text: str, images: Sequence[ImageBlock]) -> str | list[ContentBlock]:
    """The prompt as `Agent.run` takes it: the text alone without images, else a text block
    (when there is text) followed by the images."""
    if not images:
        return text
    blocks: list[ContentBlock] = [TextBlock(text=text)] if text.strip() else []
    blocks.extend(images)
    return blocks


def image_refusal(provider: Provider, count: int) -> str | None:
    """Why `count` images cannot go to `provider`'s model (one line), or None: refused only
    when the model is known to read text only (`ModelInfo.image_input` False); an unknown
    model is assumed to take images."""
    if count <= 0:
        return None
    info = info_of(provider)
    if info is None or info.image_input is not False:
        return None
    what = "an image" if count == 1 else f"{count} images"
    return (
        f"model {provider.name}/{provider.model} does not take images; {what} attached, "
        "nothing was sent. Pick a model that reads images (--model), or leave the image out"
    )
