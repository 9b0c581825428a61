"""The providers' plan-usage readout (`tether.providers.plan_usage`): the real adapters read the
rate-limit headers a loopback server sends (OpenAI's `x-ratelimit-*`, Anthropic's
`anthropic-ratelimit-*` and its plans' `-unified-` family, a 429's too); `tether models --usage`
shows the last run's from another process; a provider without the method says "not supported"
in one line (CLI and TUI `/usage`); the header parser never raises (Hypothesis)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.cli import run_cli
from kit.faultserver import FaultServer, status, text
from kit.numbers import approx
from kit.tui import SIZE, idle, notes, provider_app, scripted_app, send
from tether.messages import text_turn
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest, StreamError
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.plan_usage import (
    PlanUsage,
    RateLimit,
    limit_line,
    parse_rate_limits,
    plan_usage_of,
    usage_lines,
)

OPENAI_HEADERS = {
    "x-ratelimit-limit-requests": "50",
    "x-ratelimit-remaining-requests": "42",
    "x-ratelimit-reset-requests": "34s",
    "x-ratelimit-limit-tokens": "40000",
    "x-ratelimit-remaining-tokens": "18000",
    "x-ratelimit-reset-tokens": "6m0s",
}
RESET = "2030-01-01T00:00:00Z"
ANTHROPIC_HEADERS = {
    "anthropic-ratelimit-requests-limit": "1000",
    "anthropic-ratelimit-requests-remaining": "999",
    "anthropic-ratelimit-requests-reset": RESET,
    "anthropic-ratelimit-input-tokens-limit": "80000",
    "anthropic-ratelimit-input-tokens-remaining": "79000",
    "anthropic-ratelimit-input-tokens-reset": RESET,
    "anthropic-ratelimit-unified-5h-utilization": "0.37",
    "anthropic-ratelimit-unified-5h-reset": "1893456000",
    "anthropic-ratelimit-unified-status": "allowed_warning",
}


def _request() -> ModelRequest:
    return ModelRequest(model="m", messages=(text_turn("u", "user", "hi"),))


async def _drain(provider: OpenAIChatProvider | AnthropicProvider) -> StreamError | None:
    error = None
    async for event in provider.stream(_request()):
        if isinstance(event, StreamError):
            error = event
    return error


def _by_name(usage: PlanUsage) -> dict[str, RateLimit]:
    return {x.name: x for x in usage.limits}


async def test_openai_chat_reads_x_ratelimit_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    with FaultServer([text("hi", headers=OPENAI_HEADERS)]) as server:
        provider = OpenAIChatProvider("m", base_url=server.openai_url, api_key="k")
        assert provider.plan_usage() is None
        before = time.time()
        assert await _drain(provider) is None
    usage = provider.plan_usage()
    assert usage is not None and usage.provider == "openai" and usage.status == 200
    limits = _by_name(usage)
    assert (limits["requests"].limit, limits["requests"].remaining) == (50, 42)
    assert (limits["tokens"].limit, limits["tokens"].remaining) == (40000, 18000)
    requests_reset, tokens_reset = limits["requests"].resets_at, limits["tokens"].resets_at
    assert requests_reset is not None and tokens_reset is not None
    assert before + 34 <= requests_reset <= time.time() + 34
    assert before + 360 <= tokens_reset <= time.time() + 360
    # kept in the user cache: a new provider object (another process) reads it
    again = OpenAIChatProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k").plan_usage()
    assert again == usage


async def test_anthropic_reads_its_headers_and_the_plan_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    with FaultServer([text("hi", headers=ANTHROPIC_HEADERS)]) as server:
        provider = AnthropicProvider("m", base_url=server.anthropic_url, api_key="k")
        assert await _drain(provider) is None
    usage = provider.plan_usage()
    assert usage is not None
    limits = _by_name(usage)
    at = datetime(2030, 1, 1, tzinfo=UTC).timestamp()
    assert limits["requests"] == RateLimit(name="requests", limit=1000, remaining=999, resets_at=at)
    assert limits["input-tokens"].remaining == 79000
    assert limits["5h"].used == approx(0.37) and limits["5h"].resets_at == 1893456000
    assert limits["plan"].status == "allowed_warning"
    lines = usage_lines(usage, now=at - 90)
    assert lines[0].startswith("anthropic: plan usage from the rate-limit headers of its last reply")
    assert "  requests        999 of 1,000 left (100 %), resets in 90 s" in lines
    assert any(x.startswith("  5h ") and "37 % used" in x for x in lines)


async def test_a_refused_request_still_tells_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moment a user wants the readout most: a 429. Its headers are read and kept at once."""
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    exhausted = {**OPENAI_HEADERS, "x-ratelimit-remaining-requests": "0"}
    with FaultServer([status(429, retry_after="20", headers=exhausted)]) as server:
        provider = OpenAIChatProvider("m", base_url=server.openai_url, api_key="k")
        error = await _drain(provider)
    assert error is not None and error.kind == "rate_limited"
    usage = provider.plan_usage()
    assert usage is not None and usage.status == 429
    assert _by_name(usage)["requests"].remaining == 0
    assert "limit reached (429)" in usage_lines(usage)[0]
    assert (tmp_path / "cache" / "plan-usage" / "openai.json").is_file()


