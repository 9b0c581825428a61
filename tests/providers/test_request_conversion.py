"""Wire view → the exact JSON body each adapter sends (captured in the mocked transport)."""

from __future__ import annotations

import base64

import pytest

from kit.replay import Server, run, sse, sse_response
from tether.errors import ConfigError
from tether.messages import (
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    text_turn,
    tool_result,
)
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest, ToolSpec
from tether.providers.openai_chat import OpenAIChatProvider

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()  # the signature the wire checks (wire.images)
PDF = base64.b64encode(b"%PDF-1.4 fake").decode()
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}

WIRE = (
    Turn(
        id="u1",
        role="user",
        content=(
            TextBlock(text="Weather in Paris and Rome?"),
            ImageBlock(media_type="image/png", data=PNG),
        ),
    ),
    Turn(
        id="a1",
        role="assistant",
        content=(
            ThinkingBlock(text="Two cities.", signature="sig-1", producer="anthropic"),
            RedactedThinkingBlock(data="opaque=="),
            TextBlock(text="Let me check."),
            ToolCallBlock(id="c1", name="get_weather", arguments={"city": "Paris"}),
            ToolCallBlock(id="c2", name="get_weather", arguments={"city": "Rome"}),
        ),
    ),
    Turn(
        id="u2",
        role="user",
        content=(
            TextBlock(text="Also, be quick."),
            tool_result("c1", "18C sunny"),
            ToolResultBlock(tool_call_id="c2", content=(TextBlock(text="timeout"),), is_error=True),
        ),
    ),
    text_turn("a2", "assistant", "Paris 18C; Rome unknown."),
    Turn(
        id="u3",
        role="user",
        content=(
            DocumentBlock(media_type="application/pdf", data=PDF, title="report.pdf"),
            TextBlock(text="Summarise."),
        ),
    ),
)

REQUEST = ModelRequest(
    model="the-model",
    messages=WIRE,
    system="Be brief.",
    tools=(ToolSpec(name="get_weather", description="Weather for a city.", parameters=SCHEMA),),
    max_output_tokens=512,
    temperature=0.2,
)

OPENAI_OK = sse(
    [
        '{"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
        '"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}',
        "[DONE]",
    ],
    named=False,
)
ANTHROPIC_OK = sse(
    [
        '{"type":"message_start","message":{"id":"msg","type":"message","role":"assistant",'
        '"model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
        '"usage":{"input_tokens":1,"output_tokens":1}}}',
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}',
        '{"type":"content_block_stop","index":0}',
        '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
        '"usage":{"output_tokens":2}}',
        '{"type":"message_stop"}',
    ],
    named=True,
)


async def test_openai_chat_request_body() -> None:
    server = Server([sse_response(OPENAI_OK)])
    r = await run(OpenAIChatProvider("default", client=server.openai()), REQUEST)
    assert r.turn.text == "ok"
    (body,) = server.requests
    assert body == {
        "model": "the-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 512,
        "temperature": 0.2,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": SCHEMA,
                },
            }
        ],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather in Paris and Rome?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                ],
            },
            {
                # thinking and redacted thinking are not sent on this API
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
            # tool messages first, in order, then the user text of the same turn
            {"role": "tool", "tool_call_id": "c1", "content": "18C sunny"},
            {"role": "tool", "tool_call_id": "c2", "content": "timeout"},
            {"role": "user", "content": "Also, be quick."},
            {"role": "assistant", "content": "Paris 18C; Rome unknown."},
            {
                "role": "user",
                "content": [
                    {
                        "type": "file",
                        "file": {
                            "file_data": f"data:application/pdf;base64,{PDF}",
                            "filename": "report.pdf",
                        },
                    },
                    {"type": "text", "text": "Summarise."},
                ],
            },
        ],
    }


async def test_openai_compatible_server_uses_max_tokens() -> None:
    server = Server([sse_response(OPENAI_OK)])
    provider = OpenAIChatProvider("local", client=server.openai("http://127.0.0.1:9/v1"))
    request = ModelRequest(
        model="local", messages=(text_turn("u", "user", "hi"),), max_output_tokens=64
    )
    await run(provider, request)
    (body,) = server.requests
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
    assert "tools" not in body and "temperature" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_openai_assistant_tool_call_only_has_empty_string_content() -> None:
    """Never null: llama-cpp-python's server answers HTTP 500 to it (OpenAI accepts "")."""
    server = Server([sse_response(OPENAI_OK)])
    wire = (
        text_turn("u", "user", "go"),
        Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name="t", arguments={}),)),
        Turn(id="u2", role="user", content=(tool_result("c", ""),)),
    )
    # Conversion alone (the loop hands adapters a view it already built).
    await run(
        OpenAIChatProvider("m", client=server.openai()),
        ModelRequest(model="m", messages=wire, is_wire_view=True),
    )
    msgs = server.requests[0]["messages"]
    assert msgs[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        ],
    }
    assert msgs[2] == {"role": "tool", "tool_call_id": "c", "content": ""}
    assert len(msgs) == 3


