"""Images as each wire API takes them: the published limits per target, and fitting an image
block inside them (Pillow).

Owns: `ImageLimits`, `IMAGE_LIMITS` (one per target, with its source), `fit_image` (an image
block within a target's limits: sent as it is when it already fits, else downscaled and, only
when needed, re-encoded), `image_facts` (format and size of base64 image bytes) and
`ATTACHABLE_TYPES` (what a host accepts as an image file).
Does not own: whether a model takes images at all (`tether.providers.catalog.ModelInfo.
image_input`), where the bytes are stored (`tether.session.writer`), reading image files
(`tether.agent.attachments`).

Pure: bytes in, bytes out (decoding and encoding in memory; no file, no clock). `fit_image`
keeps the last results in a small cache keyed by the image's base64 text, since each request of
a session re-sends every image of its history.

The limits (as published; the long-edge figures where a vendor publishes none are tether's
choice, named as such):

- Anthropic, "Vision" (https://docs.anthropic.com/en/docs/build-with-claude/vision): JPEG,
  PNG, GIF, WebP; at most 5 MB per image through the API; at most 8000x8000 px, and 2000x2000
  px when a request carries more than 20 images; at most 100 images per request. An image
  whose long edge passes 1568 px (about 1.15 megapixels) is scaled down by the service before
  the model sees it, so tether sends at most 1568 px (also under the many-image 2000 px rule).
- OpenAI, "Images and vision" (https://platform.openai.com/docs/guides/images-vision): PNG,
  JPEG, WebP, non-animated GIF; up to 50 MB of payload per request and 500 images per
  request. At `detail: high` an image is first scaled to fit 2048x2048 px, so tether sends at
  most 2048 px on the long edge. One image is kept under 20 MB (tether's share of the 50 MB).
- Gemini, "Image understanding" (https://ai.google.dev/gemini-api/docs/image-understanding):
  PNG, JPEG, WebP, HEIC, HEIF; inline data counts toward the 20 MB request limit; up to 3,600
  images per request. No pixel limit is published (large images are tiled at 768 px); tether
  sends at most 3072 px on the long edge and 7 MB per image (Vertex AI's per-file inline cap).
- Ollama, API `images` (https://github.com/ollama/ollama/blob/main/docs/api.md): base64 images
  for multimodal models; no size limit is published, and the image decoders of the model
  runners take PNG and JPEG. tether sends PNG or JPEG, at most 2048 px on the long edge and
  20 MB per image.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections import OrderedDict
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from tether.messages import ImageBlock, Target

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "ATTACHABLE_TYPES",
    "IMAGE_LIMITS",
    "ImageFacts",
    "ImageLimits",
    "fit_image",
    "image_facts",
]

MB = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageLimits:
    """What one wire API takes of one image.

    Attributes:
        media_types: the formats sent as they are (`image/png`, ...); anything else is
            re-encoded (PNG, or JPEG for a photo without transparency when PNG is too big).
        max_bytes: the most bytes of one image (decoded, not base64).
        max_edge_px: the longest side sent, in pixels; a larger image is scaled down.
        source: where the figures come from.
    """

    media_types: frozenset[str]
    max_bytes: int
    max_edge_px: int
    source: str


IMAGE_LIMITS = MappingProxyType(
    {
        "anthropic": ImageLimits(
            media_types=frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"}),
            max_bytes=5 * MB,
            max_edge_px=1568,
            source="https://docs.anthropic.com/en/docs/build-with-claude/vision",
        ),
        "openai-chat": ImageLimits(
            media_types=frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"}),
            max_bytes=20 * MB,
            max_edge_px=2048,
            source="https://platform.openai.com/docs/guides/images-vision",
        ),
        "openai-responses": ImageLimits(
            media_types=frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"}),
            max_bytes=20 * MB,
            max_edge_px=2048,
            source="https://platform.openai.com/docs/guides/images-vision",
        ),
        "google": ImageLimits(
            media_types=frozenset(
                {"image/jpeg", "image/png", "image/webp", "image/heic", "image/heif"}
            ),
            max_bytes=7 * MB,
            max_edge_px=3072,
            source="https://ai.google.dev/gemini-api/docs/image-understanding",
        ),
        "ollama": ImageLimits(
            media_types=frozenset({"image/jpeg", "image/png"}),
            max_bytes=20 * MB,
            max_edge_px=2048,
            source="https://github.com/ollama/ollama/blob/main/docs/api.md",
        ),
    }
)
"""Per target (`tether.messages.Target`), the limits an image is fitted to before it is sent."""

ATTACHABLE_TYPES = MappingProxyType(
    {
        ".png": "image/png",
        ".jpg": "image/jpeg",
        ".jpeg": "image/jpeg",
        ".gif": "image/gif",
        ".webp": "image/webp",
        ".bmp": "image/bmp",
        ".tif": "image/tiff",
        ".tiff": "image/tiff",
    }
)
"""File suffixes a host attaches as images (`--image`, `@shot.png`, a pasted path)."""

_FORMAT_TYPES = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "MPO": "image/jpeg",  # a camera JPEG with extra frames; Pillow names it MPO
    "GIF": "image/gif",
    "WEBP": "image/webp",
    "BMP": "image/bmp",
    "TIFF": "image/tiff",
    "HEIF": "image/heif",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageFacts:
    """What the bytes of an image are: `media_type` (from the bytes, not a file name), `width`
    and `height` in pixels, `size_bytes` decoded."""

    media_type: str
    width: int
    height: int
    size_bytes: int


def _decode(data: bytes) -> Image:
    """The image of `data` (Pillow), fully loaded.

    Raises:
        ValueError: the bytes are not an image Pillow reads.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except UnidentifiedImageError:  # its message names the BytesIO object, not the file
        raise ValueError("not a readable image (not a format Pillow reads)") from None
    except (OSError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ValueError(f"not a readable image ({exc})".splitlines()[0]) from None
    return img


def image_facts(data: bytes) -> ImageFacts:
    """Format and size of image bytes, read from the bytes themselves.

    Raises:
        ValueError: the bytes are not an image Pillow reads, or of a format tether cannot send.
    """
    img = _decode(data)
    media_type = _FORMAT_TYPES.get(img.format or "")
    if media_type is None:
        raise ValueError(f"image format {img.format or 'unknown'} is not supported")
    return ImageFacts(
        media_type=media_type, width=img.width, height=img.height, size_bytes=len(data)
    )


def _encode(img: Image, fmt: str, *, quality: int = 85) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        rgb = img.convert("RGB") if img.mode != "RGB" else img
        rgb.save(out, format="JPEG", quality=quality, optimize=True)
    elif fmt == "PNG":
        ok = (
            img
            if img.mode in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16")
            else img.convert("RGBA")
        )
        ok.save(out, format="PNG")  # zlib level 6: optimize=True costs seconds on a large image
    else:
        img.save(out, format=fmt)
    return out.getvalue()


def _has_alpha(img: Image) -> bool:
    return img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)


