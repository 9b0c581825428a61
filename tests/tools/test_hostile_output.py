"""Issue 18 items 11–13: hostile tool output — binary bytes kept as bytes, control characters
rendered or escaped, and output cut by the tool described as what it is."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.messages import TextBlock, ToolCallBlock
from tether.sandbox.proc import HeadTail
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env
from tether.tools.exec.normalize import normalize, render_controls
from tether.tools.exec.persist import OutputLimits, persist_tool_result

_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


async def test_binary_output_is_saved_as_the_exact_bytes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    data = bytes(range(256)) * 239 + b"\xff\xfe\x80"  # 61,187 bytes, not UTF-8
    (root / "blob").write_bytes(data)
    ctx = ToolContext.create(root.resolve(), env=scrubbed_env())
    call = ToolCallBlock(id="bin1", name="bash", arguments={"command": "cat blob"})
    result = await run_tool_call(ToolRegistry(builtin_tools()), call, ctx, timeout_s=30)
    session_dir = tmp_path / "session"
    gated = persist_tool_result(result, session_dir)
    saved = session_dir / "tool-results" / "bin1.bin"
    assert saved.read_bytes() == data
    assert f"{len(data)} bytes" in gated.text
    assert hashlib.sha256(data).hexdigest() in gated.text


def test_head_tail_keeps_undecodable_bytes() -> None:
    h = HeadTail(head=8, tail=8)
    h.feed(b"\xff\x00abc")
    from tether.tools.exec.normalize import raw_bytes

    assert raw_bytes(h.text()) == b"\xff\x00abc"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F) | st.sampled_from("é€\x7f")))
def test_no_control_character_reaches_the_wire(text: str) -> None:
    norm = normalize(text)
    assert not _CONTROLS.search(norm.text)
    assert normalize(norm.text).text == norm.text  # idempotent


def test_controls_are_rendered_like_a_terminal() -> None:
    assert render_controls("ring\a") == "ring"
    assert render_controls("_\bX bold") == "X bold"
    assert render_controls("page\fnext\vtab") == "page\nnext\ntab"
    assert render_controls("a\x01b\x7f") == "a\\x01b\\x7f"
    result = persist_tool_result(_block("status: ok\a\x1b[31mred\x1b[0m \x02done"), None)
    assert result.text == "status: okred \\x02done"


def _block(text: str):
    from tether.messages import ToolResultBlock

    return ToolResultBlock(tool_call_id="c1", content=(TextBlock(text=text),))


def test_a_cut_output_says_what_was_produced_kept_and_where(tmp_path: Path) -> None:
    sink = HeadTail(head=30_000, tail=30_000)
    line = b"0123456789" * 9 + b"012345678\n"  # 100 bytes a line
    for _ in range(5_000):  # 500,000 bytes produced
        sink.feed(line)
    raw = sink.text()
    result = persist_tool_result(_block(raw), tmp_path, OutputLimits(threshold_chars=8192))
    text = result.text
    kept = len(raw.encode())
    assert "The full output" not in text
    assert "500000 bytes" in text  # produced
    assert f"{kept} bytes" in text  # kept
    assert "line 302" in text  # where the cut is: 300 whole lines, the note's own newline
    saved = (tmp_path / "tool-results" / "c1.txt").read_text().split("\n")
    assert "bytes of output cut" in saved[301]


def test_output_not_cut_still_says_full_output(tmp_path: Path) -> None:
    raw = "x" * 100 + "\n"
    result = persist_tool_result(_block(raw * 200), tmp_path, OutputLimits(threshold_chars=8192))
    assert "The full output" in result.text and "produced" not in result.text
