"""The summary call: request shape, budget (T14), overflow halving, retries, timeout, cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from kit.cases import load_case
from tether.agent.events import AgentEvent, RetryEvent
from tether.agent.turn.attempts import Attempts, summary_call
from tether.compaction.pressure import text_tokens
from tether.compaction.prompt import SECTIONS, SUMMARY_SYSTEM
from tether.compaction.rounds import CompactInvalidInputError, Scope
from tether.compaction.snapshot import CompactionSnapshot
from tether.compaction.summarize import (
    CompactionCancelledError,
    CompactionFailedError,
    SummaryCall,
    SummaryRequest,
    compact_conversation,
    truncation_marker,
)
from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    Target,
    TextBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.providers.base import ModelRequest, StreamError, StreamEvent
from tether.providers.retry import RetryPolicy
from tether.testing import ScriptedProvider, events_for

from .helpers import TASK, history, request_text, summarizer


async def test_one_bounded_call_without_tools_at_temperature_zero() -> None:
    turns = (
        *history(3),
        Turn(
            id="media",
            role="user",
            content=(
                TextBlock(text="look"),
                ImageBlock(media_type="image/png", data="AAAA" * 100),
                DocumentBlock(media_type="application/pdf", data="JVBE", title="spec.pdf"),
            ),
        ),
        Turn(id="seen", role="assistant", content=(TextBlock(text="Seen."),)),
        # the newest user message is kept whatever the budget: the media one is an older one
        Turn(id="last", role="user", content=(TextBlock(text="go on"),)),
    )
    provider = summarizer()
    result = await compact_conversation(
        provider,
        summary_request(
            turns,
            scope=Scope.full(),
            instructions="the parser API",
            marker_id="m1",
            summary_max_tokens=500,
            keep_user_tokens=0,  # the media message is summarized, not kept verbatim
        ),
    )
    (req,) = provider.requests
    assert req.tools == () and req.temperature == 0.0 and req.system == SUMMARY_SYSTEM
    assert req.max_output_tokens == 500 and len(req.messages) == 1
    text = request_text(req)
    for s in (*SECTIONS, "Focus"):
        assert f"## {s}" in text
    assert "the parser API" in text and TASK in text
    assert "[image]" in text and "[document: spec.pdf]" in text and "AAAA" not in text
    assert "result 2/c2_0" in text
    marker = result.marker_turn
    assert marker.id == "m1" and marker.role == "user"
    (block,) = marker.content
    assert isinstance(block, CompactSummaryBlock) and block.generation == 1
    assert "task" not in block.replaces_turn_ids
    assert block.replaces_turn_ids == ("a0", "u0", "a1", "u1", "a2", "u2", "media", "seen")
    assert "folded into this summary" in block.summary  # the media message, past the budget
    assert block.summary.split("\n\n", 1)[1].startswith("## Goal\nsummary #1")
    assert block.summary.endswith("Turns covered: a0…seen (use the recall tool)")
    assert result.tokens_after < result.tokens_before


async def test_recompaction_feeds_the_previous_summary_and_bumps_the_generation() -> None:
    turns = list(history(3))
    first = await compact_conversation(
        summarizer(["FIRST SUMMARY"]), summary_request(turns, scope=Scope.tail(2))
    )
    turns.append(first.marker_turn)
    turns += [text_turn("q", "user", "next"), text_turn("r", "assistant", "ok")]
    provider = summarizer(["SECOND"])
    second = await compact_conversation(provider, summary_request(turns, scope=Scope.full()))
    assert "<previous-summary>\nFIRST SUMMARY" in request_text(provider.requests[0])
    assert second.generation == 2
    assert first.marker_turn.id in second.replaced_ids  # the old marker is subsumed
    assert second.summary.endswith("Turns covered: a0…r (use the recall tool)")


async def test_invalid_input_raises_before_any_call() -> None:
    provider = summarizer()
    for turns, scope in [((), Scope.full()), (history(1), Scope.from_("zz"))]:
        with pytest.raises(CompactInvalidInputError):
            await compact_conversation(provider, summary_request(turns, scope=scope))
    assert provider.requests == []


def summary_request(turns: Sequence[Turn], **fields: Any) -> SummaryRequest:
    """A summary request over `turns` (its snapshot computed), other fields as given."""
    return SummaryRequest(snapshot=CompactionSnapshot.of(turns), **fields)


def _scripted(*responses: str | StreamError) -> ScriptedProvider:
    return ScriptedProvider(list(responses))


async def test_context_overflow_halves_the_slice_from_the_head_at_most_3_times() -> None:
    overflow = StreamError(kind="context_overflow", message="prompt is too long")
    provider = _scripted(overflow, overflow, "done")
    result = await compact_conversation(
        provider, summary_request(history(16, result_chars=400), scope=Scope.full())
    )
    sizes = [len(request_text(r).split("<conversation>")[1]) for r in provider.requests]
    assert sizes[1] <= sizes[0] / 2 + 50 and sizes[2] <= sizes[1] / 2 + 50
    assert result.dropped_turns > 0 and "did not fit" in request_text(provider.requests[2])
    assert len(result.replaced_ids) == 32  # dropped rounds are still replaced (recallable)
    with pytest.raises(CompactionFailedError, match="context_overflow"):
        await compact_conversation(
            _scripted(*[overflow] * 4),
            summary_request(history(16, result_chars=400), scope=Scope.full()),
        )


def shared_path(
    *providers: ScriptedProvider, attempts: int = 3, events: list[AgentEvent] | None = None,
    sleeps: list[float] | None = None,
) -> SummaryCall:
    """The summary call through the run's request path (`Attempts`): retries, Retry-After,
    fallback; waits recorded instead of slept."""

    async def sleep(delay_s: float) -> None:
        (sleeps if sleeps is not None else []).append(delay_s)

    chain = Attempts(
        providers,
        policy=RetryPolicy(max_attempts=attempts, retry_base_s=1.0, retry_max_s=30.0),
        emit=(events if events is not None else []).append,
        sleep=sleep,
        rng=lambda: 0.5,
    )
    return summary_call(chain)


async def test_transient_errors_are_retried_by_the_shared_request_path() -> None:
    busy = StreamError(kind="overloaded", message="busy")
    provider = _scripted(busy, busy, "ok")
    events: list[AgentEvent] = []
    result = await compact_conversation(
        provider, summary_request(history(2)), call=shared_path(provider, events=events)
    )
    assert result.calls == 1 and len(provider.requests) == 3  # retried below the summary logic
    assert [e.type for e in events] == ["retry", "retry"]  # visible, no text deltas, no error
    spent = _scripted(busy, busy, busy)
    with pytest.raises(CompactionFailedError, match="overloaded"):
        await compact_conversation(spent, summary_request(history(2)), call=shared_path(spent))
    auth = _scripted(StreamError(kind="auth", message="bad key"), "never")
    with pytest.raises(CompactionFailedError, match="auth"):
        await compact_conversation(auth, summary_request(history(2)), call=shared_path(auth))
    assert len(auth.requests) == 1  # not retryable


async def test_retry_after_5xx_and_the_fallback_chain_serve_the_summary_call() -> None:
    limited = StreamError(kind="rate_limited", message="slow down", retry_after_s=7.0)
    five = StreamError(kind="provider", message="internal", status_code=500)
    provider = _scripted(limited, five, "## Goal\nfrom the first")
    sleeps: list[float] = []
    events: list[AgentEvent] = []
    call = shared_path(provider, events=events, sleeps=sleeps)
    result = await compact_conversation(provider, summary_request(history(2)), call=call)
    assert "from the first" in result.summary
    assert sleeps[0] == 7.0  # the server's Retry-After, not the 1 s backoff
    assert [(e.kind, e.from_retry_after) for e in events if isinstance(e, RetryEvent)] == [
        ("rate_limited", True),
        ("provider", False),
    ]
    down = _scripted(StreamError(kind="overloaded", message="down"))
    backup = _scripted("## Goal\nfrom the backup")
    events = []
    call = shared_path(down, backup, attempts=1, events=events)
    result = await compact_conversation(down, summary_request(history(2)), call=call)
    assert "from the backup" in result.summary and len(backup.requests) == 1
    assert [e.type for e in events] == ["fallback"]
    assert backup.requests[0].model == backup.model  # each provider is asked for its own model


async def test_the_summary_usage_is_reported() -> None:
    provider = ScriptedProvider(
        ["## Goal\nsummary"], usage=Usage(input_tokens=900, output_tokens=60)
    )
    result = await compact_conversation(
        provider, summary_request(history(2)), call=shared_path(provider)
    )
    assert result.usage == Usage(input_tokens=900, output_tokens=60)


class _Slow:
    name, model = "slow", "slow"
    target: Target = "anthropic"

    def __init__(self) -> None:
        self.started = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.started += 1
        await asyncio.sleep(30)
        for e in events_for("late"):
            yield e


async def test_wall_clock_timeout_and_cancel_signal() -> None:
    slow = _Slow()
    with pytest.raises(CompactionFailedError, match="timed out"):
        await compact_conversation(slow, summary_request(history(2), timeout_s=0.05))
    assert slow.started == 1
    cancel = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, cancel.set)
    with pytest.raises(CompactionCancelledError):
        await compact_conversation(
            _Slow(), summary_request(history(2), timeout_s=10), cancel=cancel
        )


def test_truncation_marker_names_the_removed_turns() -> None:
    result = truncation_marker(
        CompactionSnapshot.of(history(3)), Scope.tail(2), "compaction failed (auth)"
    )
    assert result.truncated and result.replaced_ids == ("a0", "u0", "a1", "u1")
    assert result.summary.startswith("4 earlier turns were removed without a summary")
    assert "Turns covered: a0…u1" in result.summary


def _t14_history(total_tokens: int, big: list[int]) -> tuple[Turn, ...]:
    turns: list[Turn] = [text_turn("task", "user", TASK)]
    sizes = list(big)
    rest = total_tokens - sum(big)
    sizes += [2_000] * (rest // 2_000)
    for k, tokens in enumerate(sizes):
        call = ToolCallBlock(id=f"c{k}", name="bash", arguments={"command": f"step {k}"})
        turns.append(Turn(id=f"a{k}", role="assistant", content=(call,)))
        turns.append(
            Turn(id=f"u{k}", role="user", content=(tool_result(f"c{k}", "y" * tokens * 4),))
        )
    return tuple(turns)


@pytest.mark.parametrize("window", [200_000, 32_000, 8_192])
async def test_t14_compaction_of_a_history_larger_than_the_window_succeeds(window: int) -> None:
    case = load_case("T14")["input"]
    reserve = case["compaction"]["summary_max_tokens"] if window == 200_000 else window // 8
    turns = _t14_history(case["history_tokens"], [i["tokens"] for i in case["largest_items"]])
    inputs: list[int] = []

    def model(request: ModelRequest) -> str | StreamError:
        tokens = text_tokens(request.system or "") + text_tokens(request_text(request))
        inputs.append(tokens)
        if tokens + reserve > window:  # what the real API does with an oversized request
            return StreamError(
                kind="context_overflow",
                message=f"prompt is too long: {tokens} tokens > {window} maximum",
            )
        return f"summary of part {len(inputs)}"

    provider = ScriptedProvider(model)
    result = await compact_conversation(
        provider,
        summary_request(
            turns, scope=Scope.full(), window_tokens=window, summary_max_tokens=reserve
        ),
    )
    assert inputs and all(t <= window - reserve for t in inputs)
    assert len(result.replaced_ids) == len(turns) - 1 and "task" not in result.replaced_ids
    assert result.tokens_after < window // 10
