"""The `recall` tool: the verbatim text of turns a compaction elided or whose tool results
were pruned from the wire view (an edge: a tool).

Owns: `recall_text` (pure: turns by id or id range, rendered in full, paged by characters) and
`recall_tool(history)` (the tool the model calls). It reads the agent's full stored history,
not the wire view, so every turn a marker elided stays retrievable: compaction loses nothing.
Does not own: what is elided (`tether.wire.markers`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Annotated

from pydantic import Field

from tether.compaction.prompt import render_turn
from tether.errors import ToolError
from tether.messages import Turn
from tether.tools.base import Tool, tool

RECALL_TOOL = "recall"
"""The tool's name."""

DEFAULT_LIMIT = 8_000
"""Characters returned per page by default."""


def _render(turn: Turn) -> str:
    body = render_turn(turn, max_result_chars=sys.maxsize)
    return f"--- turn {turn.id} ({turn.role}) ---\n{body[len(turn.role) + 2 :]}"


def recall_text(
    history: Sequence[Turn],
    turn_id: str,
    last_turn_id: str | None = None,
    *,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
) -> str:
    """The full text of turn `turn_id` (through `last_turn_id`, inclusive, in stored order),
    characters `[offset, offset + limit)`, with a paging note when more remains.

    Raises:
        ToolError: an unknown id, or a range whose end comes before its start.
    """
    index = {t.id: i for i, t in enumerate(history)}
    if turn_id not in index:
        raise ToolError(f"no turn with id {turn_id!r} in this session")
    lo = hi = index[turn_id]
    if last_turn_id is not None:
        if last_turn_id not in index:
            raise ToolError(f"no turn with id {last_turn_id!r} in this session")
        hi = index[last_turn_id]
        if hi < lo:
            raise ToolError(f"{last_turn_id!r} comes before {turn_id!r}")
    full = "\n\n".join(_render(t) for t in history[lo : hi + 1])
    page = full[offset : offset + limit]
    end = offset + len(page)
    if end < len(full):
        page += f"\n[chars {offset}-{end} of {len(full)}; call recall again with offset={end}]"
    elif not page:
        page = f"[offset {offset} is past the end ({len(full)} chars)]"
    return page


def recall_tool(history: Callable[[], Sequence[Turn]]) -> Tool:
    """The `recall` tool over `history()` (e.g. `lambda: agent.history`)."""

    def recall(
        turn_id: str,
        last_turn_id: str | None = None,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=100_000)] = DEFAULT_LIMIT,
    ) -> str:
        """Read earlier turns verbatim that a context summary replaced, or a tool result
        that was pruned from the context. The summary names the turn ids it covers ("Turns
        covered: <first>…<last>"); a pruned result says "recall turn <id>".

        Args:
            turn_id: the id of the turn to read (or the first of a range).
            last_turn_id: the last id of a range, inclusive.
            offset: the first character to return (for paging).
            limit: how many characters to return at most.
        """
        return recall_text(history(), turn_id, last_turn_id, offset=offset, limit=limit)

    return tool(recall, name=RECALL_TOOL, safe=True, inline=True)
