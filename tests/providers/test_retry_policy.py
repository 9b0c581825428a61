"""Pure parts of the failure layer: durations, the retry rule and delays, quota signals, fallback
chain resolution, thinking-budget decay, continuations and prices (Hypothesis where a property
holds for every input)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.numbers import approx
from tether.agent.assembly.build import model_refs
from tether.agent.turn.continuation import (
    Continuations,
    GeometricDecay,
    StepDecay,
    thinking_budget_for_turn,
)
from tether.durations import header_seconds, parse_duration
from tether.errors import ConfigError, LengthResumeExhausted, exit_code_for
from tether.messages import Provenance, StopReason, TextBlock, Turn, Usage
from tether.providers.base import ErrorKind, StreamError
from tether.providers.catalog import price_for
from tether.providers.errors import classify_status, error_code, is_quota_error, parse_retry_after
from tether.providers.fallback import ModelRef, falls_back
from tether.providers.pricing import cost_usd, turns_cost_usd, turns_usage, usage_line
from tether.providers.retry import RetryPolicy, backoff_s, is_retryable, retry_delay
from tether.settings import AgentConfig
from tether.testing import call

KINDS: tuple[ErrorKind, ...] = (
    "auth",
    "network",
    "rate_limited",
    "overloaded",
    "context_overflow",
    "provider",
    "malformed",
    "cancelled",
)

# --- parse_duration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (250, 0.25),
        (0, 0.0),
        (2.5, 0.0025),
        ("250", 0.25),
        ("250ms", 0.25),
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        ("1m30s", 90.0),
        ("6m0s", 360.0),
        (" 2h 5m ", 7500.0),
        ("10MS", 0.01),
    ],
)
def test_parse_duration_examples(value: int | float | str, seconds: float) -> None:
    assert parse_duration(value) == approx(seconds)


@pytest.mark.parametrize(
    "value",
    ["", "  ", "s", "5x", "-1", -5, "5s5m", "5s5s", "1.s", "inf", float("nan"), True, "5 m s"],
)
def test_parse_duration_rejects(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)  # type: ignore[arg-type]


@given(
    h=st.integers(0, 48),
    m=st.integers(0, 59),
    s=st.integers(0, 59),
    ms=st.integers(0, 999),
)
def test_parse_duration_compound_is_the_sum(h: int, m: int, s: int, ms: int) -> None:
    text = f"{h}h{m}m{s}s{ms}ms"
    assert parse_duration(text) == approx(h * 3600 + m * 60 + s + ms / 1000)


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_parse_duration_numbers_are_milliseconds(ms: float) -> None:
    assert parse_duration(ms) == approx(ms / 1000)
    assert parse_duration(repr(ms)) == approx(ms / 1000)


@given(st.text(max_size=12))
def test_parse_duration_never_crashes_otherwise(text: str) -> None:
    try:
        value = parse_duration(text)
    except ValueError:
        return
    assert value >= 0 and math.isfinite(value)


# --- the retry rule and delays ----------------------------------------------------------------


def ev(
    kind: ErrorKind, status: int | None = None, after: float | None = None, code: str | None = None
) -> StreamError:
    return StreamError(kind=kind, message="x", status_code=status, retry_after_s=after, code=code)


@pytest.mark.parametrize(
    ("event", "retry"),
    [
        (ev("rate_limited", 429), True),
        (ev("overloaded", 529), True),
        (ev("overloaded", 200, code="overloaded_error"), True),
        (ev("network"), True),
        (ev("provider", 500), True),
        (ev("provider", 502), True),
        (ev("provider", 503), True),
        (ev("provider", 504), True),
        (ev("provider", 408), True),
        (ev("provider", 200, code="api_error"), True),
        (ev("provider", 501), False),
        (ev("provider", 400), False),
        (ev("provider", 404), False),
        (ev("auth", 401), False),
        (ev("auth", 429, code="insufficient_quota"), False),
        (ev("context_overflow", 400), False),
        (ev("malformed"), False),
        (ev("cancelled"), False),
    ],
)
def test_is_retryable(event: StreamError, retry: bool) -> None:
    assert is_retryable(event) is retry


def test_backoff_doubles_from_base_and_is_capped() -> None:
    policy = RetryPolicy(max_attempts=10, retry_base_s=2.0, retry_max_s=30.0)
    assert [backoff_s(policy, k, 0.0) for k in range(1, 7)] == [2, 4, 8, 16, 30, 30]
    assert backoff_s(policy, 1, 0.999) == approx(2 + 0.999 * 0.5)
    assert backoff_s(policy, 5, 0.999) == 30.0  # the jitter never passes the cap


@given(
    base=st.floats(0, 100),
    extra=st.floats(0, 1000),
    k=st.integers(1, 200),
    jitter=st.floats(0, 1, exclude_max=True),
)
def test_backoff_bounds(base: float, extra: float, k: int, jitter: float) -> None:
    policy = RetryPolicy(max_attempts=3, retry_base_s=base, retry_max_s=base + extra)
    delay = backoff_s(policy, k, jitter)
    assert 0 <= delay <= policy.retry_max_s
    plain = min(policy.retry_max_s, base * 2.0 ** min(k - 1, 64))
    assert plain <= delay <= plain + base / 4 + 1e-9


def test_retry_after_is_the_minimum_wait_and_is_shown() -> None:
    policy = RetryPolicy(retry_base_s=2.0, retry_max_s=120.0)
    delay = retry_delay(policy, 1, ev("rate_limited", 429, after=60.0), 0.5)
    assert delay is not None and delay.delay_s == 60.0 and delay.from_retry_after
    short = retry_delay(policy, 1, ev("rate_limited", 429, after=0.5), 0.0)
    assert short is not None and short.delay_s == 2.0 and not short.from_retry_after


def test_retry_after_beyond_the_cap_stops_retrying() -> None:
    """T29: waiting less than the server asked lands every retry inside its cooldown."""
    policy = RetryPolicy(retry_base_s=2.0, retry_max_s=30.0)
    assert retry_delay(policy, 1, ev("rate_limited", 429, after=60.0), 0.0) is None


@given(
    kind=st.sampled_from(KINDS),
    status=st.one_of(st.none(), st.integers(100, 599)),
    failures=st.integers(1, 10),
    attempts=st.integers(1, 10),
    after=st.one_of(st.none(), st.floats(0, 200)),
    jitter=st.floats(0, 1, exclude_max=True),
)
def test_retry_delay_properties(
    kind: ErrorKind,
    status: int | None,
    failures: int,
    attempts: int,
    after: float | None,
    jitter: float,
) -> None:
    policy = RetryPolicy(max_attempts=attempts, retry_base_s=1.0, retry_max_s=30.0)
    event = ev(kind, status, after)
    delay = retry_delay(policy, failures, event, jitter)
    if delay is None:
        assert not is_retryable(event) or failures >= attempts or (after or 0) > 30.0
        return
    assert is_retryable(event) and failures < attempts
    assert 0 <= delay.delay_s <= policy.retry_max_s
    if after is not None:
        assert delay.delay_s >= after


def test_policy_validation_and_env() -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ConfigError):
        RetryPolicy(retry_base_s=10, retry_max_s=1)
    policy = RetryPolicy.from_env(
        {"TETHER_RETRY_BASE": "10ms", "TETHER_RETRY_MAX": "1s", "TETHER_RETRY_ATTEMPTS": "5"}
    )
    assert policy == RetryPolicy(max_attempts=5, retry_base_s=0.01, retry_max_s=1.0)
    assert RetryPolicy.from_env({}) == RetryPolicy()
    with pytest.raises(ConfigError, match="retry"):
        RetryPolicy.from_env({"TETHER_RETRY_BASE": "soon"})


# --- quota: exact signals only ----------------------------------------------------------------

OPENAI_QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
}
ANTHROPIC_BILLING = {
    "type": "error",
    "error": {"type": "billing_error", "message": "Your credit balance is too low."},
}


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (429, OPENAI_QUOTA),
        (429, OPENAI_QUOTA["error"]),  # the openai SDK keeps the inner object
        (400, ANTHROPIC_BILLING),
        (402, {"error": {"message": "Insufficient credits"}}),
        (200, ANTHROPIC_BILLING),
    ],
)
def test_depleted_quota_is_auth_and_not_retried(status: int, body: object) -> None:
    assert is_quota_error(status, body)
    assert classify_status(status, body) == "auth"
    assert not is_retryable(ev(classify_status(status, body), status, code=error_code(body)))
    assert exit_code_for("auth") == 2


@pytest.mark.parametrize(
    "body",
    [
        {
            "error": {
                "message": "Rate limit reached; your quota resets soon",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        {"error": {"message": "insufficient_quota is not the code here", "type": "tokens"}},
        {"type": "error", "error": {"type": "rate_limit_error", "message": "billing_error? no"}},
    ],
)
def test_quota_words_in_prose_are_not_quota(body: object) -> None:
    assert not is_quota_error(429, body)
    assert classify_status(429, body) == "rate_limited"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("12", 12.0), (" 1.5 ", 1.5), ("0", 0.0), ("6m0s", 360.0), ("20ms", 0.02), ("1m30s", 90.0),
     ("-1", None), ("inf", None), ("nan", None), ("", None), ("soon", None), ("5s5m", None)],
)
def test_a_header_duration_is_plain_seconds_or_the_unit_form(
    value: str, seconds: float | None
) -> None:
    """One reading for both header readers (the retry wait and the plan-usage readout): a plain
    number is seconds here, not the settings' milliseconds."""
    assert header_seconds(value) == (None if seconds is None else approx(seconds))