def _ticking(shown: str) -> str:
    """A readout with its seconds countdowns blanked."""
    return re.sub(r"resets in \d+ s\b", "resets in N s", shown)


def test_tether_models_usage_shows_the_last_runs_readout(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([text("hello", headers=OPENAI_HEADERS)]) as server:
        ran = run_cli(
            ["run", "-m", "openai/m", "--base-url", server.openai_url, "Say hi."],
            home,
            OPENAI_API_KEY="k",
        )
    assert ran.returncode == 0, ran.stderr
    shown = run_cli(["models", "--usage", "openai"], home)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("openai: plan usage from the rate-limit headers of its last reply")
    requests = re.fullmatch(r"  requests        42 of 50 left \(84 %\), resets in (\d+) s", lines[1])
    assert requests is not None and 4 <= int(requests[1]) <= 34, lines[1]  # 34 s, counting down
    assert lines[2].startswith("  tokens          18,000 of 40,000 left (45 %), resets in 6 min")
    every = run_cli(["models", "--usage"], home)
    # the same readout; its countdown may have ticked between the two processes (a loaded CI)
    assert _ticking(every.stdout) == _ticking(shown.stdout)
    # one line and exit 1 where there is no readout to give
    unsupported = run_cli(["models", "--usage", "ollama"], home)
    assert unsupported.returncode == 1 and unsupported.stdout == ""
    assert unsupported.stderr.strip() == (
        "tether: ollama: plan usage is not supported by this provider (it states no rate limits)"
    )
    unknown = run_cli(["models", "--usage", "nosuch"], home)
    assert unknown.returncode == 1 and "unknown provider 'nosuch'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1
    fresh = run_cli(["models", "--usage", "anthropic"], tmp_path / "other")
    assert fresh.returncode == 0 and fresh.stdout.startswith("anthropic: no plan usage seen yet")


async def test_the_tui_usage_command_says_what_the_provider_cannot_report(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["hi"])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/usage")
        await idle(app, pilot)
        shown = notes(app)
        assert "usage: " in shown
        assert plan_usage_of(provider) == (
            f"{provider.name}: plan usage is not supported by this provider (it states no rate "
            f"limits)"
        )
        assert f"{provider.name}: plan usage is not supported by this provider" in shown


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "x-ratelimit-remaining-requests",
                "x-ratelimit-reset-tokens",
                "x-ratelimit-limit",
                "ratelimit-reset",
                "anthropic-ratelimit-tokens-reset",
                "anthropic-ratelimit-unified-7d-utilization",
                "anthropic-ratelimit-unified-reset",
                "content-type",
            ]
        )
        | st.text(max_size=30),
        st.text(max_size=30),
        max_size=8,
    )
)
def test_no_header_value_breaks_the_parser(headers: dict[str, str]) -> None:
    limits = parse_rate_limits(headers, now=1_800_000_000.0)
    for limit in limits:
        assert limit.limit is None or limit.limit >= 0
        assert limit.remaining is None or limit.remaining >= 0
        limit_line(limit, now=1_800_000_000.0)  # and it can be shown


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=59),
    st.integers(min_value=0, max_value=999),
)
def test_openai_durations_and_counts_are_read_exactly(
    remaining: int, minutes: int, seconds: int, ms: int
) -> None:
    minutes %= 10_000
    headers = {
        "X-RateLimit-Remaining-Tokens": str(remaining),
        "x-ratelimit-reset-tokens": f"{minutes}m{seconds}s" if ms == 0 else f"{ms}ms",
    }
    (limit,) = parse_rate_limits(headers, now=0.0)
    assert limit.name == "tokens" and limit.remaining == remaining
    expected = minutes * 60 + seconds if ms == 0 else ms / 1000
    assert limit.resets_at == approx(expected)


async def test_the_tui_usage_command_shows_the_models_readout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/usage` after a reply from a provider that states its limits: the session's tokens,
    then the plan's limits (Claude Code's `/usage`)."""
    from tether.session import SessionStore

    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    store = SessionStore(tmp_path / "sessions")
    with FaultServer([text("hello", headers=OPENAI_HEADERS)]) as server:
        provider = OpenAIChatProvider("m", base_url=server.openai_url, api_key="k")
        app = provider_app(tmp_path, provider, store)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hi")
            await idle(app, pilot)
            await send(pilot, "/usage")
            await idle(app, pilot)
            shown = notes(app)
    assert "openai: plan usage from the rate-limit headers of its last reply" in shown
    requests = re.search(r"requests        42 of 50 left \(84 %\), resets in (\d+) s", shown)
    assert requests is not None and 4 <= int(requests[1]) <= 34, shown  # 34 s, counting down
    assert "tokens          18,000 of 40,000 left (45 %), resets in 6 min" in shown
