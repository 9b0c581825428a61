"""The `todo` tool: the model keeps its task list, the whole list on each call.

Owns: the `todo` tool (`{"items": [{"text", "status": "pending"|"in_progress"|"done"}]}`;
`safe`: it changes no file, so it is offered in safe and plan mode), `TodoItem`, and
`latest_todo` (the list's latest state in a history: the items of the last successful call;
the TUI's panel on resume and compaction's restore read it).
Does not own: the `todo` event (`tether.agent.turn.tool_calls` emits it after a successful call),
restoring the list after a compaction (`tether.agent.turn.compacting`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from tether.messages import Turn
from tether.tools.base import tool

TODO_TOOL = "todo"
Status = Literal["pending", "in_progress", "done"]
MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class TodoItem(BaseModel):
    """One task of the list."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    text: Annotated[str, Field(min_length=1, description="The task, in a few words.")]
    status: Status = Field(description="pending, in_progress (one at a time) or done.")


def render(items: Sequence[dict[str, str]]) -> str:
    """The list as lines: `[x] done task`, `[~] the current one`, `[ ] pending`."""
    return "\n".join(f"{MARKS.get(i.get('status', ''), '[ ]')} {i.get('text', '')}" for i in items)


@tool(name=TODO_TOOL, safe=True, inline=True)
def todo(items: Annotated[list[TodoItem], Field(max_length=100)]) -> str:
    """Keep your task list for this work: give the WHOLE list each time (it replaces the last
    one), with each task's status. Use it for work of several steps: write the list first,
    mark one task in_progress before starting it and done as soon as it is finished. The user
    sees the list.

    Args:
        items: every task, in order, with its status.
    """
    done = sum(1 for i in items if i.status == "done")
    shown = render([i.model_dump() for i in items]) if items else "(empty)"
    return f"todo list updated ({done}/{len(items)} done):\n{shown}"


def latest_todo(history: Sequence[Turn]) -> tuple[dict[str, str], ...] | None:
    """The items of the last `todo` call in `history` whose result is not an error, or None
    when there is none (looked for from the end)."""
    failed: set[str] = set()
    for turn in reversed(history):
        failed.update(r.tool_call_id for r in turn.tool_results if r.is_error)
        for call in reversed(turn.tool_calls):
            if call.name != TODO_TOOL or call.invalid or call.id in failed:
                continue
            items = call.arguments.get("items")
            if isinstance(items, list):
                return latest_todo_items(cast(list[Any], items))
    return None


def latest_todo_items(items: Sequence[Any]) -> tuple[dict[str, str], ...]:
    """A `todo` call's `items` argument as plain `{"text", "status"}` dicts."""
    out: list[dict[str, str]] = []
    for raw in items:
        if isinstance(raw, dict):
            item = cast(dict[str, Any], raw)
            out.append({"text": str(item.get("text", "")), "status": str(item.get("status", "pending"))})
    return tuple(out)
