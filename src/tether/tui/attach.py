"""Images the TUI attaches to a prompt: pasted from the clipboard (Ctrl+V), a pasted image
file path (what a terminal pastes when a file is dropped on it), or `@shot.png` in the prompt.

Owns: `clipboard_image` (the clipboard's image through Pillow's `ImageGrab.grabclipboard`,
which runs `wl-paste` on Wayland or `xclip` on X11, and asks the OS on macOS and Windows),
`pasted_image_path` (is a paste one image file's path?), `image_chip` (the transcript's label),
and the app's side of it over an `AttachHost`: `attach_pasted`, `paste_image` (Ctrl+V).
Does not own: reading and checking image files (`tether.agent.attachments`), `@shot.png` in a
prompt (`tether.agent.mentions`), the keys and rows
(`tether.tui.app`, `tether.tui.widgets`).
"""

from __future__ import annotations

import io
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from tether.agent.attachments import image_from_bytes, read_image
from tether.errors import ConfigError
from tether.messages import ImageBlock
from tether.providers.images import ATTACHABLE_TYPES

__all__ = [
    "AttachHost",
    "attach_pasted",
    "clipboard_image",
    "image_chip",
    "paste_image",
    "pasted_image_path",
]

Grab = Callable[[], Any]
"""Reads the clipboard: a Pillow image, a list of file names (Windows), or None."""


def _grab() -> Any:
    from PIL import ImageGrab

    return ImageGrab.grabclipboard()


def clipboard_image(grab: Grab = _grab) -> ImageBlock | None:
    """The clipboard's image (PNG unless the clipboard held a file of another image type), or
    None when the clipboard holds no image. Blocking (it may run `wl-paste` / `xclip`): call it
    from a thread.

    Raises:
        ConfigError: no way to read the clipboard here (on Linux: neither `wl-paste` nor
            `xclip`), or the clipboard tool failed; one line.
    """
    try:
        got = grab()
    except NotImplementedError:
        raise ConfigError(
            "Ctrl+V reads images with wl-paste (Wayland) or xclip (X11): neither is installed"
        ) from None
    except (ChildProcessError, OSError) as exc:
        raise ConfigError(f"reading the clipboard failed: {exc}".splitlines()[0]) from None
    if got is None:
        return None
    if isinstance(got, list):  # file names (Windows): the first image among them
        for name in got:  # pyright: ignore[reportUnknownVariableType]
            if Path(str(name)).suffix.lower() in ATTACHABLE_TYPES:  # pyright: ignore[reportUnknownArgumentType]
                return read_image(str(name))  # pyright: ignore[reportUnknownArgumentType]
        return None
    out = io.BytesIO()
    got.save(out, format="PNG")
    return image_from_bytes(out.getvalue(), name="the clipboard's image")


def pasted_image_path(text: str, root: Path) -> Path | None:
    """The image file a paste names, or None: the whole paste is one path (quoted, with
    backslash-escaped spaces, or a `file://` URI, as terminals paste a dropped file) to an
    existing file with an image suffix; relative paths are relative to `root`."""
    text = text.strip()
    if not text or "\n" in text:
        return None
    if text.startswith("file://"):
        candidate = unquote(urlsplit(text).path)
    else:
        try:
            words = shlex.split(text)
        except ValueError:
            return None
        if len(words) != 1:
            return None
        candidate = words[0]
    path = Path(candidate).expanduser()
    path = path if path.is_absolute() else root / path
    if path.suffix.lower() not in ATTACHABLE_TYPES or not path.is_file():
        return None
    return path


def image_chip(block: ImageBlock) -> str:
    """`[image png 12 KB]`: an attached image in the transcript."""
    kind = block.media_type.removeprefix("image/")
    size = len(block.data) * 3 // 4
    return f"[image {kind} {max(1, round(size / 1024))} KB]"


class AttachHost(Protocol):
    """The app as attaching sees it.

    Attributes:
        attached: the images waiting for the next prompt.
        clipboard_image: reads the clipboard (`clipboard_image`; a test swaps it).
    """

    attached: list[ImageBlock]
    clipboard_image: Callable[[], ImageBlock | None]

    @property
    def focused(self) -> object:
        """The focused widget."""
        ...

    def note(self, text: str) -> None:
        """A note in the transcript."""
        ...


def _attach(app: AttachHost, image: ImageBlock) -> None:
    app.attached.append(image)
    app.note(f"attached {image_chip(image)}: sent with the next prompt")


def attach_pasted(app: AttachHost, text: str, root: Path | None) -> bool:
    """A paste that is one image file's path (below `root`, the working folder; None: no
    session) attaches the image (True); else False (the editor pastes the text)."""
    if root is None:
        return False
    path = pasted_image_path(text, root)
    if path is None:
        return False
    try:
        _attach(app, read_image(path))
    except ConfigError as exc:
        app.note(f"not attached: {exc}")
    return True


async def paste_image(app: AttachHost, editor: type[Any]) -> None:
    """Ctrl+V: in the prompt editor (an `editor` instance focused) the clipboard's image is
    attached, and without one the editor pastes text; elsewhere (an overlay's field) that
    widget's own paste."""
    import asyncio

    focused = app.focused
    paste: object = getattr(focused, "action_paste", None)
    if not isinstance(focused, editor):
        if callable(paste):
            paste()
        return
    try:
        image = await asyncio.to_thread(app.clipboard_image)
    except ConfigError as exc:
        image = None
        app.note(str(exc))
    if image is not None:
        _attach(app, image)
    elif callable(paste):
        paste()