async def test_adapters_build_the_wire_view_when_the_request_is_not_one() -> None:
    """A library user's raw history goes through the wire passes in the adapter (T02: no empty
    tool content; T01: a lost result is repaired; the tail ends with a user turn)."""
    stored = (
        text_turn("u", "user", "go"),
        Turn(
            id="a",
            role="assistant",
            content=(
                ToolCallBlock(id="c", name="t", arguments={}),
                ToolCallBlock(id="d", name="t", arguments={}),
            ),
        ),
        Turn(id="u2", role="user", content=(tool_result("c", ""),)),
        text_turn("a2", "assistant", "partial answ"),
    )
    server = Server([sse_response(OPENAI_OK)])
    await run(
        OpenAIChatProvider("m", client=server.openai()), ModelRequest(model="m", messages=stored)
    )
    msgs = server.requests[0]["messages"]
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c", "d"]
    assert all(m["content"] for m in tool_msgs)
    assert msgs[-1]["role"] == "user"


async def test_anthropic_request_body() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    provider = AnthropicProvider("default", client=server.anthropic(), prompt_caching=False)
    r = await run(provider, REQUEST)
    assert r.turn.text == "ok"
    (body,) = server.requests
    assert body == {
        "model": "the-model",
        "max_tokens": 512,
        "stream": True,
        "system": "Be brief.",  # a plain string: nothing needs cache_control (issue 39)
        "temperature": 0.2,
        "tools": [
            {"name": "get_weather", "description": "Weather for a city.", "input_schema": SCHEMA}
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Weather in Paris and Rome?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"},
                    {"type": "redacted_thinking", "data": "opaque=="},
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "c2",
                        "name": "get_weather",
                        "input": {"city": "Rome"},
                    },
                ],
            },
            {
                # Anthropic requires the tool_result blocks first
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [{"type": "text", "text": "18C sunny"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "c2",
                        "content": [{"type": "text", "text": "timeout"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "Also, be quick."},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Paris 18C; Rome unknown."}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                        "title": "report.pdf",
                    },
                    {"type": "text", "text": "Summarise."},
                ],
            },
        ],
    }


async def test_anthropic_thinking_budget_drops_temperature() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    provider = AnthropicProvider("m", client=server.anthropic(), thinking_budget=2048)
    await run(provider, REQUEST.__class__(model="m", messages=WIRE[:1], temperature=0.5))
    (body,) = server.requests
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 8192
    assert "temperature" not in body and "system" not in body and "tools" not in body


async def test_anthropic_tool_result_image_and_unsigned_thinking() -> None:
    server = Server([sse_response(ANTHROPIC_OK)])
    wire = (
        text_turn("u", "user", "look"),
        Turn(
            id="a",
            role="assistant",
            content=(
                ThinkingBlock(text="unsigned, foreign", producer="openai-compat"),
                ToolCallBlock(id="c", name="shot", arguments={}),
            ),
        ),
        Turn(
            id="u2",
            role="user",
            content=(
                ToolResultBlock(
                    tool_call_id="c",
                    content=(TextBlock(text="see"), ImageBlock(media_type="image/png", data=PNG)),
                ),
            ),
        ),
    )
    await run(
        AnthropicProvider("m", client=server.anthropic(), prompt_caching=False),
        ModelRequest(model="m", messages=wire),
    )
    msgs = server.requests[0]["messages"]
    assert msgs[1]["content"] == [{"type": "tool_use", "id": "c", "name": "shot", "input": {}}]
    assert msgs[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c",
            "content": [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
            ],
        }
    ]


def test_anthropic_thinking_budget_is_validated() -> None:
    with pytest.raises(ConfigError):
        AnthropicProvider("m", api_key="k", thinking_budget=100)


async def test_anthropic_thinking_budget_must_be_below_max_tokens() -> None:
    server = Server([])
    provider = AnthropicProvider("m", client=server.anthropic(), thinking_budget=4096)
    request = ModelRequest(model="m", messages=WIRE[:1], max_output_tokens=1024)
    with pytest.raises(ConfigError):
        await run(provider, request)
    assert server.requests == []
