"""What fills the context window, turn by turn (`/context`; pure: data in, data out).

Owns: `context_rows` (one row for the system prompt, one for the tool schemas, one per turn of
the wire view, each with its estimated tokens and a kind: `user`, `assistant`, `results`,
`persisted`, `summary`; a turn the wire passes added, not the user, is labelled so), `context_parts` (the rows summed per kind, in a fixed order, for the
bar), `ContextRow` and `cache_line` (the session's prompt-cache hit rate).
Does not own: the token estimate (`tether.compaction.pressure.estimate_tokens`, the one the
compaction pressure uses: additive, so the rows of the turns sum to the view's estimate), the
bar's drawing (`tether.tui.commands.context_bar`), the screen (`tether.tui.panels`).

No I/O, no clock; the input is never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from tether.compaction.pressure import estimate_tokens
from tether.compaction.prune import PRUNE_TAG
from tether.messages import Turn, Usage
from tether.plural import counted
from tether.session.timeline import persisted_output
from tether.wire import added_by_tether
from tether.wire.markers import SUMMARY_HEADER, is_marker

RowKind = Literal["system", "tools", "user", "assistant", "results", "persisted", "summary"]

KIND_ORDER: tuple[RowKind, ...] = (
    "system",
    "tools",
    "summary",
    "user",
    "assistant",
    "results",
    "persisted",
)
"""The order of the bar's parts (what is oldest / most fixed first)."""

PART_LABELS: dict[RowKind, str] = {
    "system": "system",
    "tools": "tools",
    "summary": "marker summaries",
    "user": "user turns",
    "assistant": "assistant turns",
    "results": "results of tools",
    "persisted": "persisted stubs",
}
"""The bar's label of each kind (their first letters differ: the bar draws each part with it)."""

PREVIEW_CHARS = 60

ADDED_LABEL = "[added by tether, not typed]"
"""Before the label of a turn the wire passes added (`tether.wire.added_by_tether`): the
`Continue from where you stopped.` user turn, a `(no content)` placeholder, lost results."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRow:
    """One line of `/context`.

    Attributes:
        kind: what it is (see `RowKind`).
        tokens: its estimated tokens.
        index: the turn's position in the wire view (None for system and tools).
        turn_id: the turn's id (None for system and tools).
        label: a short description: the text's start, the tool calls, a persisted output's size.
    """

    kind: RowKind
    tokens: int
    label: str
    index: int | None = None
    turn_id: str | None = None


def _preview(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= PREVIEW_CHARS else one[: PREVIEW_CHARS - 1] + "…"


def _row(index: int, turn: Turn) -> ContextRow:
    tokens = estimate_tokens((turn,))
    text = turn.text
    if is_marker(turn) or text.startswith(SUMMARY_HEADER):
        body = text[len(SUMMARY_HEADER) :].replace("<summary>", "").replace("</summary>", "")
        kind: RowKind = "summary"
        label = "summary: " + _preview(body)
    elif turn.tool_results:
        saved = [p for r in turn.tool_results if (p := persisted_output(r.text)) is not None]
        n = len(turn.tool_results)
        if saved:
            kind = "persisted"
            size = sum(s for s, _ in saved)
            label = f"{counted(n, 'tool result')}, {len(saved)} persisted ({size / 1024:.1f} KB on disk)"
        else:
            kind = "results"
            pruned = sum(1 for r in turn.tool_results if r.text.startswith(PRUNE_TAG))
            label = counted(n, "tool result") + (
                f", {pruned} pruned (recall brings them back)"
                if pruned
                else ": " + _preview(turn.tool_results[0].text)
            )
    elif turn.role == "assistant":
        kind = "assistant"
        calls = ", ".join(c.name for c in turn.tool_calls)
        label = _preview(text) + (f" [calls: {calls}]" if calls else "")
    else:
        kind = "user"
        label = _preview(text)
    if added_by_tether(turn):  # in the request, but nobody typed it: say who added it
        label = f"{ADDED_LABEL} {label}"
    return ContextRow(kind=kind, tokens=tokens, label=label, index=index, turn_id=turn.id)


def context_rows(
    view: Sequence[Turn], *, system_tokens: int, tools_tokens: int
) -> tuple[ContextRow, ...]:
    """The rows of `/context`: system, tools, then one per turn of `view` in order.

    Args:
        view: the wire view (`Agent.current_view()`: markers already rendered as summaries).
        system_tokens / tools_tokens: the system prompt's and the tool schemas' tokens.

    Returns:
        `2 + len(view)` rows; the turn rows' tokens are `estimate_tokens((turn,))` each.
    """
    rows = [
        ContextRow(kind="system", tokens=system_tokens, label="system prompt"),
        ContextRow(kind="tools", tokens=tools_tokens, label="tool schemas"),
    ]
    rows += [_row(i, t) for i, t in enumerate(view)]
    return tuple(rows)


def split_figure(rows: Sequence[ContextRow], tokens: int) -> tuple[ContextRow, ...]:
    """The rows with their estimates scaled to sum to `tokens` (the headline's figure, often
    the provider's own count): `/context` shows one total, each row its estimated share of it
    (trial5: the headline said ~14,775 and the rows 18,569). Largest remainders get the
    rounding; rows without tokens stay at 0. Unchanged when the rows estimate nothing."""
    total = sum(r.tokens for r in rows)
    if total <= 0 or tokens < 0 or total == tokens:
        return tuple(rows)
    exact = [r.tokens * tokens / total for r in rows]
    shares = [int(x) for x in exact]
    order = sorted(range(len(rows)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in order[: tokens - sum(shares)]:
        shares[i] += 1
    return tuple(replace(r, tokens=n) for r, n in zip(rows, shares, strict=True))


def context_parts(rows: Sequence[ContextRow]) -> list[tuple[str, int]]:
    """The rows' tokens summed per kind, in `KIND_ORDER` (every kind present, 0 when none),
    as `(PART_LABELS[kind], tokens)`."""
    sums = dict.fromkeys(KIND_ORDER, 0)
    for row in rows:
        sums[row.kind] += row.tokens
    return [(PART_LABELS[k], n) for k, n in sums.items()]


def cache_line(turns: Sequence[Turn]) -> str:
    """The session's prompt-cache hit rate for `/context`: cache reads / all prompt tokens,
    summed over the replies' usage (`Usage.cache_hit_rate`)."""
    total = Usage()
    for t in turns:
        if t.role == "assistant" and t.usage is not None:
            total = total + t.usage
    rate = total.cache_hit_rate
    if rate is None:
        return "prompt cache: no usage reported yet"
    return (
        f"prompt cache: {rate:.0%} hit".replace("%", " %")
        + f" ({total.cache_read_tokens:,} of {total.prompt_tokens:,} prompt tokens read from the"
        " cache this session)"
    )
