"""`tether sessions timeline ID [--svg FILE]`: the chart on stdout, the SVG file, bad input."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from test_startup_imports import heavy, loaded

from kit.cli import Completed, run_cli
from tether.messages import (
    CompactSummaryBlock,
    Provenance,
    TextBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.session import SessionStore
from tether.tools.exec.normalize import render_stub


def _tether(args: list[str], home: Path) -> Completed:
    return run_cli(args, home, cwd=home, COLUMNS="100")


def _session(home: Path) -> None:
    store = SessionStore(home / "sessions")
    with store.create("s1", cwd=str(home)) as w:
        for i in range(10):
            w.append(text_turn(f"u{i}", "user", "do the thing " * 20))
            model = "gpt-a" if i < 7 else "gpt-b"
            w.append(
                Turn(
                    id=f"a{i}",
                    role="assistant",
                    content=(TextBlock(text="done"),),
                    usage=Usage(input_tokens=1000 * i, cache_read_tokens=300, output_tokens=50),
                    provenance=Provenance(provider="openai", api="chat", model=model),
                )
            )
            if i == 4:
                block = CompactSummaryBlock(summary="s", replaces_turn_ids=("u0", "a0"))
                w.append(Turn(id="m4", role="user", content=(block,)))
            if i == 5:
                stub = render_stub("x", path="/s/tool-results/c5.txt", size_bytes=70_000, lines=2)
                w.append(Turn(id="r5", role="user", content=(tool_result("c5", stub),)))


def test_timeline_prints_the_chart_and_writes_the_svg(tmp_path: Path) -> None:
    _session(tmp_path)
    out = tmp_path / "timeline.svg"
    done = _tether(["sessions", "timeline", "s1", "--svg", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "tokens per request" in done.stdout
    lines = done.stdout.splitlines()  # the trial's axes read 1.00 1.17 1.33 … and 1.1e3
    labels = lines[next(i for i, x in enumerate(lines) if x.lstrip().startswith("└")) + 1].split()
    assert labels and all(x.isdigit() for x in labels), labels
    ylabels = [x.split("┤")[0].strip() for x in lines if "┤" in x]
    assert ylabels and all(re.fullmatch(r"\d+(\.\d)?[kM]?", y) for y in ylabels), ylabels
    assert "\x1b[" not in done.stdout  # not a terminal: no colour codes
    assert "C1   after request 5: compaction 1" in done.stdout
    assert "P1   after request 6: persisted output" in done.stdout
    assert "M1   after request 7: model openai/gpt-a → openai/gpt-b" in done.stdout
    root = ET.fromstring(out.read_text())
    texts = "".join(el.text or "" for el in root.iter()).replace("\xa0", " ")
    assert "compaction 1" in texts and "persisted output" in texts and "gpt-b" in texts
    assert f"wrote {out}" in done.stderr


def test_unknown_session_is_one_line_exit_1(tmp_path: Path) -> None:
    done = _tether(["sessions", "timeline", "nosuch"], tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "nosuch" in done.stderr
    assert done.stdout == ""


def test_unwritable_svg_is_one_line_exit_1(tmp_path: Path) -> None:
    _session(tmp_path)
    done = _tether(["sessions", "timeline", "s1", "--svg", str(tmp_path / "no" / "x.svg")], tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "cannot write" in done.stderr
    assert done.stdout == ""  # refused before the chart is drawn


def test_a_size_outside_the_charts_range_is_one_line_exit_1(tmp_path: Path) -> None:
    """The trial's `--width 5` drew a 24-column chart and `--height 0` a full one."""
    _session(tmp_path)
    for flag, value in (("--width", "5"), ("--height", "0"), ("--width", "100000")):
        done = _tether(["sessions", "timeline", "s1", flag, value], tmp_path)
        assert done.returncode == 1 and flag in done.stderr, done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr


def test_timeline_help_stays_light() -> None:
    mods = loaded("sessions", "timeline", "--help")
    assert "tether.cli.main" in mods
    assert heavy(mods, allow=("pydantic", "pydantic_core")) == []
    assert "plotext" not in mods
