"""Tool-contributed settings (issue 39, audit row "tool-contributed settings schema"): a tool
declares its own settings' schema (`@tool(settings=Model)`), the user sets them under
`tools.settings.<tool>`, they are validated when the agent is built (a bad value is one line
naming the key), reach the call as `ctx.settings(Model)` — in process and in a folder tool's
worker — and `tether tool --list` shows the keys with their defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from kit.agents import make_agent
from kit.calls import make_call
from kit.cli import run_cli
from tether.errors import ConfigError
from tether.testing import Reply, ScriptedProvider, call
from tether.tools import ToolContext, scrubbed_env, tool
from tether.tools.direct import tool_lines
from tether.tools.exec.run import run_tool
from tether.tools.registry import ToolRegistry
from tether.tools.scan import scan_tool_folders
from tether.tools.tool_settings import validate_tool_settings


class Greeting(BaseModel):
    salutation: str = Field(default="hello", description="the first word")
    times: int = Field(default=1, ge=1, description="how often")


@tool(settings=Greeting)
def greet(name: str, ctx: ToolContext) -> str:
    """Greet someone."""
    s = ctx.settings(Greeting)
    return " ".join([s.salutation] * s.times) + f" {name}"


def _answer(settings: Mapping[str, Any], tmp_path: Path) -> str:
    provider = ScriptedProvider([Reply(blocks=(call("greet", name="bo"),)), "done"])
    agent = make_agent(provider, tmp_path, settings=settings, tools=[greet])
    agent.run_sync("greet bo")
    (result,) = [b for t in agent.history for b in t.tool_results]
    return result.text


def test_the_settings_reach_the_call_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    set_ = {"tools": {"settings": {"greet": {"salutation": "hi", "times": 2}}}}
    assert _answer(set_, tmp_path) == "hi hi bo"
    assert _answer({}, tmp_path) == "hello bo"
    other = {"tools": {"settings": {"not_loaded": {"anything": 1}}}}  # a tool not here: kept
    assert _answer(other, tmp_path) == "hello bo"


def test_a_bad_value_is_one_line_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_tool_settings([greet], {"greet": {"times": 0}})
    assert str(caught.value).startswith("tools.settings.greet.times: ")
    home = tmp_path / "home"
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text('{"tools": {"settings": {"read": {}}}}')
    ok = run_cli(["tool", "--list"], home, TETHER_CONFIG_DIR=str(config))
    assert ok.returncode == 0, ok.stderr  # a tool without settings ignores its entry


FOLDER_TOOL = """
from pydantic import BaseModel
from tether.tools import ToolContext, tool


class Limits(BaseModel):
    rows: int = 10


@tool(settings=Limits)
def query(sql: str, ctx: ToolContext) -> str:
    \"\"\"Run a query.\"\"\"
    return f"{sql} LIMIT {ctx.settings(Limits).rows}"
"""


async def test_a_folder_tool_gets_its_settings_in_its_worker(tmp_path: Path) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "db.py").write_text(FOLDER_TOOL)
    registry = scan_tool_folders([folder]).registry
    root = tmp_path / "ws"
    root.mkdir()
    values = validate_tool_settings(registry, {"query": {"rows": 3}})
    ctx = replace(ToolContext.create(root.resolve(), env=scrubbed_env()), tool_settings=values)
    r = await run_tool(registry, make_call("query", sql="SELECT 1"), ctx)
    assert not r.block.is_error, r.block.text
    assert r.block.text == "SELECT 1 LIMIT 3"


def test_the_tool_list_shows_each_key_and_default() -> None:
    rows = tool_lines(ToolRegistry([greet]))
    assert any("tools.settings.greet.salutation = \"hello\"  the first word" in r for r in rows)
    assert any("tools.settings.greet.times = 1  how often" in r for r in rows)
