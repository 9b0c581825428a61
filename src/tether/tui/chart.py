"""Drawing a session's timeline: a terminal chart (plotext) and an SVG file (rich).

Owns: `chart_text` (the chart as text with ANSI colours, or plain), `legend_lines` (one line
per mark, numbered as on the chart: C1 compaction, P1 persisted output, M1 model switch),
`chart_lines` (both) and `timeline_svg` (the same chart and legend recorded by a
`rich.console.Console(record=True)` and exported as SVG: no hand-written SVG).
Does not own: the series (`tether.session.timeline`, pure).

x = request number (1-based); a mark between requests k and k+1 is drawn at x = k + 0.5.
plotext draws on a process-wide figure: `chart_text` clears it first, and is not thread-safe.
"""

from __future__ import annotations

import re
from typing import Any

from tether.plural import counted
from tether.session.timeline import Timeline, TimelineMark

_SGR = re.compile(r"\x1b\[[0-9;]*m")
"""An ANSI colour / style sequence (what plotext writes)."""
_BACKGROUND = re.compile(r"\x1b\[48;5;\d+m")
"""An ANSI 256-colour background sequence."""

MARK_LETTERS = {"compaction": "C", "persisted": "P", "model": "M"}
MARK_COLORS = {"compaction": "red", "persisted": "yellow", "model": "magenta"}
MARK_NAMES = {"compaction": "compaction", "persisted": "persisted output", "model": "model switch"}


MAX_TICKS = 10
"""The most request numbers the x axis labels."""


def short_count(n: int) -> str:
    """A token count as an axis label: `950`, `1.2k`, `12k`, `1.5M`."""
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            value = n / size
            return f"{value:.1f}".rstrip("0").rstrip(".") + unit if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def mark_tags(timeline: Timeline) -> list[tuple[str, TimelineMark]]:
    """Each mark with its tag (`C1`, `P2`, `M1`: letter of the kind, number within the kind)."""
    counts: dict[str, int] = {}
    out: list[tuple[str, TimelineMark]] = []
    for mark in timeline.marks:
        counts[mark.kind] = counts.get(mark.kind, 0) + 1
        out.append((f"{MARK_LETTERS[mark.kind]}{counts[mark.kind]}", mark))
    return out


def legend_lines(timeline: Timeline) -> list[str]:
    """A summary line, the series' key, then one line per mark: `C1 after request 12: compaction …`."""
    pts = timeline.points
    peak = max((p.prompt_tokens for p in pts), default=0)
    out_total = sum(p.output_tokens for p in pts)
    head = f"{counted(len(pts), 'request')} · peak prompt {peak} tokens · {out_total} output tokens"
    if timeline.unmeasured:
        head += f" · {timeline.unmeasured} replies without usage (not drawn)"
    lines = [head, "⠂ prompt tokens (input + cache read + cache write)   x output tokens"]
    for tag, mark in mark_tags(timeline):
        lines.append(f"{tag:<4} after request {mark.at}: {mark.label}")
    return lines


def chart_text(
    timeline: Timeline, *, width: int = 100, height: int = 20, color: bool = True
) -> str:
    """The chart: prompt tokens (input + cache) and output tokens per request, a vertical line
    per mark tagged as in `legend_lines`. `width` / `height` in terminal cells."""
    import importlib

    plotext: Any = importlib.import_module("plotext")  # untyped: its figure API is used as Any
    plotext.terminal.limit(False, False)  # the size asked for, whatever the terminal's
    fig = plotext.figure
    fig.clear()
    fig.theme("simple")  # no painted canvas: the terminal's (or the SVG's) background shows
    fig.plot_size(max(width, 30), max(height, 8))
    fig.title("tokens per request")
    pts = timeline.points
    if not pts:
        fig.draw(fig.text(0, 0, "no request with usage in this session", alignment="center"))
    else:
        xs = [p.index + 1 for p in pts]
        top = max(max(p.prompt_tokens, p.output_tokens) for p in pts) or 1
        prompt = fig.signal(xs, [p.prompt_tokens for p in pts], marker="braille")
        prompt.label("prompt (input + cache)")
        output = fig.signal(xs, [p.output_tokens for p in pts], marker="x")
        output.label("output")
        fig.draw(prompt)
        fig.draw(output)
        fig.legend(False)  # the key is `legend_lines`' first line
        xticks = xs[:: max(1, -(-len(xs) // MAX_TICKS))]  # whole request numbers, not 1.17
        fig.ruler("x").ticks(xticks, [str(x) for x in xticks])
        yticks = [round(top * k / 4) for k in range(5)]
        fig.ruler("y").ticks(yticks, [short_count(y) for y in yticks])  # 1.2k, not 1.2e3
        seen: set[str] = set()
        for tag, mark in mark_tags(timeline):
            x = mark.at + 0.5
            label = None if mark.kind in seen else MARK_NAMES[mark.kind]
            seen.add(mark.kind)
            paint = plotext.pixel(foreground=MARK_COLORS[mark.kind])
            fig.line(x, orientation="vertical", label=label, pixel=paint)
            fig.draw(fig.text(x, top, tag))
    text = _BACKGROUND.sub("", str(fig.build()))  # a line's pixel always gets one: drop it
    return text if color else _SGR.sub("", text)


def chart_lines(
    timeline: Timeline, *, width: int = 100, height: int = 20, color: bool = True
) -> list[str]:
    """`chart_text` then `legend_lines`, as lines."""
    return [
        *chart_text(timeline, width=width, height=height, color=color).splitlines(),
        *legend_lines(timeline),
    ]


def timeline_svg(timeline: Timeline, *, title: str, width: int = 100, height: int = 20) -> str:
    """The chart and its legend as an SVG document (rich's `Console.export_svg`)."""
    import io

    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=width + 2, file=io.StringIO(), color_system="truecolor")
    console.print(Text.from_ansi(chart_text(timeline, width=width, height=height)))
    for line in legend_lines(timeline):
        console.print(Text(line))
    return console.export_svg(title=title)
