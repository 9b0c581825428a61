"""Cases T15, T17, T19, T20 (context pressure and windows), each with variants of its kind."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import types as at
from openai.types.completion_usage import CompletionUsage

from kit.cases import load_case
from tether.compaction import (
    CompactionPolicy,
    ContextMonitor,
    ModelLimits,
    effective_window,
    estimate_tokens,
    occupied_tokens,
    parse_windows_setting,
    trigger_reached,
)
from tether.compaction.pressure import make_pressure, threshold_tokens, trigger_tokens
from tether.messages import (
    CompactSummaryBlock,
    TextBlock,
    ToolCallBlock,
    Turn,
    Usage,
    text_turn,
    tool_result,
)
from tether.providers import anthropic as anthropic_adapter
from tether.providers import openai_chat
from tether.providers.catalog import LimitsResolver, resolve_limits


def filler(turn_id: str, tokens: int, role: str = "user") -> Turn:
    """A turn whose estimate is exactly `tokens` (4 characters per token)."""
    return text_turn(turn_id, role, "x" * (4 * tokens))  # type: ignore[arg-type]


def summary_turn(turn_id: str, tokens: int, replaces: tuple[str, ...]) -> Turn:
    block = CompactSummaryBlock(summary="s" * (4 * tokens), replaces_turn_ids=replaces)
    return Turn(id=turn_id, role="user", content=(block,))


# -- T15: counter not reset after compaction ---------------------------------------------------


def test_t15_decision_after_compaction_uses_the_new_view_not_the_stale_count() -> None:
    case = load_case("T15")["input"]
    window = case["window"]
    prompt_before = case["timeline"][0]["provider_usage_prompt_tokens"]
    after_estimate = case["timeline"][1]["wire_tokens_after_estimate"]
    limits = ModelLimits(context_window=window, max_output_tokens=32_000)
    policy = CompactionPolicy(threshold=case["auto_compact_threshold"])
    mon = ContextMonitor(limits, policy)

    task = filler("task", 50)
    view = [task, filler("u1", prompt_before - 50)]  # the provider agrees with the estimate
    mon.check(view)
    gen0 = mon.generation
    mon.observe(
        view_len=len(view),
        usage=Usage(input_tokens=prompt_before),
        assistant_turn_id="a1",
        generation=gen0,
    )
    view = [*view, filler("a1", 0, "assistant")]
    decision = mon.check(view)
    assert decision.compact  # 67,787 >= 30 % of the 180,000-token effective window

    # auto-compaction: the new wire view is the task + a summary, ~12k tokens
    after = [task, summary_turn("m1", after_estimate - 50, ("u1", "a1"))]
    assert estimate_tokens(after) == after_estimate
    mon.compacted(after)
    assert mon.pressure is not None and mon.pressure.tokens == after_estimate

    # a usage from a request built before the compaction arrives late: ignored
    mon.observe(
        view_len=3, usage=Usage(input_tokens=prompt_before), assistant_turn_id="a1", generation=gen0
    )

    # next user prompt: the decision uses ~12k, not 67,787
    view = [*after, text_turn("u2", "user", "next prompt")]
    decision = mon.check(view)
    assert not decision.compact
    assert decision.pressure.source == "estimated"
    assert after_estimate <= decision.pressure.tokens < after_estimate + 10
    # then a fresh usage from a request made after the compaction is the base again
    mon.observe(
        view_len=len(view),
        usage=Usage(input_tokens=12_400, output_tokens=300),
        assistant_turn_id="a2",
        generation=mon.generation,
    )
    decision = mon.check([*view, filler("a2", 300, "assistant")])
    assert (decision.pressure.tokens, decision.pressure.source) == (12_700, "measured")
    assert not decision.compact


@pytest.mark.parametrize("threshold", [0.30, 0.5, 0.8, 1.0])
def test_t15_consecutive_turns_under_threshold_never_compact(threshold: float) -> None:
    limits = ModelLimits(context_window=200_000, max_output_tokens=32_000)
    policy = CompactionPolicy(threshold=threshold)
    mon = ContextMonitor(limits, policy, system_tokens=2_000)
    under = trigger_tokens(limits, policy) - 5_000
    view = [filler("task", under // 2)]
    compactions = 0
    for i in range(20):  # the usage stays just under the trigger: each turn replaces the last
        decision = mon.check(view)
        compactions += decision.compact
        mon.observe(
            view_len=len(view),
            usage=Usage(input_tokens=under - 100, output_tokens=50),
            assistant_turn_id=f"a{i}",
            generation=mon.generation,
        )
        view = [*view, filler(f"a{i}", 50, "assistant"), filler(f"u{i}", 10)]
        # a tool loop that keeps the context flat (e.g. results persisted to disk)
        view = [view[0], *view[-2:]]
    assert compactions == 0


@pytest.mark.parametrize("window", [1, 100, 2_048, 8_192, 32_768, 200_000, 1_000_000])
@pytest.mark.parametrize("threshold", [0.3, 0.0, -0.2, 80.0, 2.0, float("nan")])
@pytest.mark.parametrize("reserve", [0, 20_000, 10**9])
def test_t15_threshold_is_positive_for_any_window(
    window: int, threshold: float, reserve: int
) -> None:
    # the openclaude#635 shape: an 8k fallback window minus a 20k reserve went negative
    limits = ModelLimits(context_window=window, max_output_tokens=window)
    policy = CompactionPolicy(threshold=threshold, output_reserve=reserve, thinking_budget=reserve)
    assert effective_window(limits, policy) >= 1
    assert threshold_tokens(limits, policy) >= 1
    assert trigger_tokens(limits, policy) >= 1
    empty = make_pressure(0, limits, policy, source="estimated", is_approximate=True)
    assert not trigger_reached(empty, limits, policy)


# -- T17: compaction checked before every request inside a tool loop ---------------------------


def test_t17_no_request_in_a_long_tool_loop_exceeds_the_budget() -> None:
    case = load_case("T17")["input"]
    budget = case["configured_context_window"]
    turn = case["turn"]
    per_iteration = turn["tokens_added_per_iteration"]
    overhead = 3_000  # system prompt + tool schemas, unknown to the monitor: calibrated
    limits = ModelLimits(context_window=budget, max_output_tokens=32_000, source="settings")
    mon = ContextMonitor(limits)
    eff = effective_window(limits, CompactionPolicy())

    task = text_turn("task", "user", "Fix the failing tests.")
    view: list[Turn] = [task, filler("history", turn["start_tokens"] - overhead - 6)]
    store: list[Turn] = list(view)  # every turn ever appended (compaction never deletes)
    requests: list[int] = []
    compactions = 0

    def send(i: int, reply: Turn) -> None:
        nonlocal view, compactions
        decision = mon.check(view)
        assert decision.runaway is None and not decision.no_progress
        if decision.compact:
            replaced = tuple(t.id for t in view[1:])
            view = [task, summary_turn(f"marker{i}", 2_000, replaced)]
            store.append(view[-1])
            mon.compacted(view)
            compactions += 1
            assert not mon.check(view).compact
        generation = mon.generation
        prompt = estimate_tokens(view) + overhead  # what the provider counts
        requests.append(prompt)
        store.append(reply)
        view = [*view, reply]
        mon.observe(
            view_len=len(view) - 1,
            usage=Usage(input_tokens=prompt, output_tokens=40),
            assistant_turn_id=reply.id,
            generation=generation,
        )

    for i in range(turn["tool_iterations"]):
        call = ToolCallBlock(id=f"c{i}", name="bash", arguments={"command": "pytest -x"})
        send(i, Turn(id=f"a{i}", role="assistant", content=(TextBlock(text="run"), call)))
        result = Turn(
            id=f"r{i}", role="user", content=(tool_result(f"c{i}", "F" * (4 * per_iteration)),)
        )
        store.append(result)
        view = [*view, result]
    final = text_turn("final", "assistant", case["final_response"]["content"])
    send(99, final)

    # without a check per request the loop would have reached 170k + 25 x 10k = 420k
    assert turn["start_tokens"] + turn["tool_iterations"] * per_iteration > budget
    assert len(requests) == turn["tool_iterations"] + 1
    assert max(requests) <= eff <= budget, max(requests)
    assert compactions >= 2
    assert mon.calibration_offset == overhead
    assert store[-1] is final and view[-1] is final  # the final reply is kept


def test_t17_a_completed_reply_over_the_window_is_kept_and_compaction_follows() -> None:
    case = load_case("T17")["input"]
    limits = ModelLimits(context_window=case["configured_context_window"], max_output_tokens=32_000)
    mon = ContextMonitor(limits)
    view = [filler("task", 100)]
    mon.check(view)
    final = text_turn("final", "assistant", case["final_response"]["content"])
    usage_prompt = case["final_response"]["usage_prompt_tokens"]
    mon.observe(
        view_len=1,
        usage=Usage(input_tokens=usage_prompt, output_tokens=8),
        assistant_turn_id="final",
        generation=0,
    )
    decision = mon.check([*view, final, text_turn("u", "user", "thanks")])
    # the over-budget reply is not an overflow to retry: the next check compacts, after it
    assert decision.compact and decision.runaway is None and not decision.no_progress
    assert decision.pressure.tokens >= usage_prompt


# -- T19: cache tokens normalized per provider -------------------------------------------------


def test_t19_openai_cached_tokens_are_part_of_the_prompt() -> None:
    case = load_case("T19")["input"]
    raw = case["openai_usage"]
    cached = raw["input_tokens_details"]["cached_tokens"]
    # the chat adapter, on the equivalent chat-completions shape
    chat = openai_chat.normalize_usage(
        CompletionUsage(
            prompt_tokens=raw["input_tokens"],
            completion_tokens=raw["output_tokens"],
            total_tokens=raw["input_tokens"] + raw["output_tokens"],
            prompt_tokens_details={"cached_tokens": cached},  # type: ignore[arg-type]
        )
    )
    # the Responses shape normalized the same way (input = prompt - cached, cache_read = cached)
    responses = Usage(
        input_tokens=raw["input_tokens"] - cached,
        cache_read_tokens=cached,
        output_tokens=raw["output_tokens"],
    )
    for usage in (chat, responses):
        assert usage.prompt_tokens == raw["input_tokens"]
        assert occupied_tokens(usage) == 184_753
        assert usage.cache_read_tokens == cached  # cost accounting keeps the fields apart
        assert usage.input_tokens == raw["input_tokens"] - cached

    window = case["window"]
    assert round(100 * occupied_tokens(chat) / window) == 46
    for limits in (
        ModelLimits(context_window=window, max_output_tokens=128_000),
        resolve_limits("gpt-5")[0],
    ):
        p = make_pressure(
            occupied_tokens(chat),
            limits,
            CompactionPolicy(),
            source="measured",
            is_approximate=False,
        )
        assert not trigger_reached(p, limits, CompactionPolicy())
    # the bug's figure (input + cache_read + output = 368,689) would have compacted
    doubled = raw["input_tokens"] + cached + raw["output_tokens"]
    limits = ModelLimits(context_window=window, max_output_tokens=128_000)
    p = make_pressure(doubled, limits, CompactionPolicy(), source="measured", is_approximate=False)
    assert trigger_reached(p, limits, CompactionPolicy())


def test_t19_anthropic_cache_reads_and_writes_add_to_input() -> None:
    raw: dict[str, Any] = load_case("T19")["input"]["anthropic_usage"]
    usage = anthropic_adapter.normalize_usage(at.Usage(**raw))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        12,
        150_000,
        9_000,
    )
    assert occupied_tokens(usage) == 159_812
    # leaving out cache writes (the bug) would have under-counted by 9,000
    assert occupied_tokens(usage) - raw["cache_creation_input_tokens"] == 150_812


def test_t19_monitor_takes_the_last_call_of_a_tool_loop_not_the_sum() -> None:
    limits = ModelLimits(context_window=400_000, max_output_tokens=128_000)
    mon = ContextMonitor(limits)
    view: list[Turn] = [filler("task", 100)]
    last = Usage()
    for i in range(10):
        mon.check(view)
        last = Usage(input_tokens=1_000, cache_read_tokens=150_000 + i * 100, output_tokens=49)
        mon.observe(view_len=len(view), usage=last, assistant_turn_id=f"a{i}", generation=0)
        view = [*view, filler(f"a{i}", 49, "assistant"), filler(f"r{i}", 25)]
    decision = mon.check(view)
    assert decision.pressure.tokens == occupied_tokens(last) + 25
    assert not decision.compact  # ten summed calls (> 1.5M) would have compacted


# -- T20: unknown context window ---------------------------------------------------------------


def test_t20_unknown_model_gets_the_default_with_one_warning() -> None:
    case = load_case("T20")["input"]
    model = case["model"]
    assert case["builtin_table_match"] is None
    configured = (
        parse_windows_setting({}) if case["user_config"]["context_window"] is None else None
    )
    reported = (
        None
        if not case["provider_metadata"]["available"]
        else ModelLimits(context_window=1, max_output_tokens=1)
    )
    resolver = LimitsResolver()
    limits, warning = resolver.resolve(model, configured=configured, provider_reported=reported)
    assert limits.source == "default"
    assert warning is not None
    assert model in warning and f"{limits.context_window:,}" in warning
    assert '"context"' in warning and '"windows"' in warning  # the setting to change
    assert resolver.resolve(model, configured=configured, provider_reported=reported)[1] is None
    # threshold positive on the default
    assert threshold_tokens(limits, CompactionPolicy()) > 0
    assert effective_window(limits, CompactionPolicy()) > 0


def test_t20_resolution_order_config_then_provider_then_table() -> None:
    model = load_case("T20")["input"]["model"]
    configured = parse_windows_setting(
        {model: {"context_window": 1_000_000, "max_output_tokens": 32_000}}
    )
    reported = ModelLimits(context_window=202_752, max_output_tokens=16_384)  # e.g. /props n_ctx
    assert (
        resolve_limits(model, configured=configured, provider_reported=reported)[0].context_window
        == 1_000_000
    )
    limits, warning = resolve_limits(model, provider_reported=reported)
    assert (limits.context_window, limits.source, warning) == (202_752, "provider", None)
    limits, warning = resolve_limits("gemini-2.5-pro")
    assert (limits.context_window, limits.source, warning) == (1_048_576, "table", None)


@pytest.mark.parametrize(
    ("message", "learned"),
    [
        (
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens",
            131_072,
        ),
        ("prompt is too long: 207547 tokens > 200000 maximum", 200_000),
        (
            "The input token count (400000) exceeds the maximum number of tokens allowed (370000).",
            370_000,
        ),
        ('{"type":"exceed_context_size_error","n_prompt_tokens":40000,"n_ctx":32768}', 32_768),
    ],
)
def test_t20_overflow_error_teaches_the_window_and_compacts(message: str, learned: int) -> None:
    model = load_case("T20")["input"]["model"]
    # the catalog said 1M (openai/codex#16140); the endpoint rejects earlier
    limits, _ = resolve_limits(model, configured=parse_windows_setting({model: 1_000_000}))
    mon = ContextMonitor(limits)
    view = [filler("task", 100), filler("big", 300_000)]
    assert not mon.check(view).compact
    assert mon.overflow(message) == learned
    assert mon.limits.context_window == learned and mon.limits.source == "learned"
    decision = mon.check(view)
    assert decision.compact
    assert decision.pressure.effective_window == effective_window(mon.limits, mon.policy)
    mon.compacted([filler("task", 100), summary_turn("m", 2_000, ("big",))])
    assert not mon.check([filler("task", 100), summary_turn("m", 2_000, ("big",))]).compact
