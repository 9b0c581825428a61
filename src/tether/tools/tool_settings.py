"""Tool-contributed settings: a tool declares the schema of its own settings
(`@tool(settings=Model)`, a pydantic model), the user sets them under `tools.settings.<tool>`,
and they are validated by that model when the agent is built.

Owns: `validate_tool_settings` (the raw section → each tool's validated settings, or one
`ConfigError` line naming the key) and `settings_lines` (a tool's keys, defaults and
descriptions, for `tether tool --list`).
Does not own: the settings files (`tether.settings`), handing the values to a call
(`ToolContext.settings`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from tether.errors import ConfigError
from tether.tools.base import Tool


def validate_tool_settings(
    tools: Iterable[Tool], raw: Mapping[str, Mapping[str, Any]]
) -> dict[str, BaseModel]:
    """Each tool with a settings model: its `raw[name]` (defaults when absent) validated.
    Names of tools not among `tools` are left alone (a tool folder may not be loaded).

    Raises:
        ConfigError: a value the tool's model refuses (`tools.settings.<tool>.<key>: why`).
    """
    out: dict[str, BaseModel] = {}
    for tool in tools:
        if tool.settings is None:
            continue
        try:
            out[tool.name] = tool.settings.model_validate(dict(raw.get(tool.name, {})))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            key = f"tools.settings.{tool.name}" + (f".{where}" if where else "")
            raise ConfigError(f"{key}: {first['msg']}") from None
    return out


def settings_lines(tool: Tool) -> list[str]:
    """`tools.settings.<tool>.<key> = <default>  <description>` for each key of its model."""
    if tool.settings is None:
        return []
    lines: list[str] = []
    for key, field in tool.settings.model_fields.items():
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        shown = "(required)" if field.is_required() else json.dumps(default, default=str)
        about = f"  {field.description}" if field.description else ""
        lines.append(f"tools.settings.{tool.name}.{key} = {shown}{about}")
    return lines
