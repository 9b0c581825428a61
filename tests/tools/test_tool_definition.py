"""Tool definition: schema from the signature, docstring descriptions, the registry."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field

from tether.tools import Tool, ToolContext, ToolRegistry, builtin_tools, tool
from tether.tools._schema import parse_docstring


def test_schema_from_signature_and_docstring() -> None:
    @tool(safe=True)
    def find(
        query: str,
        ctx: ToolContext,
        limit: Annotated[int, Field(ge=1)] = 10,
        mode: Literal["fast", "full"] = "fast",
    ) -> str:
        """Find things.

        Longer explanation
        over two lines.

        Args:
            query: what to look for,
                continued here.
            limit (int): at most this many.

        Returns:
            The hits.
        """
        return query

    assert isinstance(find, Tool)
    assert find.name == "find" and find.safe and not find.is_async
    assert find.context_param == "ctx"
    p = find.parameters
    assert p["type"] == "object" and "$schema" not in p and "title" not in p
    assert set(p["properties"]) == {"query", "limit", "mode"}
    assert p["required"] == ["query"]
    assert p["properties"]["query"] == {
        "type": "string",
        "description": "what to look for, continued here.",
    }
    assert p["properties"]["limit"]["minimum"] == 1
    assert p["properties"]["limit"]["default"] == 10
    assert p["properties"]["mode"]["enum"] == ["fast", "full"]
    assert "Args" not in find.description and "query:" not in find.description
    assert find.description.startswith("Find things.\n\nLonger explanation over two lines.")
    assert "Returns:" in find.description
    spec = find.spec()
    assert spec is find.spec()  # cached
    assert (spec.name, spec.parameters) == ("find", p)


def test_tool_forms_and_async() -> None:
    async def ping() -> str:
        return "pong"

    t = tool(ping, name="ping2", description="d", timeout_s=3, inline=False)
    assert (t.name, t.description, t.timeout_s, t.is_async) == ("ping2", "d", 3, True)
    assert t.parameters["properties"] == {}
    assert tool(lambda: 1, name="x").description == "x"  # no docstring: falls back on the name


def test_bad_definitions() -> None:
    def star(*args: int) -> None: ...

    with pytest.raises(ValueError, match=r"\*args"):
        tool(star)
    with pytest.raises(ValueError, match="invalid tool name"):
        tool(lambda: 1, name="has space")


def test_parse_docstring_without_args() -> None:
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("One line.") == ("One line.", {})


def test_registry() -> None:
    reg = ToolRegistry(builtin_tools())
    assert reg.names() == (
        "read", "write", "edit", "ls", "glob", "grep", "bash", "shell_output", "shell_kill", "todo"
    )
    specs = reg.specs()
    assert specs is reg.specs()  # cached: asked every turn
    assert [s.name for s in specs] == list(reg.names())
    with pytest.raises(ValueError, match="duplicate"):
        reg.add(builtin_tools()[0])
    extra = tool(lambda: "x", name="extra")
    reg.add(extra)
    assert reg.specs()[-1].name == "extra" and reg.get("extra") is extra
    assert reg.get("nope") is None and "extra" in reg and len(reg) == 11
    reg.remove("extra")
    assert "extra" not in reg.names()
    safe = {t.name for t in reg if t.safe}
    assert safe == {"read", "ls", "glob", "grep", "shell_output", "shell_kill", "todo"}
