"""The unreadable-image pass (`tether.wire.images`): an image block whose data is not the image
it says (old ACP sessions stored `!!!notbase64`, or "hello" labelled `image/png`) leaves the
request as a short note, so a resumed session never gets a 400 for it; pure, idempotent,
verdict cached per block."""

from __future__ import annotations

import base64
import io

from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from tether.messages import ImageBlock, TextBlock, Turn
from tether.wire.images import drop_unreadable_images, note_for, readable_image
from tether.wire.view import ViewBuilder, build_view


def _png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (2, 2), "red").save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


GOOD = ImageBlock(media_type="image/png", data=_png())
BAD = (
    ImageBlock(media_type="image/png", data="!!!notbase64"),
    ImageBlock(media_type="image/png", data="aGVsbG8="),  # "hello"
    ImageBlock(media_type="image/jpeg", data=_png()),  # a png labelled jpeg
    ImageBlock(media_type="image/webp", data=base64.b64encode(b"RIFF0000WAVEfmt ").decode()),
)
blocks = st.sampled_from([GOOD, *BAD, TextBlock(text="look"), TextBlock(text="")])
contents = st.lists(st.lists(blocks, max_size=4), max_size=6)
turns = contents.map(
    lambda cs: tuple(
        Turn(id=f"t{k}", role="user" if k % 2 == 0 else "assistant", content=tuple(c))
        for k, c in enumerate(cs)
    )
)


def test_the_trial_cases() -> None:
    assert readable_image(GOOD)
    assert not any(readable_image(b) for b in BAD)
    stored = ImageBlock(media_type="image/png", data="", file="s/images/x.png")
    assert readable_image(stored)  # kept in a file, not loaded: left to the loader


@given(turns)
def test_the_pass(history: tuple[Turn, ...]) -> None:
    out = drop_unreadable_images(history)
    assert drop_unreadable_images(out) is out  # idempotent
    for before, after in zip(history, out, strict=True):
        if not any(b in BAD for b in before.content):
            assert after is before  # untouched turns are the stored objects
        assert len(after.content) == len(before.content) and after.id == before.id
        for b, a in zip(before.content, after.content, strict=True):
            assert a == (TextBlock(text=note_for(b)) if b in BAD else b)
    if not any(b in BAD for t in history for b in t.content):
        assert out is history


@given(turns)
def test_no_view_carries_an_unreadable_image(history: tuple[Turn, ...]) -> None:
    view = build_view(history, "openai-chat")
    assert not any(b in BAD for t in view for b in t.content)
    assert ViewBuilder("openai-chat").view(history) == view


def test_the_verdict_is_computed_once_per_block() -> None:
    block = ImageBlock(media_type="image/png", data="aGVsbG8gYWdhaW4=")
    before = readable_image.cache_info().misses
    for _ in range(50):
        drop_unreadable_images((Turn(id="u", role="user", content=(block,)),))
    assert readable_image.cache_info().misses == before + 1
