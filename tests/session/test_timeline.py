"""The session timeline (`tether.session.timeline`, pure): property tests over generated
sessions, and the chart/SVG drawn from it (`tether.tui.chart`)."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.compaction.pressure import estimate_tokens
from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    TextBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.session.timeline import persisted_output, session_timeline
from tether.tools.exec.normalize import render_stub
from tether.tui.chart import chart_lines, legend_lines, timeline_svg
from tether.wire.markers import elide_markers, is_marker

MODELS = ("anthropic/claude-x", "openai/gpt-y", "local/small")


def _assistant(i: int, usage: Usage | None, model: str | None) -> Turn:
    prov = None
    if model is not None:
        provider, _, name = model.partition("/")
        prov = Provenance(provider=provider, api="messages", model=name)
    return Turn(
        id=f"a{i}", role="assistant", content=(TextBlock(text="x" * i),), usage=usage, provenance=prov
    )


@st.composite
def sessions(draw: st.DrawFn) -> list[Turn]:
    turns: list[Turn] = []
    n = draw(st.integers(0, 30))
    for i in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "result", "persisted", "marker"]))
        if kind == "user":
            turns.append(text_turn(f"u{i}", "user", draw(st.text(max_size=40))))
        elif kind == "assistant":
            usage = draw(
                st.none()
                | st.builds(
                    Usage,
                    input_tokens=st.integers(0, 10**6),
                    output_tokens=st.integers(0, 10**5),
                    cache_read_tokens=st.integers(0, 10**6),
                    cache_write_tokens=st.integers(0, 10**5),
                )
            )
            turns.append(_assistant(i, usage, draw(st.none() | st.sampled_from(MODELS))))
        elif kind in ("result", "persisted"):
            text = draw(st.text(max_size=40))
            if kind == "persisted":
                text = render_stub(text, path=f"/s/tool-results/c{i}.txt", size_bytes=9000 + i, lines=3)
            turns.append(Turn(id=f"r{i}", role="user", content=(tool_result(f"c{i}", text),)))
        else:
            # earlier turns, earlier markers (a re-compaction subsumes them), ids not (yet) there
            known = [t.id for t in turns] + [f"u{i + 1}", f"a{i + 2}", "nosuch"]
            replaced = draw(st.lists(st.sampled_from(known), unique=True))
            block = CompactSummaryBlock(summary=f"summary {i}", replaces_turn_ids=tuple(replaced))
            turns.append(Turn(id=f"m{i}", role="user", content=(block,)))
    return turns


@settings(max_examples=150, deadline=None)
@given(sessions())
def test_one_point_per_request_in_order(turns: list[Turn]) -> None:
    tl = session_timeline(turns)
    requests = [(i, t) for i, t in enumerate(turns) if t.role == "assistant" and t.usage]
    assert [p.turn_index for p in tl.points] == [i for i, _ in requests]
    assert [p.index for p in tl.points] == list(range(len(requests)))
    for p, (_, t) in zip(tl.points, requests, strict=True):
        assert t.usage is not None
        assert p.prompt_tokens == t.usage.prompt_tokens
        assert p.output_tokens == t.usage.output_tokens
        assert p.turn_id == t.id
    unmeasured = sum(1 for t in turns if t.role == "assistant" and t.usage is None)
    assert tl.unmeasured == unmeasured


@settings(max_examples=150, deadline=None)
@given(sessions())
def test_every_marker_is_a_compaction_mark_at_its_place(turns: list[Turn]) -> None:
    tl = session_timeline(turns)
    markers = [i for i, t in enumerate(turns) if is_marker(t)]
    compactions = tl.marks_of("compaction")
    assert [m.turn_index for m in compactions] == markers
    for m in compactions:
        before = sum(1 for t in turns[: m.turn_index] if t.role == "assistant" and t.usage)
        assert m.at == before
        assert m.tokens_before == estimate_tokens(elide_markers(tuple(turns[: m.turn_index])))
        assert m.tokens_after == estimate_tokens(elide_markers(tuple(turns[: m.turn_index + 1])))
        assert f"~{m.tokens_before} → ~{m.tokens_after}" in m.label
    # marks come in turn order, their positions never go back
    assert [m.turn_index for m in tl.marks] == sorted(m.turn_index for m in tl.marks)
    assert all(0 <= m.at <= len(tl.points) for m in tl.marks)


@settings(max_examples=150, deadline=None)
@given(sessions())
def test_persisted_outputs_and_model_switches_are_marked(turns: list[Turn]) -> None:
    tl = session_timeline(turns)
    persisted = [
        i for i, t in enumerate(turns) for r in t.tool_results if persisted_output(r.text)
    ]
    assert [m.turn_index for m in tl.marks_of("persisted")] == persisted
    switches: list[int] = []
    last = None
    for i, t in enumerate(turns):
        if t.role == "assistant" and t.provenance is not None:
            model = f"{t.provenance.provider}/{t.provenance.model}"
            if last is not None and model != last:
                switches.append(i)
            last = model
    assert [m.turn_index for m in tl.marks_of("model")] == switches
    assert all("→" in m.label for m in tl.marks_of("model"))


@settings(max_examples=60, deadline=None)
@given(sessions())
def test_input_never_mutated_and_result_deterministic(turns: list[Turn]) -> None:
    before = copy.deepcopy(turns)
    first = session_timeline(turns)
    assert turns == before
    assert session_timeline(tuple(turns)) == first


def test_persisted_output_reads_the_stub_and_the_note() -> None:
    stub = render_stub("abc", path="/x/tool-results/c1.txt", size_bytes=123456, lines=7)
    assert persisted_output(stub) == (123456, "/x/tool-results/c1.txt")
    note = "out\n[full output (2048 bytes, 3 lines) saved at /x/c2.txt; read it with the read tool]"
    assert persisted_output(note) == (2048, "/x/c2.txt")
    assert persisted_output("nothing saved") is None


def _example() -> list[Turn]:
    turns: list[Turn] = []
    for i in range(12):
        turns.append(text_turn(f"u{i}", "user", "question " * 30))
        model = MODELS[0] if i < 8 else MODELS[1]
        turns.append(_assistant(i, Usage(input_tokens=500 * i, output_tokens=40 + i), model))
        if i == 5:
            block = CompactSummaryBlock(summary="s", replaces_turn_ids=("u0", "a0", "u1", "a1"))
            turns.append(Turn(id="m5", role="user", content=(block,)))
        if i == 6:
            stub = render_stub("data", path="/s/tool-results/c6.txt", size_bytes=80_000, lines=9)
            turns.append(Turn(id="r6", role="user", content=(tool_result("c6", stub),)))
    return turns


def test_chart_and_legend_name_every_mark() -> None:
    tl = session_timeline(_example())
    lines = chart_lines(tl, width=90, height=16, color=False)
    text = "\n".join(lines)
    assert "tokens per request" in text
    for tag in ("C1", "P1", "M1"):
        assert tag in text
    legend = legend_lines(tl)
    assert legend[0].startswith("12 requests")
    assert any(line.startswith("C1   after request 6: compaction 1") for line in legend)
    assert any("P1" in line and "78.1 KB" in line for line in legend)
    assert any("M1" in line and "anthropic/claude-x → openai/gpt-y" in line for line in legend)


def test_svg_is_valid_xml_with_the_marks_labels() -> None:
    tl = session_timeline(_example())
    svg = timeline_svg(tl, title="session s1", width=90, height=16)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = "".join(el.text or "" for el in root.iter()).replace("\xa0", " ")
    for m in tl.marks:
        assert m.label.split(":")[0] in texts
    assert "compaction" in texts and "persisted" in texts and "model" in texts


def test_empty_session_draws_an_empty_chart() -> None:
    tl = session_timeline([])
    assert tl.points == () and tl.marks == ()
    text = "\n".join(chart_lines(tl, width=60, height=10, color=False))
    assert "no request with usage" in text and "0 requests" in text
