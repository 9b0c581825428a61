"""The tool registry: the tools a run offers, by name.

Owns: `ToolRegistry` (add/get/names/specs; the specs tuple is cached since the loop asks for it
every turn). Does not own: running calls (`tether.tools.exec.run`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tether.providers.base import ToolSpec
from tether.tools.base import Tool


class ToolRegistry:
    """An ordered set of tools with unique names.

    Args:
        tools: the initial tools, in offering order.

    Raises:
        ValueError: two tools share a name.
    """

    __slots__ = ("_names", "_safe_specs", "_specs", "_tools")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        self._safe_specs: tuple[ToolSpec, ...] | None = None
        self._names: tuple[str, ...] | None = None
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> None:
        """Register `tool`.

        Raises:
            ValueError: a tool with the same name is already registered.
        """
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name {tool.name!r}")
        self._tools[tool.name] = tool
        self._specs = None
        self._safe_specs = None
        self._names = None

    def remove(self, name: str) -> None:
        """Unregister the tool `name`.

        Raises:
            KeyError: no such tool.
        """
        del self._tools[name]
        self._specs = None
        self._safe_specs = None
        self._names = None

    def get(self, name: str) -> Tool | None:
        """The tool called `name` as the model may call it, or None (a `secret` tool is None
        here: `user_get` finds it)."""
        found = self._tools.get(name)
        return None if found is None or found.secret else found

    def user_get(self, name: str) -> Tool | None:
        """The tool called `name`, `secret` ones included (the user's direct calls)."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """The tool names, in registration order."""
        if self._names is None:
            self._names = tuple(self._tools)
        return self._names

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as offered to the model, in registration order (cached)."""
        if self._specs is None:
            self._specs = tuple(t.spec() for t in self._tools.values() if not t.secret)
        return self._specs

    def safe_specs(self) -> tuple[ToolSpec, ...]:
        """The specs of the `safe` (read-only) tools only, in registration order (cached)."""
        if self._safe_specs is None:
            self._safe_specs = tuple(
                t.spec() for t in self._tools.values() if t.safe and not t.secret
            )
        return self._safe_specs

    def model_names(self) -> tuple[str, ...]:
        """The names of the tools the model may call (`secret` ones left out)."""
        return tuple(n for n, t in self._tools.items() if not t.secret)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)
