"""The ACP translations (`tether.acp.convert`): prompts in; tool calls, results, stored turns,
plans, permission answers and MCP server entries out; each checked against the SDK's models."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from acp import schema
from tether.acp import convert
from tether.errors import ConfigError
from tether.messages import (
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.providers.images import image_facts
from tether.settings import AgentConfig
from tether.tools import ToolContext, scrubbed_env


def _image(fmt: str) -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (3, 2), (1, 2, 3)).save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode("ascii")


def test_prompt_blocks_keep_text_images_and_attached_files() -> None:
    png, jpeg = _image("PNG"), _image("JPEG")
    blocks = convert.prompt_blocks(
        [
            schema.TextContentBlock(type="text", text="look at this"),
            schema.ImageContentBlock(type="image", data=png, mime_type="image/png"),
            schema.EmbeddedResourceContentBlock(
                type="resource",
                resource=schema.TextResourceContents(uri="file:///p/a.py", text="x = 1"),
            ),
            schema.EmbeddedResourceContentBlock(
                type="resource",
                resource=schema.BlobResourceContents(
                    uri="file:///p/b.jpg", blob=jpeg, mime_type="image/jpeg"
                ),
            ),
            schema.ResourceContentBlock(type="resource_link", name="c.md", uri="file:///p/c.md"),
        ]
    )
    assert blocks == [
        TextBlock(text="look at this"),
        ImageBlock(media_type="image/png", data=png),
        TextBlock(text='<context uri="file:///p/a.py">\nx = 1\n</context>'),
        ImageBlock(media_type="image/jpeg", data=jpeg),
        TextBlock(text="(see c.md: file:///p/c.md)"),
    ]


def test_an_image_block_is_labelled_by_its_bytes_not_by_the_client() -> None:
    (block,) = convert.prompt_blocks(
        [schema.ImageContentBlock(type="image", data=_image("JPEG"), mime_type="image/png")]
    )
    assert isinstance(block, ImageBlock) and block.media_type == "image/jpeg"


@given(st.binary(max_size=64) | st.text(max_size=40))
@example("!!!notbase64")
@example("aGVsbG8=")
@example("iVBORw0=")  # a PNG signature cut short
def test_an_image_block_is_an_image_or_a_one_line_refusal(data: bytes | str) -> None:
    """Whatever a client puts in an image block: a checked image or one `ConfigError` line
    (what the server answers as -32602), never bytes a provider would 400 on."""
    text = base64.b64encode(data).decode("ascii") if isinstance(data, bytes) else data
    block = schema.ImageContentBlock(type="image", data=text, mime_type="image/png")
    try:
        (out,) = convert.prompt_blocks([block])
    except ConfigError as exc:
        assert "\n" not in str(exc) and "block 1 of the prompt (image)" in str(exc)
    else:  # tiny random bytes are never an image Pillow reads; if one ever were, it is checked
        assert isinstance(out, ImageBlock)
        assert image_facts(base64.b64decode(out.data)).media_type == out.media_type


def test_write_and_edit_calls_carry_their_diff(tmp_path: Path) -> None:
    ctx = ToolContext.create(tmp_path, env=scrubbed_env())
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    new = convert.file_change(ctx, "write", {"path": "n.txt", "content": "hi"})
    assert new == (str(ctx.root / "n.txt"), None, "hi")
    edit = convert.file_change(
        ctx, "edit", {"path": "a.txt", "old_string": "two", "new_string": "2"}
    )
    assert edit == (str(ctx.root / "a.txt"), "one\ntwo\n", "one\n2\n")
    assert (
        convert.file_change(ctx, "edit", {"path": "a.txt", "old_string": "zz", "new_string": ""})
        is None
    )
    assert convert.file_change(ctx, "write", {"path": "../out.txt", "content": "x"}) is None
    start = convert.call_start("c1", "edit", {"path": "a.txt"}, ctx.root, change=edit)
    wire = start.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert schema.ToolCallStart.model_validate(wire) == start
    assert wire["kind"] == "edit" and wire["locations"] == [{"path": str(ctx.root / "a.txt")}]
    assert wire["content"][0]["oldText"] == "one\ntwo\n"


def test_kinds_and_titles() -> None:
    assert convert.tool_kind("bash") == "execute"
    assert convert.tool_kind("web_fetch") == "fetch"
    assert convert.tool_kind("mcp__x__y") == "other"
    assert convert.tool_title("bash", {"command": "pytest -q\necho done"}) == "bash: pytest -q"
    assert convert.tool_title("web_fetch", {"url": "https://a.b/"}) == "web_fetch https://a.b/"


def test_a_stored_session_replays_in_order() -> None:
    call = ToolCallBlock(id="c1", name="read", arguments={"path": "x.py"})
    turns = [
        Turn(id="u1", role="user", content=(TextBlock(text="read x"),)),
        Turn(
            id="a1",
            role="assistant",
            content=(ThinkingBlock(text="hmm"), TextBlock(text="reading"), call),
        ),
        Turn(
            id="u2",
            role="user",
            content=(ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="1 line"),)),),
        ),
        Turn(id="a2", role="assistant", content=(TextBlock(text="done"),)),
    ]
    updates = list(convert.replay_updates(turns, Path("/p")))
    assert [u.session_update for u in updates] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert isinstance(updates[4], schema.ToolCallProgress) and updates[4].status == "completed"
    for u in updates:  # each one is a valid session/update payload
        schema.SessionNotification.model_validate(
            {
                "sessionId": "s",
                "update": u.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
        )


def test_permission_answers() -> None:
    assert convert.decision_for("allow_once").allow
    assert convert.decision_for("allow_always").remember
    assert not convert.decision_for("reject_once").allow
    cancelled = convert.decision_for(None)
    assert not cancelled.allow and "cancelled" in cancelled.reason
    assert {o.option_id for o in convert.PERMISSION_OPTIONS} == {
        "allow_once",
        "allow_always",
        "reject_once",
    }


def test_stop_reasons() -> None:
    assert convert.stop_reason("max_turns") == "max_turn_requests"
    assert convert.stop_reason("prompt_denied") == "end_turn"
    assert convert.stop_reason("cancelled") == "cancelled"


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "text": st.text(min_size=1),
                "status": st.sampled_from(["pending", "in_progress", "done"]),
            }
        ),
        max_size=20,
    )
)
def test_plan_keeps_every_item_in_order(items: list[dict[str, str]]) -> None:
    plan = convert.plan_update(items)
    assert [e.content for e in plan.entries] == [i["text"] for i in items]
    assert [e.status for e in plan.entries] == [
        "completed" if i["status"] == "done" else i["status"] for i in items
    ]


@example(names=["-"])  # found by this property: a name of only a dash
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=5))
def test_client_mcp_servers_become_valid_settings(names: list[str]) -> None:
    servers: list[schema.McpServerStdio | schema.HttpMcpServer | schema.SseMcpServer] = [
        schema.McpServerStdio(
            name=n, command="srv", args=["-x"], env=[schema.EnvVariable(name="K", value="v")]
        )
        for n in names
    ]
    servers.append(
        schema.HttpMcpServer(
            type="http",
            name="remote",
            url="https://mcp.example/x",
            headers=[schema.HttpHeader(name="Authorization", value="Bearer t")],
        )
    )
    servers.append(schema.SseMcpServer(type="sse", name="old", url="https://e/sse", headers=[]))
    entries, notes = convert.mcp_server_settings(servers)
    assert len(notes) == 1 and "SSE" in notes[0]
    cfg = AgentConfig().with_values({f"mcp.servers.{k}": v for k, v in entries.items()})
    assert set(cfg.mcp.servers) == set(entries)
    assert cfg.mcp.servers["remote"].headers == {"Authorization": "Bearer t"}
    assert all(s.env == {"K": "v"} for k, s in cfg.mcp.servers.items() if k != "remote")


def test_always_allow_adds_the_suggested_rules_else_allows_for_the_session() -> None:
    ruled = convert.decision_for("allow_always", ("bash(pytest *)",))
    assert ruled.allow and ruled.rules == ("bash(pytest *)",) and not ruled.remember
    assert convert.decision_for("allow_always", ()).remember


def test_a_sessions_commands_are_offered_and_a_slash_prompt_runs_one(tmp_path: Path) -> None:
    """The commands of the project-context feature reach ACP clients: listed for
    `available_commands_update`, expanded when a prompt is `/name args`."""
    import os

    from kit.agents import make_agent
    from tether.acp.server import command_prompt, session_commands
    from tether.errors import ConfigError
    from tether.testing import ScriptedProvider

    commands = Path(os.environ["TETHER_CONFIG_DIR"]) / "commands"
    commands.mkdir(parents=True, exist_ok=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greets\nargument-hint: NAME\n---\nSay hello to $1."
    )
    agent = make_agent(ScriptedProvider([]), tmp_path)
    offered = {c.name: c for c in session_commands(agent)}
    assert offered["greet"].description == "Greets"
    assert offered["greet"].input is not None and offered["greet"].input.root.hint == "NAME"
    assert command_prompt(agent, "/greet Ada") == "Say hello to Ada."
    assert command_prompt(agent, "plain words") == "plain words"
    with pytest.raises(ConfigError, match="unknown command /nope"):
        command_prompt(agent, "/nope")


@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4))
def test_a_json_object_line_passes_the_line_check(message: dict[str, object]) -> None:
    from tether.acp.stdio import bad_line_reply

    assert bad_line_reply(json.dumps(message).encode() + b"\n") is None


@given(st.text(max_size=40))
def test_every_other_line_gets_one_jsonrpc_error_with_a_null_id(text: str) -> None:
    from tether.acp.stdio import bad_line_reply

    try:
        is_object = isinstance(json.loads(text), dict)
    except ValueError:
        is_object = False
    reply = bad_line_reply(text.encode())
    if is_object or not text.encode().strip():
        assert reply is None
    else:
        assert reply is not None and reply["id"] is None
        assert reply["error"]["code"] in (-32700, -32600)
