"""The pure parts of MCP: offered tool names (property tests), `${VAR}` expansion, the
settings shape, a stdio server's environment, and the result mapping."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mcp_types as mt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tether.credentials import store_key
from tether.errors import ConfigError
from tether.mcp.config import default_lookup, expand, resolve_server, server_env, tool_names
from tether.mcp.convert import call_result_parts, tool_schema
from tether.messages import ImageBlock, TextBlock
from tether.settings import AgentConfig
from tether.settings.model import McpServerSettings

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@given(
    server=st.text(min_size=1, max_size=80),
    tools=st.lists(st.text(min_size=1, max_size=100), max_size=30),
    taken=st.lists(st.text(min_size=1, max_size=70), max_size=10),
)
def test_offered_names_are_valid_unique_and_free(
    server: str, tools: list[str], taken: list[str]
) -> None:
    out = tool_names(server, tools, taken)
    assert all(NAME.match(n) for n in out)
    assert not set(out) & set(taken)
    assert sorted(out.values()) == sorted(set(tools))  # every tool offered once
    assert len(set(out)) == len(out)


def test_offered_names_read_well() -> None:
    out = tool_names("git hub", ["search.code", "x" * 100, "x" * 100 + "y"])
    names = list(out)
    assert names[0] == "mcp__git_hub__search_code"
    assert len(names[1]) == len(names[2]) == 64 and names[1] != names[2]


def test_expansion_from_env_then_credential_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_T_A", "from-env")
    store_key("TETHER_T_B", "from-store", store="file")
    assert expand("a=${TETHER_T_A} b=${TETHER_T_B}", default_lookup, "w") == (
        "a=from-env b=from-store"
    )
    with pytest.raises(ConfigError, match=r"mcp.servers.x: \$\{TETHER_T_NONE\}"):
        resolve_server(
            "x", McpServerSettings(url="https://h/${TETHER_T_NONE}"), Path("/")
        )


def test_settings_shape() -> None:
    s = AgentConfig.model_validate(
        {"mcp": {"servers": {"gh": {"url": "https://x/mcp", "timeout": "90s"}}}}
    )
    assert s.mcp.servers["gh"].timeout_s == 90 and s.mcp.servers["gh"].startup_timeout_s == 10
    assert s.mcp.start == "lazy" and s.mcp.servers["gh"].network
    for bad in (
        {"command": "x", "url": "https://x"},
        {},
        {"url": "https://x", "env": {"A": "b"}},
        {"command": "x", "headers": {"A": "b"}},
        {"url": "ftp://x"},
    ):
        with pytest.raises(ValidationError):
            McpServerSettings.model_validate(bad)
    with pytest.raises(ValidationError):
        AgentConfig.model_validate({"mcp": {"servers": {"bad name!": {"command": "x"}}}})


def test_server_env_drops_secrets_unless_named(tmp_path: Path) -> None:
    spec = resolve_server(
        "s",
        McpServerSettings(command="x", env={"GITHUB_TOKEN": "given"}),
        tmp_path,
        lookup=lambda _: None,
    )
    base = {"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "GITHUB_TOKEN": "ambient", "HOME": "/h"}
    assert server_env(spec, base=base) == {"PATH": "/bin", "HOME": "/h", "GITHUB_TOKEN": "given"}


def test_result_mapping() -> None:
    result = mt.CallToolResult(
        content=[
            mt.TextContent(text='{"a": 1}'),
            mt.ImageContent(data="aW1n", mime_type="image/png"),
            mt.AudioContent(data="YXVkaW8=", mime_type="audio/wav"),
            mt.EmbeddedResource(
                resource=mt.BlobResourceContents(uri="f://b", blob="AAAA", mime_type="application/x")
            ),
        ],
        structured_content={"a": 1},
        is_error=True,
    )
    parts, is_error = call_result_parts(result)
    assert is_error
    assert parts[0] == TextBlock(text='{"a": 1}')  # structuredContent not repeated
    assert parts[1] == ImageBlock(media_type="image/png", data="aW1n")
    assert isinstance(parts[2], TextBlock) and "audio/wav" in parts[2].text
    assert isinstance(parts[3], TextBlock) and "3 bytes" in parts[3].text
    assert len(parts) == 4
    parts, _ = call_result_parts(mt.CallToolResult(content=[], structured_content=[1, 2]))
    assert [json.loads(p.text) for p in parts if isinstance(p, TextBlock)] == [[1, 2]]


def test_schema_passthrough() -> None:
    schema = {"$schema": "x", "type": "object", "properties": {"q": {"type": "string"}}}
    assert tool_schema(schema) == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert tool_schema({"type": "object"}) == {"type": "object", "properties": {}}


def test_a_server_named_under_tmp_stays_visible_read_only(tmp_path: Path) -> None:
    """The sandbox's private /tmp would hide a server script checked out under /tmp: the
    folders of the files its command line names there stay visible (read-only); other paths
    and /tmp itself are not added."""
    from tether.mcp.runtime import server_runtime

    script = tmp_path / "srv" / "server.py"
    script.parent.mkdir()
    script.write_text("")
    argv = ["/usr/bin/python3", str(script), "--flag", "/tmp", "rel/x.py"]
    got = server_runtime(argv, {"PATH": "/usr/bin:/bin"}, tmp_path)
    if tmp_path.resolve().is_relative_to(Path("/tmp").resolve()):
        assert got == (script.parent.resolve(),)
    else:
        assert got == ()
