"""Image bytes live in the session's artifact folder (`tether.session.images`): the JSONL line
holds a reference, the same image is stored once, a fork reads its parent's images, and a
missing file loads as a line of text instead of failing the session."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image

from tether.messages import ImageBlock, TextBlock, ToolResultBlock, Turn
from tether.session import SessionStore


def png_b64(color: str) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


RED, BLUE = png_b64("red"), png_b64("blue")


def user(tid: str, *images: str) -> Turn:
    blocks = (TextBlock(text="see"), *(ImageBlock(media_type="image/png", data=d) for d in images))
    return Turn(id=tid, role="user", content=blocks)


def test_lines_hold_references_and_one_file_per_content(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with store.create(session_id="s", cwd="/w") as w:
        w.append(user("u1", RED, RED, BLUE))
        w.append(
            Turn(
                id="u2",
                role="user",
                content=(
                    ToolResultBlock(
                        tool_call_id="c", content=(ImageBlock(media_type="image/png", data=RED),)
                    ),
                ),
            )
        )
        w.sync()
    text = (tmp_path / "s.jsonl").read_text()
    assert RED not in text and BLUE not in text
    assert len(list((tmp_path / "s" / "images").iterdir())) == 2
    loaded = store.load("s")
    images = [b for b in loaded.turns[0].content if isinstance(b, ImageBlock)]
    assert [i.data for i in images] == [RED, RED, BLUE]
    (result,) = loaded.turns[1].tool_results
    assert result.content[0].data == RED  # type: ignore[union-attr]


def test_a_fork_reads_its_parents_images(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with store.create(session_id="p", cwd="/w") as w:
        w.append(user("u1", BLUE))
    with store.create(session_id="f", cwd="/w", parent=("p", "u1")) as w:
        w.append(user("u2", RED))
    loaded = store.load("f")
    assert [b.data for t in loaded.turns for b in t.content if isinstance(b, ImageBlock)] == [
        BLUE,
        RED,
    ]


def test_a_missing_image_file_loads_as_text(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with store.create(session_id="s", cwd="/w") as w:
        w.append(user("u1", RED))
    line = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[1])
    (tmp_path / line["turn"]["content"][1]["file"]).unlink()
    (turn,) = store.load("s").turns
    assert isinstance(turn.content[1], TextBlock)
    assert "is missing" in turn.content[1].text


def test_an_old_session_with_inline_bytes_still_loads(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with store.create(session_id="s", cwd="/w"):
        pass
    inline = user("u1", RED)
    from tether.messages import turn_to_dict

    entry = {"type": "turn", "id": "u1", "parent_id": None, "ts_ms": 1, "turn": turn_to_dict(inline)}
    with (tmp_path / "s.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")
    (turn,) = store.load("s").turns
    assert turn == inline
