"""Picking events and texts out of what a run produced."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from tether.agent.events import AgentEvent, ToolResultEvent
from tether.messages import TextBlock, Turn

E = TypeVar("E")


def of_type(events: Iterable[object], kind: type[E]) -> list[E]:
    """The events that are instances of `kind`, in order."""
    return [e for e in events if isinstance(e, kind)]


def results(events: Iterable[AgentEvent]) -> list[ToolResultEvent]:
    """The tool results, in order."""
    return of_type(events, ToolResultEvent)


def jsonl(text: str) -> list[dict[str, Any]]:
    """Each non-blank line of `text` parsed as JSON (the CLI's event stream)."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def first_user_text(turns: Sequence[Turn]) -> str:
    """The text of the first user turn ("" when there is none)."""
    for t in turns:
        if t.role == "user":
            return "".join(b.text for b in t.content if isinstance(b, TextBlock))
    return ""