@given(st.text(max_size=12))
def test_a_header_duration_never_raises_and_is_never_negative(value: str) -> None:
    got = header_seconds(value)
    assert got is None or (got >= 0 and math.isfinite(got))


def test_openai_reset_headers_only_on_a_429() -> None:
    headers = {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}
    assert parse_retry_after(headers) == 360.0
    assert parse_retry_after(headers, reset_headers=False) is None
    assert parse_retry_after({**headers, "retry-after": "3"}) == 3.0


# --- fallback chains --------------------------------------------------------------------------

CONFIGURED = [("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4o")]


def r(provider: str, model: str) -> ModelRef:
    return ModelRef(provider=provider, model=model)


def resolve_chain(selection: object, providers: list[tuple[str, str]]) -> tuple[ModelRef, ...]:
    """The production grammar (`build.model_refs`) over configured (name, default) pairs."""
    config = AgentConfig.model_validate(
        {"model": selection, "providers": {n: {"type": "openai", "model": m} for n, m in providers}}
    )
    return model_refs(config)


def test_chain_none_is_each_default_in_order() -> None:
    assert resolve_chain(None, CONFIGURED) == (
        r("anthropic", "claude-sonnet-4-5"),
        r("openai", "gpt-4o"),
    )


def test_chain_string_is_that_model_everywhere() -> None:
    assert resolve_chain("m", CONFIGURED) == (r("anthropic", "m"), r("openai", "m"))


