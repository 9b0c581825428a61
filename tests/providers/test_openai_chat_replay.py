"""Recorded Chat Completions streams replayed through the real `openai` SDK client.

Every file in tests/fixtures/openai-chat-sse/ is covered. Expected values were read from the
fixtures; text is also cross-checked against a naive parse of the raw stream.
"""

from __future__ import annotations

import json
from typing import Any

from kit.replay import (
    OPENAI_DIR,
    Recorded,
    Result,
    Server,
    load_cassette,
    load_chunks,
    run,
    simple_request,
    sse,
    sse_response,
)
from tether.messages import TextBlock, ThinkingBlock, ToolCallBlock, Usage
from tether.providers.base import StreamError
from tether.providers.openai_chat import OpenAIChatProvider


def raw_content(rec: Recorded) -> str:
    """All `delta.content` of a recorded SSE body, joined (naive parse)."""
    out: list[str] = []
    for line in rec.body.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            data: dict[str, Any] = json.loads(line[6:])
            choices: list[dict[str, Any]] = data.get("choices") or []
            for choice in choices:
                out.append(choice.get("delta", {}).get("content") or "")
    return "".join(out)


async def replay(recs: list[Recorded], base_url: str | None = None) -> list[Result]:
    server = Server(list(recs))
    provider = OpenAIChatProvider("gpt-test", client=server.openai(base_url))
    return [await run(provider, simple_request()) for _ in recs]


def test_every_fixture_is_covered() -> None:
    assert {p.name for p in OPENAI_DIR.iterdir()} == {
        "oll-parallel-tool-calls-stream.yaml",
        "pai-groq-midstream-error-event.yaml",
        "pai-openrouter-grok-cached-tokens.yaml",
        "pai-openrouter-http429-retries.yaml",
        "pai-parallel-tool-calls-multiturn.yaml",
        "vai-azure-content-filter.chunks.jsonl",
    }


async def test_parallel_tool_calls_three_turns() -> None:
    recs = load_cassette(OPENAI_DIR / "pai-parallel-tool-calls-multiturn.yaml")
    r1, r2, r3 = await replay(recs)
    assert r1.turn.tool_calls == (
        ToolCallBlock(id="call_q2UyBRP7eXNTzAoR8lEhjc9Z", name="get_country", arguments={}),
        ToolCallBlock(id="call_b51ijcpFkDiTQG1bQzsrmtW5", name="get_product_name", arguments={}),
    )
    assert r1.turn.stop_reason == "tool_use"
    assert r1.turn.usage == Usage(input_tokens=364, output_tokens=40)
    assert r2.turn.tool_calls == (
        ToolCallBlock(
            id="call_LwxJUB9KppVyogRRLQsamRJv",
            name="get_weather",
            arguments={"city": "Mexico City"},
        ),
    )
    assert r2.turn.usage == Usage(input_tokens=423, output_tokens=15)
    (final,) = r3.turn.tool_calls
    assert final.id == "call_CCGIWaMeYWmxOQ91orkmTvzn" and final.name == "final_result"
    assert final.invalid is None
    assert final.arguments == {
        "answers": [
            {"label": "Capital", "answer": "The capital of Mexico is Mexico City."},
            {"label": "Weather", "answer": "The weather in Mexico City is currently sunny."},
            {"label": "Product Name", "answer": "The product name is Pydantic AI."},
        ]
    }
    assert r3.turn.usage == Usage(input_tokens=448, output_tokens=62)
    assert all(r.turn.text == "" for r in (r1, r2, r3))


