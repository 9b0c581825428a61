"""Durable per-tool state: small values a tool keeps across its calls and across a resume.

Owns: `ToolStates` (every tool's values in one session, folded from the session's `tool_state`
events, each change recorded as one more event: the session file stays append-only) and
`ToolState` (one tool's view of it: `get`, `set`, `delete`, `keys`), the per-value budget
(`MAX_STATE_VALUE_BYTES`, 64 KiB of JSON) and its error.
A tool reaches its own view as `ctx.state` (`tether.tools.context.ToolContext`); another tool's
values are out of reach. State is for flags, ids, counters and cursors; a payload belongs in the
tool's result or in files the tool owns.
Does not own: writing the event (the agent hands a `record` callback: `AgentSession.record_event`)
or reading the session file (`tether.session`).

On disk, one event per change:
`{"kind": "tool_state", "data": {"tool": NAME, "key": KEY, "value": JSON}}`, or
`{"tool": NAME, "key": KEY, "deleted": true}`. The last event per (tool, key) wins.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tether.errors import ToolError

STATE_EVENT = "tool_state"
"""The session event kind of one state change."""
MAX_STATE_VALUE_BYTES = 64 * 1024
"""The largest value a tool may keep under one key, as compact UTF-8 JSON (bytes)."""
MAX_KEY_CHARS = 200

Record = Callable[[str, dict[str, object]], None]
"""Persists one session event: `(kind, data)`."""


def _encoded(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ToolError(f"tool state: the value is not plain JSON ({e})") from None


class ToolStates:
    """The per-tool state of one session.

    Args:
        record: persists each change as a session event (None: kept in memory only, an
            in-memory session).
        initial: `{tool: {key: value}}` to start from (see `from_events`).
        max_value_bytes: the per-value budget.
    """

    def __init__(
        self,
        record: Record | None = None,
        initial: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        max_value_bytes: int = MAX_STATE_VALUE_BYTES,
    ) -> None:
        self._record = record
        self._values: dict[str, dict[str, Any]] = {
            tool: dict(values) for tool, values in (initial or {}).items()
        }
        self.max_value_bytes = max_value_bytes

    @classmethod
    def from_events(
        cls, events: Iterable[tuple[str | None, Mapping[str, Any]]], record: Record | None = None
    ) -> ToolStates:
        """The state a session's `(kind, data)` events leave (the last change per tool and key
        wins; malformed `tool_state` events are skipped), recording new changes with
        `record`."""
        values: dict[str, dict[str, Any]] = {}
        for kind, data in events:
            if kind != STATE_EVENT:
                continue
            tool, key = data.get("tool"), data.get("key")
            if not isinstance(tool, str) or not isinstance(key, str):
                continue
            if data.get("deleted") is True:
                values.get(tool, {}).pop(key, None)
            elif "value" in data:
                values.setdefault(tool, {})[key] = data["value"]
        return cls(record, values)

    def for_tool(self, name: str) -> ToolState:
        """Tool `name`'s own view."""
        return ToolState(self, name)

    def read(self, tool: str, key: str) -> Any:
        """Tool `tool`'s value under `key` (a copy), or None."""
        return copy.deepcopy(self._values.get(tool, {}).get(key))

    def write(self, tool: str, key: str, value: object) -> None:
        """Keep `value` for tool `tool` under `key` (see `ToolState.set`)."""
        if not key or len(key) > MAX_KEY_CHARS:
            raise ToolError(
                f"tool state: a key is a non-empty string of at most {MAX_KEY_CHARS} characters"
            )
        text = _encoded(value)
        size = len(text.encode("utf-8"))
        if size > self.max_value_bytes:
            raise ToolError(
                f"tool state: the value for {key!r} is {size} bytes of JSON, over the "
                f"{self.max_value_bytes // 1024} KiB a value may hold; keep flags, ids and "
                "cursors in state, and a payload in the result or a file"
            )
        stored = json.loads(text)  # the JSON round trip: what a resume will read
        if self._values.get(tool, {}).get(key, object()) == stored:
            return
        self._values.setdefault(tool, {})[key] = stored
        if self._record is not None:
            self._record(STATE_EVENT, {"tool": tool, "key": key, "value": stored})

    def remove(self, tool: str, key: str) -> None:
        """Forget tool `tool`'s `key`."""
        values = self._values.get(tool, {})
        if key not in values:
            return
        del values[key]
        if self._record is not None:
            self._record(STATE_EVENT, {"tool": tool, "key": key, "deleted": True})

    def keys_of(self, tool: str) -> list[str]:
        """The keys tool `tool` has set."""
        return list(self._values.get(tool, {}))

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every tool's values (a deep copy)."""
        return copy.deepcopy(self._values)


class ToolState:
    """One tool's durable values (`ctx.state`): JSON values under string keys, each at most
    `MAX_STATE_VALUE_BYTES` as JSON; every change is saved in the session at once."""

    __slots__ = ("_states", "tool")

    def __init__(self, states: ToolStates, tool: str) -> None:
        self._states = states
        self.tool = tool

    def get(self, key: str, default: Any = None) -> Any:
        """The value under `key` (a copy), or `default`."""
        value = self._states.read(self.tool, key)
        return default if value is None else value

    def set(self, key: str, value: object) -> None:
        """Keep `value` (plain JSON: dicts, lists, strings, numbers, booleans, None) under `key`.

        Raises:
            ToolError: `value` is not plain JSON, or its JSON is over the per-value budget
                (64 KiB); the message says which, and nothing is kept (the old value stays).
        """
        self._states.write(self.tool, key, value)

    def delete(self, key: str) -> None:
        """Forget `key` (nothing happens when it is not set)."""
        self._states.remove(self.tool, key)

    def keys(self) -> list[str]:
        """The keys this tool has set, in the order they were first set."""
        return self._states.keys_of(self.tool)
