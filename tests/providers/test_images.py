"""Images in requests: each target's request shape for a user image and a tool's image,
fitting to each provider's limits (`tether.providers.images`), and the models that read text
only (`ModelInfo.image_input`)."""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from tether.messages import ImageBlock, Target, TextBlock, ToolResultBlock, Turn
from tether.providers.anthropic_request import to_anthropic_messages
from tether.providers.catalog import lookup
from tether.providers.google_request import to_gemini_contents
from tether.providers.images import IMAGE_LIMITS, fit_image
from tether.providers.ollama_request import to_ollama_messages
from tether.providers.openai_chat_request import to_chat_messages
from tether.providers.openai_responses_request import to_responses_input


def encoded(size: tuple[int, int], fmt: str = "PNG", mode: str = "RGB") -> str:
    buf = io.BytesIO()
    Image.new(mode, size, "blue").save(buf, fmt)
    return base64.b64encode(buf.getvalue()).decode()


def decoded(data: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(data)))


SMALL = ImageBlock(media_type="image/png", data=encoded((64, 48)))
USER = Turn(id="u1", role="user", content=(TextBlock(text="look"), SMALL))
TOOL = Turn(
    id="u2",
    role="user",
    content=(ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="image a.png"), SMALL)),),
)
CALL = Turn(
    id="a1",
    role="assistant",
    content=(),
)


def test_anthropic_shape() -> None:
    messages, _ = to_anthropic_messages([USER])
    (msg,) = messages
    image = msg["content"][1]  # type: ignore[index]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": SMALL.data},
    }


def test_openai_chat_shape() -> None:
    (msg,) = to_chat_messages([USER])
    part = msg["content"][1]  # type: ignore[index]
    assert part == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SMALL.data}"}}


def test_openai_responses_shape() -> None:
    (item,) = to_responses_input([USER])
    assert item["content"][1] == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{SMALL.data}",
    }


def test_gemini_shape() -> None:
    contents, _ = to_gemini_contents([USER])
    parts = contents[0].parts
    assert parts is not None
    part = parts[1]
    assert part.inline_data is not None
    assert part.inline_data.mime_type == "image/png"
    assert part.inline_data.data == base64.b64decode(SMALL.data)


def test_ollama_shape_and_a_tool_image_follows_in_the_user_message() -> None:
    (msg,) = to_ollama_messages([USER])
    assert msg == {"role": "user", "content": "look", "images": [SMALL.data]}
    tool_msgs = to_ollama_messages([TOOL])
    assert tool_msgs[0]["role"] == "tool"
    assert tool_msgs[1]["images"] == [SMALL.data]


@pytest.mark.parametrize("target", list(IMAGE_LIMITS))
def test_an_image_within_the_limits_is_sent_unchanged(target: Target) -> None:
    assert fit_image(SMALL, target) is SMALL


@pytest.mark.parametrize("target", list(IMAGE_LIMITS))
def test_a_large_png_is_scaled_to_the_long_edge_and_stays_png(target: Target) -> None:
    limits = IMAGE_LIMITS[target]
    big = ImageBlock(media_type="image/png", data=encoded((limits.max_edge_px * 2, 300)))
    out = fit_image(big, target)
    img = decoded(out.data)
    assert out.media_type == "image/png" and img.format == "PNG"
    assert img.size == (limits.max_edge_px, 150)


def test_the_anthropic_request_carries_the_downscaled_image() -> None:
    big = ImageBlock(media_type="image/png", data=encoded((4000, 1000)))
    messages, _ = to_anthropic_messages([Turn(id="u", role="user", content=(big,))])
    source = messages[0]["content"][0]["source"]  # type: ignore[index]
    assert decoded(source["data"]).size == (1568, 392)  # type: ignore[index]


def test_a_format_the_target_does_not_take_is_reencoded() -> None:
    gif = ImageBlock(media_type="image/gif", data=encoded((20, 20), "GIF", "P"))
    out = fit_image(gif, "ollama")  # Ollama's runners read PNG and JPEG
    assert out.media_type == "image/png" and decoded(out.data).format == "PNG"
    assert fit_image(gif, "anthropic") is gif


def test_a_wrong_media_type_is_corrected_from_the_bytes() -> None:
    jpeg = ImageBlock(media_type="image/png", data=encoded((30, 30), "JPEG"))
    out = fit_image(jpeg, "anthropic")
    assert out.media_type == "image/jpeg" and out.data == jpeg.data


def test_bytes_over_the_cap_become_smaller_jpeg_steps() -> None:
    # noise does not compress: a 1500x1500 PNG of it is well over Anthropic's 5 MB
    noise = Image.frombytes("RGB", (1500, 1500), random.Random(0).randbytes(1500 * 1500 * 3))
    buf = io.BytesIO()
    noise.save(buf, "PNG")
    assert len(buf.getvalue()) > 5 * 1024 * 1024
    block = ImageBlock(media_type="image/png", data=base64.b64encode(buf.getvalue()).decode())
    out = fit_image(block, "anthropic")
    assert len(base64.b64decode(out.data)) <= IMAGE_LIMITS["anthropic"].max_bytes
    assert out.media_type == "image/jpeg"


def test_bytes_that_are_not_an_image_are_passed_through() -> None:
    junk = ImageBlock(media_type="image/png", data=base64.b64encode(b"nope").decode())
    assert fit_image(junk, "google") is junk


@settings(max_examples=25, deadline=None)
@given(
    w=st.integers(1, 5000),
    h=st.integers(1, 5000),
    target=st.sampled_from(list(IMAGE_LIMITS)),
)
def test_fit_is_within_limits_keeps_aspect_and_is_idempotent(w: int, h: int, target: Target) -> None:
    block = ImageBlock(media_type="image/png", data=encoded((w, h), mode="L"))
    out = fit_image(block, target)
    img = decoded(out.data)
    limits = IMAGE_LIMITS[target]
    assert max(img.size) <= limits.max_edge_px
    assert len(base64.b64decode(out.data)) <= limits.max_bytes
    if max(w, h) > limits.max_edge_px:  # the long side keeps its proportion within a pixel
        assert abs(img.size[0] / img.size[1] - w / h) <= max(w / h, h / w) * 2 / min(img.size)
    else:
        assert out is block
    assert fit_image(out, target) is out  # a fitted image fits


def test_vision_in_the_catalog() -> None:
    for name in ("claude-sonnet-4-5", "gpt-4o", "gemini-2.5-flash", "llama3.2-vision:11b"):
        assert lookup(name).image_input is True  # type: ignore[union-attr]
    for name in ("gpt-3.5-turbo", "llama3.2:3b", "qwen2.5-coder:7b", "smollm2-135m-instruct"):
        assert lookup(name).image_input is False  # type: ignore[union-attr]
    assert lookup("qwen2.5vl:7b") is None  # unknown: assumed to take images


def test_local_renders_a_placeholder_and_an_attached_image_is_refused(tmp_path: Path) -> None:
    """The embedded model reads text: its prompt names the image, and a host refuses an
    attached image before anything is sent (`image_refusal`)."""
    from tether.agent.attachments import image_refusal
    from tether.providers.local.prompt import render_user
    from tether.providers.local.provider import LocalProvider

    assert render_user(USER) == "look\n\n[image: image/png, not shown to this model]"
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")  # never loaded: the check reads `info` only
    provider = LocalProvider(gguf)
    refusal = image_refusal(provider, 1)
    assert refusal is not None and "does not take images" in refusal
    assert image_refusal(provider, 0) is None