async def test_parallel_tool_calls_old_and_new_chunk_format() -> None:
    recs = load_cassette(OPENAI_DIR / "oll-parallel-tool-calls-stream.yaml")
    old, new = await replay(recs)
    for r, ids in (
        (old, ("call_cCPjAyfwTzboEKjVlqFrArNF", "call_Zi4He1Ns0mozwT6f85nW1BOW")),
        (new, ("call_u0T52evs3Y0byXDiUv5Al8dG", "call_iXfR9wmFaDTHUw5YaVxD1uFH")),
    ):
        assert r.turn.tool_calls == (
            ToolCallBlock(
                id=ids[0], name="get_current_weather", arguments={"location": "San Francisco"}
            ),
            ToolCallBlock(id=ids[1], name="get_current_weather", arguments={"location": "Boston"}),
        )
        assert r.turn.stop_reason == "tool_use"
        assert r.turn.usage is None  # recorded without include_usage: no usage chunk


async def test_groq_midstream_error_event_then_retry() -> None:
    recs = load_cassette(OPENAI_DIR / "pai-groq-midstream-error-event.yaml")
    failed, retried, answered = await replay(recs, base_url="https://api.groq.com/openai/v1")
    err = failed.assembler.error
    assert isinstance(err, StreamError)
    # HTTP 200, then `event: error` with a 400 invalid_request_error body: a provider fault.
    assert err.kind == "provider" and err.status_code == 200
    assert err.message.startswith("Tool call validation failed")
    assert failed.turn.stop_reason == "error" and failed.turn.tool_calls == ()
    (thinking,) = failed.turn.content  # the reasoning streamed before the error is kept
    assert isinstance(thinking, ThinkingBlock) and thinking.producer == "openai-compat"
    assert thinking.text.startswith("We need to call the tool with invalid parameters first")

    assert retried.turn.tool_calls == (
        ToolCallBlock(
            id="fc_bfb39741-3748-4def-9886-a93fc9c64a90",
            name="get_something_by_name",
            arguments={"name": "example"},
        ),
    )
    assert retried.turn.usage == Usage(input_tokens=304, output_tokens=49)
    assert retried.turn.stop_reason == "tool_use"
    reasoning = retried.turn.content[0]
    assert isinstance(reasoning, ThinkingBlock)
    assert reasoning.text == (
        'We need to call the function with correct parameter "name". Provide a name, e.g.,'
        ' "example".'
    )
    assert answered.turn.text == "The tool returned the expected result for the valid call."
    assert answered.turn.text == raw_content(recs[2])
    assert answered.turn.usage == Usage(input_tokens=339, output_tokens=58)
    assert answered.turn.stop_reason == "end_turn"


async def test_openrouter_cached_tokens() -> None:
    recs = load_cassette(OPENAI_DIR / "pai-openrouter-grok-cached-tokens.yaml")
    (r,) = await replay(recs, base_url="https://openrouter.ai/api/v1")
    assert r.turn.text.startswith("I'm Grok, an AI built by xAI.")
    assert r.turn.text.endswith("What's on your mind?")
    assert r.turn.text == raw_content(recs[0])
    # prompt_tokens 687 of which cached 679: input = 687 - 679.
    assert r.turn.usage == Usage(input_tokens=8, output_tokens=187, cache_read_tokens=679)
    assert r.turn.usage is not None
    assert r.turn.usage.prompt_tokens == 687
    assert r.turn.stop_reason == "end_turn"  # finish_reason before the usage-only chunk


async def test_openrouter_http_429_sequence() -> None:
    recs = load_cassette(OPENAI_DIR / "pai-openrouter-http429-retries.yaml")
    results = await replay(recs, base_url="https://openrouter.ai/api/v1")
    for r in results:
        assert r.events == [r.assembler.error]
        err = r.assembler.error
        assert err is not None
        assert err.kind == "rate_limited" and err.status_code == 429
        assert err.message == "Provider returned error"
        assert err.retry_after_s is None  # the recording has no Retry-After header
        assert r.turn.content == ()


async def test_openrouter_429_with_retry_after_header() -> None:
    rec = load_cassette(OPENAI_DIR / "pai-openrouter-http429-retries.yaml")[0]
    rec.headers["retry-after"] = "7"
    (r,) = await replay([rec])
    assert r.assembler.error is not None
    assert r.assembler.error.kind == "rate_limited"
    assert r.assembler.error.retry_after_s == 7.0


