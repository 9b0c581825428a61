"""Property tests of the pure helpers: cutting, rendering, prompts, restore selection."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.compaction.prompt import (
    PERSISTED_OUTPUT_TAG,
    SECTIONS,
    build_prompt,
    cut_middle,
    marker_text,
    render_transcript,
)
from tether.compaction.restore import recent_read_paths
from tether.compaction.rounds import live_turns, original_task
from tether.messages import ImageBlock, ToolCallBlock, Turn, tool_result
from tether.wire.markers import is_marker

from .helpers import TASK, histories


@given(st.text(max_size=3_000), st.integers(50, 2_000))
def test_cut_middle_bounds_and_keeps_head_and_tail(text: str, limit: int) -> None:
    out = cut_middle(text, limit)
    if len(text) <= limit or PERSISTED_OUTPUT_TAG in text:
        assert out is text
    else:
        assert len(out) <= limit + 20
        keep = limit - 40
        assert out.startswith(text[: keep * 2 // 3])
        assert out.endswith(text[len(text) - (keep - keep * 2 // 3) :])
    stub = PERSISTED_OUTPUT_TAG + ' path="x">' + text
    assert cut_middle(stub, limit) is stub


@given(histories())
def test_transcript_renders_every_turn_without_media_payloads(turns: tuple[Turn, ...]) -> None:
    img = Turn(
        id="img", role="user", content=(ImageBlock(media_type="image/png", data="QUJD" * 50),)
    )
    text = render_transcript((*turns, img))
    assert "QUJD" not in text and "[image]" in text
    assert text.count("\n\nuser: ") + text.count("\n\nassistant: ") + text.count(
        "\n\nsystem: "
    ) == len(turns)  # one block per turn (+ the image turn), in order
    assert TASK in text


@given(
    st.text(max_size=200),
    st.none() | st.text(min_size=1, max_size=50),
    st.none() | st.text(min_size=1, max_size=50),
)
def test_prompt_has_every_section_and_the_transcript_verbatim(
    transcript: str, previous: str | None, focus: str | None
) -> None:
    prompt = build_prompt(transcript, previous_summary=previous, focus=focus)
    for s in SECTIONS:
        assert f"\n## {s}\n" in prompt
    assert ("## Focus" in prompt) == bool(focus)
    assert f"<conversation>\n{transcript}\n</conversation>" in prompt
    if previous:
        assert f"<previous-summary>\n{previous}\n</previous-summary>" in prompt
    assert marker_text("  s  ", "a", "b").endswith("Turns covered: a…b (use the recall tool)")


@given(histories())
def test_original_task_is_structural_and_live_turns_hold_it(turns: tuple[Turn, ...]) -> None:
    task = original_task(turns)
    assert task is not None and task.text == TASK
    assert task in live_turns(turns)
    assert not any(is_marker(t) for t in live_turns(turns) if t.id not in {x.id for x in turns})


@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.booleans()), max_size=12),
    st.integers(0, 6),
    st.integers(1, 5),
)
def test_recent_read_paths_are_unique_newest_first_and_outside_the_tail(
    reads: list[tuple[str, bool]], tail: int, max_files: int
) -> None:
    turns: list[Turn] = []
    for k, (path, ok) in enumerate(reads):
        c = ToolCallBlock(id=f"c{k}", name="read", arguments={"path": path})
        turns.append(Turn(id=f"a{k}", role="assistant", content=(c,)))
        turns.append(
            Turn(id=f"u{k}", role="user", content=(tool_result(c.id, "x", is_error=not ok),))
        )
    kept = tuple(turns[len(turns) - 2 * tail :]) if tail else ()
    out = recent_read_paths(turns, kept, max_files=max_files)
    assert len(out) == len(set(out)) <= max_files
    in_tail = {c.arguments["path"] for t in kept for c in t.tool_calls}
    assert not set(out) & in_tail
    ok_order = [p for p, ok in reversed(reads) if ok]
    expected: list[str] = []
    for p in ok_order:
        if p not in expected and p not in in_tail:
            expected.append(p)
    assert list(out) == expected[:max_files]