def test_chain_list_pins_and_dedupes() -> None:
    chain = resolve_chain(
        [
            {"provider": "openai", "model": "gpt-4o-mini"},
            "gpt-4o",
            {"provider": "openai", "model": "gpt-4o-mini"},
            {"provider": "anthropic"},
        ],
        CONFIGURED,
    )
    assert chain == (
        r("openai", "gpt-4o-mini"),
        r("anthropic", "gpt-4o"),
        r("openai", "gpt-4o"),
        r("anthropic", "claude-sonnet-4-5"),
    )


@pytest.mark.parametrize(
    ("selection", "providers", "says"),
    [
        ([{"provider": "gemini", "model": "x"}], CONFIGURED, "unknown provider 'gemini'"),
        (None, [(" ", "m")], "blank name"),
    ],
)
def test_chain_mistakes_fail_at_start(
    selection: object, providers: list[tuple[str, str]], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        resolve_chain(selection, providers)


names = st.text("abcxyz", min_size=1, max_size=3)


def _pair(n: str, m: str) -> tuple[str, str]:
    return (n, m)



@given(
    providers=st.lists(st.tuples(names, names), min_size=1, max_size=4, unique_by=lambda p: p[0]),
    items=st.lists(
        st.one_of(names, st.builds(_pair, names, names)), min_size=1, max_size=6
    ),
)
def test_chain_properties(
    providers: list[tuple[str, str]], items: list[str | tuple[str, str]]
) -> None:
    known = dict(providers)
    selection: list[str | dict[str, str]] = [
        i if isinstance(i, str) else {"provider": i[0], "model": i[1]} for i in items
    ]
    pinned_unknown = any(isinstance(i, dict) and i["provider"] not in known for i in selection)
    if pinned_unknown:
        with pytest.raises(ConfigError):
            resolve_chain(selection, providers)
        return
    chain = resolve_chain(selection, providers)
    assert len(set(chain)) == len(chain) >= 1
    assert all(ref.provider in known for ref in chain)
    # the order follows the selection: the first item's refs come first
    first = selection[0]
    if isinstance(first, dict):
        assert chain[0] == r(first["provider"], first["model"])
    else:
        assert chain[0] == r(providers[0][0], first)


def test_which_faults_fall_back() -> None:
    assert {k for k in KINDS if falls_back(ev(k))} == set(KINDS) - {"context_overflow", "cancelled"}


# --- thinking-budget decay --------------------------------------------------------------------


def test_step_decay_changes_once() -> None:
    policy = StepDecay(full_tokens=16000, floor_tokens=2048, after_turn=3)
    budgets = [thinking_budget_for_turn(policy, n) for n in range(1, 7)]
    assert budgets == [16000, 16000, 16000, 2048, 2048, 2048]
    assert thinking_budget_for_turn(None, 1) is None


def test_geometric_decay_starts_after_after_turn() -> None:
    policy = GeometricDecay(full_tokens=4096, factor=0.5, floor_tokens=1024, after_turn=3)
    budgets = [thinking_budget_for_turn(policy, n) for n in range(1, 7)]
    assert budgets == [4096, 4096, 4096, 2048, 1024, 1024]
    with pytest.raises(ConfigError):
        GeometricDecay(full_tokens=4096, factor=0.5, floor_tokens=0, after_turn=0)


def test_geometric_decay() -> None:
    policy = GeometricDecay(full_tokens=16000, factor=0.5, floor_tokens=3000)
    assert [thinking_budget_for_turn(policy, n) for n in range(1, 6)] == [
        16000,
        8000,
        4000,
        3000,
        3000,
    ]


@given(
    full=st.integers(0, 200_000),
    floor_frac=st.floats(0, 1),
    factor=st.floats(0.01, 1),
    after=st.integers(1, 50),
    n=st.integers(1, 10_000),
)
def test_decay_is_bounded_and_non_increasing(
    full: int, floor_frac: float, factor: float, after: int, n: int
) -> None:
    floor = int(full * floor_frac)
    for policy in (
        StepDecay(full_tokens=full, floor_tokens=floor, after_turn=after),
        GeometricDecay(full_tokens=full, factor=factor, floor_tokens=floor),
    ):
        now, later = thinking_budget_for_turn(policy, n), thinking_budget_for_turn(policy, n + 1)
        assert now is not None and later is not None
        assert floor <= later <= now <= full
        assert thinking_budget_for_turn(policy, 1) == full


def test_decay_validation() -> None:
    with pytest.raises(ConfigError):
        StepDecay(full_tokens=100, floor_tokens=200, after_turn=1)
    with pytest.raises(ConfigError):
        StepDecay(full_tokens=100, floor_tokens=10, after_turn=0)
    with pytest.raises(ConfigError):
        GeometricDecay(full_tokens=100, factor=1.5, floor_tokens=0)


# --- continuations ----------------------------------------------------------------------------


def reply(text: str, stop: StopReason, *, calls: bool = False) -> Turn:
    content = (TextBlock(text=text),) if text else ()
    if calls:
        content = (*content, call("ls", id="c1"))
    return Turn(id="t", role="assistant", content=content, stop_reason=stop)


def test_continuations_assemble_one_answer_within_the_bound() -> None:
    c = Continuations(max_continuations=2)
    assert c.after_turn(reply("A", "max_tokens"))
    assert c.after_turn(reply("B", "max_tokens"))
    assert not c.after_turn(reply("C", "max_tokens"))  # bound reached: stop there
    assert c.answer == "ABC"


def test_a_tool_call_starts_a_new_answer() -> None:
    c = Continuations()
    assert c.after_turn(reply("A", "max_tokens"))
    assert not c.after_turn(reply("", "tool_use", calls=True))
    assert not c.after_turn(reply("done", "end_turn"))
    assert c.answer == "done"


def test_empty_continuations_raise() -> None:
    c = Continuations()
    assert c.after_turn(reply("A", "max_tokens"))
    assert c.after_turn(reply("", "max_tokens"))
    with pytest.raises(LengthResumeExhausted) as info:
        c.after_turn(reply("", "max_tokens"))
    assert info.value.kind == "provider" and exit_code_for(info.value.kind) == 4
    assert info.value.continuations == 2


# --- prices (case T19 usage shapes) -----------------------------------------------------------


def test_t19_costs_use_the_separate_fields() -> None:
    from openai.types.completion_usage import CompletionUsage, PromptTokensDetails

    from tether.providers.openai_chat import normalize_usage

    openai_usage = normalize_usage(
        CompletionUsage(
            prompt_tokens=184704,
            completion_tokens=49,
            total_tokens=184753,
            prompt_tokens_details=PromptTokensDetails(cached_tokens=183936),
        )
    )
    assert openai_usage.prompt_tokens + openai_usage.output_tokens == 184753
    # 768 uncached at $2.50/M + 183936 cached at $1.25/M + 49 out at $10/M
    assert cost_usd(openai_usage, "gpt-4o") == approx(0.23233)
    anthropic_usage = Usage(
        input_tokens=12, output_tokens=800, cache_read_tokens=150000, cache_write_tokens=9000
    )
    assert anthropic_usage.prompt_tokens + anthropic_usage.output_tokens == 159812
    # 12 x $3 + 800 x $15 + 150000 x $0.30 + 9000 x $3.75, per million
    assert cost_usd(anthropic_usage, "claude-sonnet-4-5-20250929") == approx(0.090786)


def test_prices_match_names_and_snapshots_only() -> None:
    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")
    assert price_for("anthropic/claude-haiku-4-5") is not None
    assert price_for("gpt-5-nano") is None
    assert price_for("gpt-4o-mini") != price_for("gpt-4o")
    assert cost_usd(Usage(input_tokens=10), "my-local-model") is None


def test_session_usage_and_cost() -> None:
    def t(model: str, u: Usage) -> Turn:
        prov = Provenance(provider="x", api="anthropic", model=model)
        return Turn(id="a", role="assistant", usage=u, provenance=prov)

    u = Usage(input_tokens=1_000_000, output_tokens=0)
    turns = [Turn(id="u", role="user"), t("claude-haiku-4-5", u), t("claude-haiku-4-5", u)]
    assert turns_usage(turns) == Usage(input_tokens=2_000_000)
    assert turns_cost_usd(turns) == approx(2.0)
    assert usage_line(turns_usage(turns), 2.0) == "in 2000000 / 0 out · $2.0000"
    assert turns_cost_usd([*turns, t("unknown", u)]) is None
    assert turns_cost_usd([]) is None  # nothing priced: no "$0.0000"