async def test_azure_content_filter_chunks() -> None:
    lines = load_chunks(OPENAI_DIR / "vai-azure-content-filter.chunks.jsonl")
    rec = sse_response(sse([*lines, "[DONE]"], named=False))
    (r,) = await replay([rec])
    # The first chunk has no choices (only prompt_filter_results); every later one carries
    # content_filter_results, all "safe": a normal answer.
    assert r.turn.content == (TextBlock(text="Capital of Denmark."),)
    assert r.turn.text == raw_content(rec)
    assert r.turn.usage == Usage(input_tokens=15, output_tokens=78)
    assert r.turn.stop_reason == "end_turn"


async def test_azure_content_filter_finish_is_refusal() -> None:
    lines = load_chunks(OPENAI_DIR / "vai-azure-content-filter.chunks.jsonl")
    filtered = [
        line.replace('"finish_reason":"stop"', '"finish_reason":"content_filter"') for line in lines
    ]
    (r,) = await replay([sse_response(sse(filtered, named=False))])
    assert r.turn.stop_reason == "refusal"
    assert r.events[-1].type == "done"


async def test_fixture_cut_before_finish_reason_is_network_error() -> None:
    lines = load_chunks(OPENAI_DIR / "vai-azure-content-filter.chunks.jsonl")[:5]
    (r,) = await replay([sse_response(sse(lines, named=False))])
    assert r.assembler.error is not None and r.assembler.error.kind == "network"
    assert r.assembler.done is None
    assert r.turn.stop_reason == "error"


# --- synthetic shapes from compatible servers ---------------------------------------------------


def chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None
) -> str:
    body: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body)


def call(
    index: int, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    out: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        out["id"] = id
    return out


async def test_duplicate_and_missing_ids_are_separate_calls() -> None:
    lines = [
        chunk({"tool_calls": [call(0, "dup", "read", '{"p": 1}')]}),
        chunk({"tool_calls": [call(1, "dup", "read", '{"p": 2}')]}),
        chunk({"tool_calls": [call(2, None, "ls", "")]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    (r,) = await replay([sse_response(sse(lines, named=False))])
    assert r.turn.tool_calls == (
        ToolCallBlock(id="dup", name="read", arguments={"p": 1}),
        ToolCallBlock(
            id="dup", name="read", arguments={"p": 2}
        ),  # passed through; tether re-mints later
        ToolCallBlock(id="t1_call3", name="ls", arguments={}),  # minted by the assembler
    )


async def test_name_after_first_fragment_and_reasoning_content() -> None:
    lines = [
        chunk({"role": "assistant", "reasoning_content": "Think"}),
        chunk({"reasoning_content": "ing."}),
        chunk({"content": "Calling."}),
        chunk({"tool_calls": [call(0, "call_9")]}),
        chunk({"tool_calls": [call(0, None, "grep", '{"q":')]}),
        chunk({"tool_calls": [call(0, None, None, '"x"}')]}),
        chunk(
            {},
            "stop",
            usage={
                "prompt_tokens": 30,
                "completion_tokens": 9,
                "total_tokens": 39,
                "prompt_tokens_details": {"cached_tokens": 10},
            },
        ),
        "[DONE]",
    ]
    (r,) = await replay([sse_response(sse(lines, named=False))], base_url="http://127.0.0.1:9/v1")
    thinking, text, tool = r.turn.content
    assert isinstance(thinking, ThinkingBlock)
    assert (thinking.text, thinking.producer) == ("Thinking.", "openai-compat")
    assert text == TextBlock(text="Calling.")
    assert tool == ToolCallBlock(id="call_9", name="grep", arguments={"q": "x"})
    # vLLM-style `stop` with tool calls is a tool_use turn.
    assert r.turn.stop_reason == "tool_use"
    assert r.turn.usage == Usage(input_tokens=20, output_tokens=9, cache_read_tokens=10)
