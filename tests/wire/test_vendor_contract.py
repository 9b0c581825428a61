"""The wire contract as the providers see it (issue 18).

Generated corrupted histories (`corrupt.histories`) × the five targets → the request each
adapter builds (its own request-building method, the parameters its SDK call sends; no network)
→ the providers' documented request rules (`tether.wire.contract`, written from their docs, not from
tether's code). Half the requests go through `ViewBuilder` as the agent loop builds them
(`is_wire_view=True`), half through the adapter's own `build_view`.

Per target, the default suite runs `SHRINKING_EXAMPLES` Hypothesis-built histories (shrunk on
failure) and `FAST_EXAMPLES` seeded ones (`corrupt.random_history`: the same pools, built by
`random.Random(seed)` from a Hypothesis-drawn seed, ~10x cheaper); the `slow` test runs
`SLOW_EXAMPLES` seeded histories per target (`pytest -m slow tests/wire/test_vendor_contract.py`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.messages import Provenance, Target, Turn
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest, ToolSpec
from tether.providers.google import GoogleProvider
from tether.providers.ollama import OllamaProvider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.openai_responses import OpenAIResponsesProvider
from tether.replay import contract as replay_contract
from tether.wire import ViewBuilder
from tether.wire import contract as rules

from .corrupt import ANTHROPIC, CHAT, GOOGLE, OLLAMA, RESPONSES, histories, random_history

SHRINKING_EXAMPLES = 60
FAST_EXAMPLES = 500
SLOW_EXAMPLES = 20_000

TOOLS = (
    ToolSpec(name="read", description="Read a file.", parameters={"type": "object"}),
    ToolSpec(name="list_dir", description="List a folder.", parameters={"type": "object"}),
)

Check = Callable[[tuple[Turn, ...], bool, str | None], list[str]]


def _request(
    provider: Any,
    target: Target,
    route: Provenance,
    turns: tuple[Turn, ...],
    via_loop: bool,
    system: str | None,
) -> ModelRequest:
    if via_loop:
        vb = ViewBuilder(
            target,
            route=route,
            supports_prefill=provider.info.supports_prefill,
            vendor_endpoint=provider.info.vendor_endpoint,
        )
        return ModelRequest(
            model=route.model,
            messages=vb.view(turns),
            system=system,
            tools=TOOLS,
            is_wire_view=True,
        )
    return ModelRequest(model=route.model, messages=turns, system=system, tools=TOOLS)


def _anthropic(thinking: bool, prefill: bool) -> Check:
    provider = AnthropicProvider(
        ANTHROPIC.model,
        api_key="test-key",
        thinking_budget=2048 if thinking else None,
        max_output_tokens=8192,
        supports_prefill=prefill,
    )

    def check(turns: tuple[Turn, ...], via_loop: bool, system: str | None) -> list[str]:
        req = _request(provider, "anthropic", ANTHROPIC, turns, via_loop, system)
        return replay_contract.anthropic_problems(provider, req)

    return check


def _chat(base_url: str | None = None) -> Check:
    """The official endpoint (`base_url` None: every id held to OpenAI's rules), or a
    compatible server, which accepts the ids it issued (stored, or as it sent them before the
    persist-time re-minting) whatever their length, also repeated across turns."""
    provider = OpenAIChatProvider(
        CHAT.model, api_key="test-key", base_url=base_url, name=CHAT.provider
    )
    assert provider.info.vendor_endpoint == (base_url is None)

    def check(turns: tuple[Turn, ...], via_loop: bool, system: str | None) -> list[str]:
        req = _request(provider, "openai-chat", CHAT, turns, via_loop, system)
        own: frozenset[str] = frozenset()
        if base_url is not None:
            own = frozenset(
                i
                for t in turns
                if t.role == "assistant" and t.provenance == CHAT
                for c in t.tool_calls
                for i in (c.id, (c.provider_meta or {}).get("original_id"))
                if isinstance(i, str)
            )
        return rules.chat_problems(provider.request_messages(req), own_ids=own)

    return check


def _responses() -> Check:
    provider = OpenAIResponsesProvider(
        RESPONSES.model, api_key="test-key", name=RESPONSES.provider, reasoning=True
    )

    def check(turns: tuple[Turn, ...], via_loop: bool, system: str | None) -> list[str]:
        req = _request(provider, "openai-responses", RESPONSES, turns, via_loop, system)
        return rules.responses_problems(provider.request_params(req))

    return check


def _google() -> Check:
    provider = GoogleProvider(GOOGLE.model, api_key="test-key")

    def check(turns: tuple[Turn, ...], via_loop: bool, system: str | None) -> list[str]:
        req = _request(provider, "google", GOOGLE, turns, via_loop, system)
        return rules.gemini_problems(replay_contract.gemini_contents(provider, req))

    return check


def _ollama() -> Check:
    provider = OllamaProvider(OLLAMA.model, base_url="http://127.0.0.1:9")

    def check(turns: tuple[Turn, ...], via_loop: bool, system: str | None) -> list[str]:
        req = _request(provider, "ollama", OLLAMA, turns, via_loop, system)
        return rules.ollama_problems(provider.request_params(req))

    return check


CHECKS: dict[str, Check] = {
    "anthropic": _anthropic(thinking=False, prefill=False),
    "anthropic-thinking": _anthropic(thinking=True, prefill=False),
    "anthropic-prefill": _anthropic(thinking=False, prefill=True),
    "openai-chat": _chat(),
    "openai-chat-compat": _chat("http://127.0.0.1:9/v1"),
    "openai-responses": _responses(),
    "google": _google(),
    "ollama": _ollama(),
}
VARIANTS: dict[str, list[str]] = {
    "anthropic": ["anthropic", "anthropic-thinking", "anthropic-prefill"],
    "openai-chat": ["openai-chat", "openai-chat-compat"],
    "openai-responses": ["openai-responses"],
    "google": ["google"],
    "ollama": ["ollama"],
}
TARGET_NAMES = list(VARIANTS)


def check_view(
    target: str, turns: tuple[Turn, ...], variant: str, via_loop: bool, system: str | None
) -> None:
    # a snapshot as deep as deepcopy's: every field of every block is in a dataclass's repr
    # (none has a custom one, none a repr=False field), at half the cost of a pickle round
    # trip and `==` (the frozen dataclasses' pickling runs `dataclasses.fields` per object)
    before = repr(turns)
    problems = CHECKS[variant](turns, via_loop, system)
    assert repr(turns) == before, "the stored history was mutated"
    assert problems == [], f"{variant} would reject the request: {problems}"


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_every_request_is_accepted(target: str) -> None:
    """Hypothesis-built histories (shrunk to a minimal failing history on failure)."""

    @_settings(SHRINKING_EXAMPLES)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        turns = data.draw(histories(), label="history")
        variant = data.draw(st.sampled_from(VARIANTS[target]), label="variant")
        via_loop = data.draw(st.booleans(), label="via_loop")
        system = data.draw(st.sampled_from([None, "You are terse."]), label="system")
        check_view(target, turns, variant, via_loop, system)

    run()


def _seeded(target: str, n: int, start: int | None = None) -> None:
    """`n` seeded histories from consecutive seeds after a random `start` (new each run, as
    Hypothesis drew them; a plain loop, without Hypothesis's ~1.5 ms per example: nothing
    here shrinks). A failure names its seed: `_seeded(target, 1, start=SEED)` replays it."""
    first = random.SystemRandom().getrandbits(64) if start is None else start
    for i in range(n):
        seed = (first + i) % 2**64
        rng = random.Random(seed)
        turns = random_history(rng)
        variant = rng.choice(VARIANTS[target])
        try:
            check_view(
                target, turns, variant, rng.random() < 0.5, rng.choice([None, "You are terse."])
            )
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from None


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_every_request_is_accepted_seeded(target: str) -> None:
    """`FAST_EXAMPLES` seeded histories per target (`corrupt.random_history`)."""
    _seeded(target, FAST_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGET_NAMES)
def test_every_request_is_accepted_at_scale(target: str) -> None:
    """`SLOW_EXAMPLES` seeded histories per target."""
    _seeded(target, SLOW_EXAMPLES)
