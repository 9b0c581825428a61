"""Recorded Anthropic Messages streams replayed through the real `anthropic` SDK client.

Every file in tests/fixtures/anthropic-sse/ is covered. Expected values were read from the
fixtures; each test also cross-checks the assembled text against a naive parse of the raw stream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.replay import (
    ANTHROPIC_DIR,
    Recorded,
    Result,
    Server,
    load_cassette,
    load_chunks,
    run,
    simple_request,
    split_messages,
    sse,
    sse_response,
)
from tether.messages import (
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    Usage,
)
from tether.providers.anthropic import AnthropicProvider


def payloads(rec: Recorded) -> list[dict[str, Any]]:
    """A naive parse of a recorded SSE body: every `data:` line as JSON."""
    out: list[dict[str, Any]] = []
    for line in rec.body.decode().splitlines():
        if line.startswith("data:"):
            out.append(json.loads(line[5:]))
    return out


def raw_text(events: list[dict[str, Any]]) -> list[str]:
    """Text per text block, from the raw deltas (content_block_start text included)."""
    blocks: dict[int, list[str]] = {}
    for e in events:
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "text":
            blocks[e["index"]] = [e["content_block"]["text"]]
        elif e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta":
            blocks[e["index"]].append(e["delta"]["text"])
    return ["".join(v) for _, v in sorted(blocks.items())]


def texts(result: Result) -> list[str]:
    return [b.text for b in result.turn.content if isinstance(b, TextBlock)]


async def replay(recs: list[Recorded]) -> list[Result]:
    server = Server(list(recs))
    provider = AnthropicProvider("claude-test", client=server.anthropic())
    return [await run(provider, simple_request()) for _ in recs]


def chunk_responses(path: Path) -> list[Recorded]:
    return [sse_response(sse(m, named=True)) for m in split_messages(load_chunks(path))]


def test_every_fixture_is_covered() -> None:
    covered = {
        "pai-thinking-signature-stream.yaml",
        "pai-redacted-thinking-stream.yaml",
        "pai-code-execution-server-tool-stream.yaml",
        "pai-tool-search-client-tool-stream.yaml",
        "pai-stream-fallback-high-max-tokens.yaml",
        "oll-prompt-caching-stream.yaml",
        "llm-anthropic-parallel-tool-use-multiturn.yaml",
        "vai-programmatic-tool-calling.chunks.jsonl",
        "vai-code-execution-prompt-cache.chunks.jsonl",
        "vai-tool-no-args.chunks.jsonl",
    }
    assert {p.name for p in ANTHROPIC_DIR.iterdir()} == covered


async def test_thinking_with_signature() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "pai-thinking-signature-stream.yaml")
    (r,) = await replay(recs)
    raw = payloads(recs[0])
    signature = next(
        e["delta"]["signature"]
        for e in raw
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "signature_delta"
    )
    thinking, text = r.turn.content
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.text.startswith("This is a straightforward question about pedestrian safety.")
    assert thinking.text.endswith("could help prevent accidents.")
    assert thinking.signature == signature
    assert thinking.signature is not None
    assert thinking.signature.startswith("EvMCCkYICxgCKkCHP2cSuEdcJK/0rFwqES/")
    assert thinking.producer == "anthropic"
    assert isinstance(text, TextBlock)
    assert text.text.startswith("Here are the basic steps for safely crossing the street:")
    assert text.text.endswith("Always prioritize safety over speed when crossing streets.")
    assert texts(r) == raw_text(raw)
    assert r.turn.stop_reason == "end_turn"
    assert r.turn.usage == Usage(input_tokens=43, output_tokens=282)


async def test_redacted_thinking() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "pai-redacted-thinking-stream.yaml")
    (r,) = await replay(recs)
    raw = payloads(recs[0])
    data = [
        e["content_block"]["data"]
        for e in raw
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "redacted_thinking"
    ]
    first, second, text = r.turn.content
    assert isinstance(first, RedactedThinkingBlock) and isinstance(second, RedactedThinkingBlock)
    assert [first.data, second.data] == data
    assert first.data.startswith("EqkECkYIBxgCKkA8AZ4noDfV5VcOJe/p3JTRB6Xz")
    assert second.data.startswith("EtgBCkYIBxgCKkDQfGkwzflEJP5asG3oQfJXcTwJ")
    assert isinstance(text, TextBlock)
    assert text.text.endswith("How can I assist you today with a legitimate task or question?")
    assert r.turn.usage == Usage(input_tokens=92, output_tokens=189)
    assert r.turn.stop_reason == "end_turn"


async def test_code_execution_server_tool_blocks_are_skipped() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "pai-code-execution-server-tool-stream.yaml")
    (r,) = await replay(recs)
    kinds = [b.type for b in r.turn.content]
    # thinking, text, [server_tool_use], [bash_code_execution_tool_result], text
    assert kinds == ["thinking", "text", "text"]
    thinking = r.turn.content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.text == "Let me calculate this mathematical expression."
    assert thinking.signature is not None and thinking.signature.startswith("EusBClsIDRgCKkBpzetW")
    assert texts(r)[0] == "I'll calculate that expression for you right away!"
    assert texts(r)[1].endswith("### ✅ Final Answer: **-428,330,955.97745**")
    assert texts(r) == raw_text(payloads(recs[0]))
    assert r.turn.tool_calls == ()
    # message_delta repeats input_tokens (4714 after the server tool ran) and wins.
    assert r.turn.usage == Usage(input_tokens=4714, output_tokens=304)


async def test_tool_search_then_client_tool_two_turns() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "pai-tool-search-client-tool-stream.yaml")
    r1, r2 = await replay(recs)
    assert texts(r1) == [
        "Let me search for a tool that can provide current exchange rate information.",
        "I found the right tool! Let me fetch the current USD to EUR exchange rate for you.",
    ]
    (call,) = r1.turn.tool_calls
    assert call == ToolCallBlock(
        id="toolu_01EFn5wTNBYA8Reni8rbmnHT",
        name="get_exchange_rate",
        arguments={"from_currency": "USD", "to_currency": "EUR"},
    )
    assert r1.turn.stop_reason == "tool_use"
    assert r1.turn.usage == Usage(input_tokens=1591, output_tokens=175)
    assert r2.turn.text.startswith("The current exchange rate is **1 USD = 0.92 EUR**.")
    assert r2.turn.stop_reason == "end_turn"
    assert r2.turn.usage == Usage(input_tokens=1007, output_tokens=59)


async def test_smallest_stream_new_usage_shape() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "pai-stream-fallback-high-max-tokens.yaml")
    (r,) = await replay(recs)
    assert r.turn.content == (TextBlock(text="2"),)
    assert r.turn.usage == Usage(input_tokens=20, output_tokens=5)
    assert r.turn.stop_reason == "end_turn"


async def test_prompt_cache_write_then_read() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "oll-prompt-caching-stream.yaml")
    write, read = await replay(recs)
    assert write.turn.usage == Usage(input_tokens=4, output_tokens=201, cache_write_tokens=1165)
    assert read.turn.usage == Usage(input_tokens=4, output_tokens=221, cache_read_tokens=1165)
    for r, rec in ((write, recs[0]), (read, recs[1])):
        assert r.turn.text.startswith("Here are concise summaries of the three articles:")
        assert texts(r) == raw_text(payloads(rec))
    assert write.turn.usage is not None and read.turn.usage is not None
    assert write.turn.usage.prompt_tokens == read.turn.usage.prompt_tokens == 1169


async def test_parallel_tool_use_with_empty_input_two_turns() -> None:
    recs = load_cassette(ANTHROPIC_DIR / "llm-anthropic-parallel-tool-use-multiturn.yaml")
    r1, r2 = await replay(recs)
    assert r1.turn.text == (
        "I'll help you generate two potential names for a pet pelican by using the pelican"
        " name generator tool."
    )
    assert r1.turn.tool_calls == (
        ToolCallBlock(id="toolu_011ouQLPrqhKSuFJtuJrpaUX", name="pelican_name_generator"),
        ToolCallBlock(id="toolu_01NtJRxGhJcEQ4axN1FzHayX", name="pelican_name_generator"),
    )
    assert all(c.arguments == {} and c.invalid is None for c in r1.turn.tool_calls)
    assert r1.turn.stop_reason == "tool_use"
    assert r1.turn.usage == Usage(input_tokens=310, output_tokens=84)
    assert r2.turn.text.startswith("Great! The tool has generated two fun names for a pet pelican:")
    assert r2.turn.usage == Usage(input_tokens=467, output_tokens=72)
    assert r2.turn.stop_reason == "end_turn"


async def test_programmatic_tool_calling_responses() -> None:
    """15 responses concatenated in one chunk log (one per message_start..message_stop)."""
    recs = chunk_responses(ANTHROPIC_DIR / "vai-programmatic-tool-calling.chunks.jsonl")
    assert len(recs) == 15
    results = await replay(recs)
    first = results[0]
    assert first.turn.text.startswith("I'll help you simulate this game between two players")
    (call,) = first.turn.tool_calls
    # The input arrives whole in content_block_start (no input_json_delta).
    assert call.id == "toolu_019jKkXz4jAdwHweHBw92CVY"
    assert call.name == "rollDie" and call.arguments == {"player": "player1"}
    assert call.invalid is None
    assert call.provider_meta == {
        "caller": {
            "type": "code_execution_20250825",
            "tool_id": "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK",
        }
    }
    assert first.turn.usage == Usage(input_tokens=3369, output_tokens=725)
    # Continuations: a complete tool_use inside message_start, stop_reason already set there.
    middle = results[1:14]
    assert [r.turn.tool_calls[0].arguments["player"] for r in middle] == [
        "player2",
        "player1",
    ] * 6 + ["player2"]
    assert middle[0].turn.tool_calls[0].id == "toolu_015dGLMbwBKv1ZRQr6KdJzeH"
    assert all(r.turn.stop_reason == "tool_use" for r in middle)
    last = results[14]
    assert last.turn.text.startswith("## Game Results\n\n**Player 2 wins the game 3-2!**")
    assert [b.type for b in last.turn.content] == ["text"]  # code_execution_tool_result skipped
    assert last.turn.usage == Usage(input_tokens=4551, output_tokens=197)
    assert last.turn.stop_reason == "end_turn"


async def test_code_execution_usage_only_final_in_message_delta() -> None:
    path = ANTHROPIC_DIR / "vai-code-execution-prompt-cache.chunks.jsonl"
    (r,) = await replay(chunk_responses(path))
    # message_start said cache_read 0 / creation 3068; message_delta's cumulative figures win.
    assert r.turn.usage == Usage(
        input_tokens=6, output_tokens=198, cache_read_tokens=6289, cache_write_tokens=3337
    )
    assert r.turn.content == (
        TextBlock(text="The sum of the squares of the numbers 1 through 12 is **650**."),
    )
    assert r.turn.stop_reason == "end_turn"


async def test_tool_with_no_args() -> None:
    (r,) = await replay(chunk_responses(ANTHROPIC_DIR / "vai-tool-no-args.chunks.jsonl"))
    assert r.turn.content == (
        TextBlock(text="I'll update the issue list for you."),
        ToolCallBlock(id="toolu_01QE1WLsSVp5hy5Q3GmGTmjP", name="updateIssueList", arguments={}),
    )
    assert r.turn.stop_reason == "tool_use"
    assert r.turn.usage == Usage(input_tokens=565, output_tokens=48)


@pytest.mark.parametrize("cut", [1, 5, 10, 12])
async def test_cut_fixture_stream_is_network_error(cut: int) -> None:
    """Any recorded stream truncated before message_stop is a network error, never a Done."""
    lines = load_chunks(ANTHROPIC_DIR / "vai-tool-no-args.chunks.jsonl")[:cut]
    (r,) = await replay([sse_response(sse(lines, named=True))])
    assert r.turn.stop_reason == "error"
    assert r.assembler.error is not None and r.assembler.error.kind == "network"
    assert not any(e.type == "done" for e in r.events)
    if cut <= 10:  # cut before the tool_use block's content_block_stop
        assert all(c.invalid is not None for c in r.turn.tool_calls)