def _fit_bytes(data: bytes, media_type: str, limits: ImageLimits) -> tuple[bytes, str]:
    """`(bytes, media_type)` within `limits`: unchanged when they already fit."""
    img = _decode(data)
    actual = _FORMAT_TYPES.get(img.format or "", media_type)
    animated = bool(getattr(img, "is_animated", False))
    fits_format = actual in limits.media_types and not (animated and actual == "image/gif")
    edge = max(img.width, img.height)
    if fits_format and edge <= limits.max_edge_px and len(data) <= limits.max_bytes:
        return data, actual  # sent in its own format and size (a PNG stays PNG)
    if animated:
        img.seek(0)  # the first frame: what the providers read of an animated image
        img = img.copy()
    if edge > limits.max_edge_px:
        scale = limits.max_edge_px / edge
        size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
        from PIL import Image as PILImage

        img = img.resize(size, PILImage.Resampling.LANCZOS)
    keep = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WEBP"}
    fmt = keep.get(actual) if actual in limits.media_types else None
    fmt = fmt or "PNG"
    out = _encode(img, fmt)
    if len(out) > limits.max_bytes and not _has_alpha(img):
        fmt = "JPEG"
        out = _encode(img, fmt)
    while len(out) > limits.max_bytes and max(img.width, img.height) > 64:
        img = img.resize((max(1, img.width * 3 // 4), max(1, img.height * 3 // 4)))
        out = _encode(img, fmt)
    return out, {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[fmt]


_CACHE: OrderedDict[tuple[str, str, str], tuple[str, str]] = OrderedDict()
_CACHE_SIZE = 32


def fit_image(block: ImageBlock, target: Target) -> ImageBlock:
    """`block` within `target`'s limits (`IMAGE_LIMITS`): the same block when it already fits
    (same format, same bytes), else one scaled down to the target's long edge and, when the
    format is not one the target takes or the bytes are still too many, re-encoded (PNG, or
    JPEG when there is no transparency; then smaller steps until it fits). An animated image
    sends its first frame. Bytes that are not a readable image are returned unchanged (the
    provider reports them).

    Args:
        block: the image (base64 `data`).
        target: the wire API the request goes to.
    """
    limits = IMAGE_LIMITS[target]
    key = (block.data, block.media_type, target)
    hit = _CACHE.get(key)
    if hit is None:
        try:
            raw = base64.b64decode(block.data, validate=True)
            out, media_type = _fit_bytes(raw, block.media_type, limits)
        except (binascii.Error, ValueError):
            return block
        hit = (block.data if out is raw else base64.b64encode(out).decode("ascii"), media_type)
        _CACHE[key] = hit
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    data, media_type = hit
    if media_type == block.media_type and data == block.data:
        return block
    return ImageBlock(media_type=media_type, data=data, file=block.file)
