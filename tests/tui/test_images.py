"""Images in the TUI: `@shot.png` in a prompt, a pasted image path, Ctrl+V from the clipboard
(the clipboard reader swapped for one returning a real image; the reader itself is tested on
Pillow images below), the chip in the transcript (live and resumed), and the refusals: a
missing file, a model that reads text only."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from textual import events

from kit.tui import SIZE, idle, notes, scripted_app, send, until
from tether.errors import ConfigError
from tether.messages import ImageBlock, TextBlock, Turn
from tether.providers.base import ModelRequest
from tether.session import SessionStore
from tether.tui.attach import clipboard_image, pasted_image_path
from tether.tui.widgets import PromptInput, UserRow


def png_file(path: Path, size: tuple[int, int] = (20, 10)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, "red").save(buf, "PNG")
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


def images_sent(request: ModelRequest) -> list[ImageBlock]:
    user: Turn = request.messages[-1]
    return [b for b in user.content if isinstance(b, ImageBlock)]


async def test_a_mentioned_image_is_sent_and_shown_as_a_chip(tmp_path: Path) -> None:
    raw = png_file(tmp_path / "shot.png")
    store = SessionStore(tmp_path / "sessions")
    app, provider = scripted_app(tmp_path, ["a red box"], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "what is @shot.png?")
        await idle(app, pilot)
        (row,) = app.query(UserRow)
        assert (row.text == "what is @shot.png?" and row.images == ("[image png 0 KB]",)) or (
            row.images[0].startswith("[image png")
        )
    (image,) = images_sent(provider.requests[0])
    assert base64.b64decode(image.data) == raw
    with store.create("img", cwd=str(tmp_path)) as w:  # a stored session with an image
        w.append(Turn(id="u1", role="user", content=(TextBlock(text="look"), image)))
    app2, _ = scripted_app(tmp_path, [], store=store, resume="img")
    async with app2.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app2.query(UserRow)))
        (row,) = app2.query(UserRow)
        assert row.text == "look" and row.images == ("[image png 1 KB]",)  # resumed: the chip


async def test_a_pasted_image_path_attaches_and_other_pastes_are_text(tmp_path: Path) -> None:
    png_file(tmp_path / "my shot.png")
    app, provider = scripted_app(tmp_path, ["ok"])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        app.post_message(events.Paste(f"'{tmp_path / 'my shot.png'}'"))
        await pilot.pause()
        assert prompt.text == "" and len(app.attached) == 1
        app.post_message(events.Paste("just words"))
        await pilot.pause()
        assert prompt.text == "just words"
        await pilot.press("enter")
        await idle(app, pilot)
        assert app.attached == []
    assert len(images_sent(provider.requests[0])) == 1


async def test_ctrl_v_attaches_the_clipboards_image_else_pastes_text(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["ok"])
    png = Image.new("RGBA", (8, 8), (0, 0, 255, 128))
    async with app.run_test(size=SIZE) as pilot:
        app.clipboard_image = lambda: clipboard_image(lambda: png)
        await pilot.press("ctrl+v")
        await pilot.pause()
        assert len(app.attached) == 1 and "attached [image png" in notes(app)
        app.clipboard_image = lambda: None
        app.copy_to_clipboard("some text")
        await pilot.press("ctrl+v")
        await pilot.pause()
        assert app.query_one(PromptInput).text == "some text"
        await pilot.press("enter")
        await idle(app, pilot)
    (image,) = images_sent(provider.requests[0])
    assert image.media_type == "image/png"


async def test_a_missing_file_or_a_text_only_model_sends_nothing(tmp_path: Path) -> None:
    png_file(tmp_path / "shot.png")
    app, provider = scripted_app(tmp_path, ["never"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "see @gone.png")
        assert "not sent: gone.png: no such file" in notes(app)
        assert app.query_one(PromptInput).text == "see @gone.png"  # kept in the editor
        provider.image_input = False
        app.query_one(PromptInput).text = ""
        await send(pilot, "see @shot.png")
        assert "does not take images" in notes(app)
        assert not app.query(UserRow)
    assert provider.requests == []


def test_clipboard_reader() -> None:
    def none() -> Any:
        raise NotImplementedError

    with pytest.raises(ConfigError, match=r"wl-paste .* or xclip"):
        clipboard_image(none)
    assert clipboard_image(lambda: None) is None
    image = clipboard_image(lambda: Image.new("RGB", (3, 2)))
    assert image is not None and image.media_type == "image/png"


def test_pasted_paths(tmp_path: Path) -> None:
    png_file(tmp_path / "a b.png")
    (tmp_path / "notes.txt").write_text("x")
    assert pasted_image_path(f"file://{tmp_path}/a%20b.png", tmp_path) == tmp_path / "a b.png"
    assert pasted_image_path("a\\ b.png", tmp_path) == tmp_path / "a b.png"
    assert pasted_image_path('"a b.png"\n', tmp_path) == tmp_path / "a b.png"
    assert pasted_image_path("notes.txt", tmp_path) is None
    assert pasted_image_path("look at a b.png", tmp_path) is None
    assert pasted_image_path("gone.png", tmp_path) is None
