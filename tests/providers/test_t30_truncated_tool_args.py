"""Case T30: tool-call arguments cut off by an interrupted stream are never executable.

Trigger (pi-mono #6284 / #8501): a `write` call whose argument JSON is cut mid-string, then one of
three terminations: the connection closes (no finish_reason, no [DONE]), finish_reason=length, or
finish_reason=tool_calls. Right behaviour: the call is marked `invalid` (or the whole stream is an
ErrorEvent), so the executor is never invoked with arguments that fail `json.loads`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.replay import Result, Server, run, simple_request, sse, sse_response
from tether.messages import ToolCallBlock
from tether.providers.anthropic import AnthropicProvider
from tether.providers.openai_chat import OpenAIChatProvider

CUT_ARGS = '{"path": "notes.md", "content": "line1\\nline2'
FULL_ARGS = '{"path": "notes.md", "content": "line1\\nline2"}'


def chat_chunk(delta: dict[str, object], finish: str | None = None) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-t30",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def t30_chunks(args: str, termination: str) -> list[str]:
    chunks = [
        chat_chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "write", "arguments": ""},
                    }
                ],
            }
        ),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}),
    ]
    if termination == "closed":
        return chunks  # no finish_reason, no [DONE]
    return [*chunks, chat_chunk({}, termination), "[DONE]"]


def executable(result: Result) -> list[ToolCallBlock]:
    """What a loop could execute: nothing after an ErrorEvent; otherwise the valid calls."""
    if result.assembler.error is not None:
        return []
    return [c for c in result.turn.tool_calls if c.invalid is None]


def assert_never_runs_cut_args(result: Result) -> None:
    for call in executable(result):
        json.loads(json.dumps(call.arguments))  # a real parsed object
        assert call.raw_arguments is None
    (call,) = result.turn.tool_calls
    if result.assembler.error is None:
        assert call.invalid is not None
        assert call.arguments == {}
        assert call.raw_arguments == CUT_ARGS


async def run_openai(chunks: list[str]) -> Result:
    server = Server([sse_response(sse(chunks, named=False))])
    return await run(OpenAIChatProvider("m", client=server.openai()), simple_request())


async def test_t30_connection_closed_without_finish_reason() -> None:
    r = await run_openai(t30_chunks(CUT_ARGS, "closed"))
    assert r.assembler.error is not None and r.assembler.error.kind == "network"
    assert r.assembler.done is None
    assert executable(r) == []
    (call,) = r.turn.tool_calls
    assert call.invalid is not None  # even the partial turn marks it
    assert_never_runs_cut_args(r)


async def test_t30_finish_reason_length() -> None:
    r = await run_openai(t30_chunks(CUT_ARGS, "length"))
    assert r.assembler.done is not None and r.assembler.done.stop_reason == "max_tokens"
    (call,) = r.turn.tool_calls
    assert call.id == "call_1" and call.name == "write"
    assert call.invalid is not None and "truncated" in call.invalid
    assert_never_runs_cut_args(r)
    assert executable(r) == []


async def test_t30_finish_reason_tool_calls_with_cut_json() -> None:
    r = await run_openai(t30_chunks(CUT_ARGS, "tool_calls"))
    assert r.assembler.done is not None and r.assembler.done.stop_reason == "tool_use"
    (call,) = r.turn.tool_calls
    assert call.invalid is not None and "not valid JSON" in call.invalid
    assert_never_runs_cut_args(r)
    assert executable(r) == []


async def test_t30_control_complete_json_is_executable() -> None:
    r = await run_openai(t30_chunks(FULL_ARGS, "tool_calls"))
    (call,) = executable(r)
    assert call.arguments == {"path": "notes.md", "content": "line1\nline2"}


async def test_t30_connection_reset_mid_body() -> None:
    body = sse(t30_chunks(CUT_ARGS, "closed"), named=False)

    async def stream() -> AsyncIterator[bytes]:
        yield body
        raise httpx2.ReadError("connection reset by peer")

    server = Server(
        [
            lambda _req: httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=stream()
            )
        ]
    )
    r = await run(OpenAIChatProvider("m", client=server.openai()), simple_request())
    assert r.assembler.error is not None and r.assembler.error.kind == "network"
    assert executable(r) == []


def anthropic_t30(termination: str) -> list[str]:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": CUT_ARGS},
        },
    ]
    if termination == "max_tokens":
        # The API closes the cut block, then reports max_tokens.
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
                "usage": {"output_tokens": 50},
            },
            {"type": "message_stop"},
        ]
    return [json.dumps(e) for e in events]


@pytest.mark.parametrize("termination", ["closed", "max_tokens"])
async def test_t30_anthropic(termination: str) -> None:
    server = Server([sse_response(sse(anthropic_t30(termination), named=True))])
    r = await run(AnthropicProvider("m", client=server.anthropic()), simple_request())
    if termination == "closed":
        assert r.assembler.error is not None and r.assembler.error.kind == "network"
    else:
        assert r.turn.stop_reason == "max_tokens"
    assert executable(r) == []
    assert_never_runs_cut_args(r)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=len(FULL_ARGS) - 1),
    termination=st.sampled_from(["closed", "length", "tool_calls"]),
)
async def test_t30_any_cut_never_executes(cut: int, termination: str) -> None:
    """Property: for any prefix of the arguments that is not the whole JSON and any of the three
    terminations, no call is executable."""
    args = FULL_ARGS[:cut]
    r = await run_openai(t30_chunks(args, termination))
    for call in executable(r):
        # Only an empty prefix ("" → {} for a no-argument call) can be valid.
        assert args == "" and call.arguments == {}
