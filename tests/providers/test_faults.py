"""Provider faults through the REAL adapters (openai_chat, anthropic) and the whole Agent, served
by the fault-injection server (tests/kit/faultserver.py).

Each test asserts the fault's class, how many requests reached the server, the retry delays the
loop asked for (the sleep is injected: nothing really sleeps), and that nothing partial was
persisted (session file) or executed (a tool that records its calls). Cases T28, T29, T30.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kit.agents import make_agent
from kit.cases import load_case
from kit.faultserver import (
    FaultServer,
    Step,
    error_after_200,
    malformed,
    max_tokens,
    reset,
    status,
    text,
    tool,
    truncated_tool,
)
from tether import Runtime
from tether.agent.events import AgentEvent, FallbackEvent, RetryEvent
from tether.agent.sessions import AgentSession
from tether.errors import LengthResumeExhausted, RunError
from tether.messages import Turn, turn_from_dict
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import Provider
from tether.providers.openai_chat import OpenAIChatProvider
from tether.providers.retry import RetryPolicy
from tether.session import SessionStore
from tether.tools.base import Tool
from tether.tools.base import tool as make_tool
from tether.wire.interrupts import is_cancelled_reply

Make = Callable[[FaultServer], Provider]


def openai(server: FaultServer) -> Provider:
    return OpenAIChatProvider("m", base_url=server.openai_url, api_key="k")


def anthropic(server: FaultServer) -> Provider:
    return AnthropicProvider("m", base_url=server.anthropic_url, api_key="k")


BOTH = pytest.mark.parametrize("make", [openai, anthropic], ids=["openai", "anthropic"])


def retry_settings(policy: RetryPolicy, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings carrying `policy` (and the `run` section given)."""
    retry = {
        "max_attempts": policy.max_attempts,
        "base": f"{policy.retry_base_s}s",
        "max": f"{policy.retry_max_s}s",
    }
    return {"retry": retry, "run": run or {}}


class Harness:
    """An Agent on a session file, with a recording `write` tool, a recorded sleep and a fixed
    jitter draw."""

    def __init__(
        self,
        tmp_path: Path,
        providers: list[Provider],
        policy: RetryPolicy,
        run: dict[str, Any] | None = None,
    ) -> None:
        self.sleeps: list[float] = []
        self.calls: list[dict[str, Any]] = []
        self.events: list[AgentEvent] = []
        self.store = SessionStore(tmp_path / "store")
        self.writer = self.store.create(cwd=str(tmp_path))

        def write(path: str, content: str) -> str:
            """Write a file.

            Args:
                path: where.
                content: what.
            """
            self.calls.append({"path": path, "content": content})
            return "written"

        async def sleep(seconds: float) -> None:
            self.sleeps.append(seconds)

        self.tool: Tool = make_tool(write)
        self.agent = make_agent(
            providers,
            tmp_path,
            settings=retry_settings(policy, run),
            tools=[self.tool],
            events=self.events,
            session=AgentSession(sink=self.writer),
            runtime=Runtime(sleep=sleep, rng=lambda: 0.5),
        )

    def stored(self) -> list[Turn]:
        rows = [json.loads(x) for x in self.writer.path.read_text().splitlines()[1:]]
        return [turn_from_dict(r["turn"]) for r in rows if r["type"] == "turn"]

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


POLICY = RetryPolicy(max_attempts=3, retry_base_s=2.0, retry_max_s=30.0)
JITTER = 0.5 * 2.0 / 4  # rng 0.5 → a quarter of the base, halved


# --- T28: overload after HTTP 200 -------------------------------------------------------------


@BOTH
async def test_t28_overload_mid_stream_is_retried_and_the_partial_discarded(
    tmp_path: Path, make: Make
) -> None:
    case = load_case("T28")
    error_type = case["input"]["sse"][-1]["data"]["error"]["type"]
    partial = case["input"]["sse"][2]["delta"]["text"]
    with FaultServer([error_after_200(error_type, partial), text("It is the fixture.")]) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        result = await h.agent.run("why does the test fail?")
        assert len(server.requests) == 2
    assert result.text == "It is the fixture."
    (retry,) = h.of(RetryEvent)
    assert retry.kind == "overloaded" and retry.attempt == 1 and not retry.from_retry_after
    assert h.sleeps == [2.0 + JITTER]
    stored = h.stored()
    assert [t.role for t in stored] == ["user", "assistant"]
    assert all(partial not in t.text for t in stored)  # the partial reply never reached the file


@BOTH
async def test_t28_retry_budget_spent_leaves_history_at_the_last_complete_turn(
    tmp_path: Path, make: Make
) -> None:
    with FaultServer([error_after_200()] * 3) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        with pytest.raises(RunError) as info:
            await h.agent.run("go")
        assert len(server.requests) == 3
    assert info.value.kind == "overloaded"
    assert [e.attempt for e in h.of(RetryEvent)] == [1, 2]
    assert h.sleeps == [2.0 + JITTER, 4.0 + JITTER]
    assert [t.role for t in h.stored()] == ["user"]
    assert [e.type for e in h.events][-2:] == ["error", "done"]


# --- T29: Retry-After -------------------------------------------------------------------------


@BOTH
async def test_t29_retry_after_is_the_minimum_wait(tmp_path: Path, make: Make) -> None:
    case = load_case("T29")
    first = case["input"]["responses"][0]
    wait = first["headers"]["retry-after"]
    policy = RetryPolicy(max_attempts=3, retry_base_s=2.0, retry_max_s=120.0)
    with FaultServer([status(first["status"], retry_after=wait), text("ok")]) as server:
        h = Harness(tmp_path, [make(server)], policy)
        await h.agent.run("go")
        assert len(server.requests) == 2
    assert h.sleeps == [60.0]  # the first retry is scheduled at >= 60 s, not at 2 s
    (retry,) = h.of(RetryEvent)
    assert retry.kind == "rate_limited" and retry.delay_s == 60.0 and retry.from_retry_after


@BOTH
async def test_t29_retry_after_beyond_the_cap_stops_and_says_when(
    tmp_path: Path, make: Make
) -> None:
    with FaultServer([status(429, retry_after="60")]) as server:
        h = Harness(tmp_path, [make(server)], POLICY)  # retry_max 30 s < 60 s
        with pytest.raises(RunError) as info:
            await h.agent.run("go")
        assert len(server.requests) == 1  # no retry wasted inside the server's cooldown
    assert info.value.kind == "rate_limited"
    assert "retry after 60 s" in str(info.value)
    assert h.sleeps == []


# --- other faults -----------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize(
    ("fault", "kind", "retried"),
    [
        (status(500), "provider", True),
        (status(529), "overloaded", True),
        (status(503), "provider", True),
        (reset(), "network", True),
        (truncated_tool("write", '{"path": "a.md", "content": "li', "closed"), "network", True),
        (malformed(), "malformed", False),
        (
            status(400, {"error": {"message": "bad tool schema", "type": "invalid_request_error"}}),
            "provider",
            False,
        ),
        (status(401), "auth", False),
        (
            status(
                429,
                {
                    "error": {
                        "message": "You exceeded your current quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            ),
            "auth",
            False,
        ),
        (
            status(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "prompt is too long: 250000 tokens > 200000 maximum",
                    },
                },
            ),
            "context_overflow",
            False,
        ),
    ],
)
async def test_fault_class_attempts_and_nothing_partial(
    tmp_path: Path, make: Make, fault: Step, kind: str, retried: bool
) -> None:
    with FaultServer([fault] * 3) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        with pytest.raises(RunError) as info:
            await h.agent.run("go")
        attempts = len(server.requests)
    assert info.value.kind == kind
    assert attempts == (3 if retried else 1)
    assert len(h.sleeps) == attempts - 1
    assert h.calls == []
    assert [t.role for t in h.stored()] == ["user"]


@BOTH
async def test_a_reset_then_success_runs_the_tool_once(tmp_path: Path, make: Make) -> None:
    with FaultServer([reset(), tool("write", path="n.md", content="x"), text("done")]) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        result = await h.agent.run("go")
        assert len(server.requests) == 3
    assert result.text == "done"
    assert h.calls == [{"path": "n.md", "content": "x"}]
    assert [t.role for t in h.stored()] == ["user", "assistant", "user", "assistant"]


# --- T30 through the server -------------------------------------------------------------------

CUT = '{"path": "notes.md", "content": "line1\\nline2'


@BOTH
@pytest.mark.parametrize("termination", ["closed", "length", "tool_calls"])
async def test_t30_truncated_arguments_never_execute(
    tmp_path: Path, make: Make, termination: str
) -> None:
    """Cut → retry (nothing persisted); `length` / unparseable finish → persisted as an invalid
    call with an is_error result, never executed."""
    script = [truncated_tool("write", CUT, termination), text("re-issued in pieces")]
    with FaultServer(script) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        await h.agent.run("write notes")
    assert h.calls == []
    stored = h.stored()
    if termination == "closed":
        assert [t.role for t in stored] == ["user", "assistant"] and h.of(RetryEvent)
    else:
        (bad,) = stored[1].tool_calls
        assert bad.invalid is not None and bad.raw_arguments == CUT
        (res,) = stored[2].tool_results
        assert res.is_error and "was not run" in res.text


# --- fallback ---------------------------------------------------------------------------------


async def test_fallback_to_the_next_provider_after_retries(tmp_path: Path) -> None:
    with FaultServer([status(529)] * 2) as bad, FaultServer([text("from anthropic")]) as good:
        h = Harness(
            tmp_path,
            [openai(bad), AnthropicProvider("claude", base_url=good.anthropic_url, api_key="k")],
            RetryPolicy(max_attempts=2, retry_base_s=1.0, retry_max_s=5.0),
        )
        result = await h.agent.run("go")
        assert (len(bad.requests), len(good.requests)) == (2, 1)
        # the request was rebuilt for the other wire format
        assert "messages" in good.requests[0]["body"] and "max_tokens" in good.requests[0]["body"]
    assert result.text == "from anthropic"
    (fb,) = h.of(FallbackEvent)
    assert (fb.from_model, fb.to_model, fb.kind) == ("openai/m", "anthropic/claude", "overloaded")
    (turn,) = [t for t in h.stored() if t.role == "assistant"]
    assert turn.provenance is not None and turn.provenance.provider == "anthropic"


async def test_auth_falls_back_but_context_overflow_does_not(tmp_path: Path) -> None:
    with FaultServer([status(401), text("b")]) as a:
        (tmp_path / "1").mkdir()
        h = Harness(tmp_path / "1", [openai(a), openai(a)], POLICY)
        assert (await h.agent.run("go")).text == "b"
    overflow = status(
        400,
        {
            "error": {
                "message": "x",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    )
    with FaultServer([overflow, text("never")]) as b:
        (tmp_path / "2").mkdir()
        h = Harness(tmp_path / "2", [openai(b), openai(b)], POLICY)
        with pytest.raises(RunError) as info:
            await h.agent.run("go")
        assert len(b.requests) == 1
    assert info.value.kind == "context_overflow" and not h.of(FallbackEvent)


async def test_a_model_list_is_the_fallback_chain(tmp_path: Path) -> None:
    with FaultServer([status(500), text("second")]) as server:
        agent = make_agent(
            [openai(server), anthropic(server)],
            tmp_path,
            settings=retry_settings(RetryPolicy(max_attempts=1)),
        )
        assert agent.provider.name == "openai" and len(agent.chain) == 2
        assert (await agent.run("go")).text == "second"
        assert [r["path"] for r in server.requests] == ["/v1/chat/completions", "/v1/messages"]


async def test_a_fallback_is_sticky_for_the_later_requests_of_the_run(tmp_path: Path) -> None:
    """The head failed over once: the run's next requests go straight to the model that
    worked, not through the head's retries again (trial5: 13 s of retries before every turn)."""
    down = FaultServer(lambda _n, _p, _b: status(500))
    with down, FaultServer([tool("write", path="a", content="x"), text("done")]) as good:
        h = Harness(tmp_path, [openai(down), openai(good)], POLICY)
        result = await h.agent.run("go")
        assert result.text == "done" and len(h.calls) == 1
        assert (len(down.requests), len(good.requests)) == (3, 2)
    assert len(h.of(FallbackEvent)) == 1 and len(h.sleeps) == 2  # one failover, its 2 retries


async def test_a_sticky_fallback_lasts_the_cooldown_or_a_longer_retry_after(
    tmp_path: Path,
) -> None:
    now = [0.0]
    script = [status(429, retry_after="1000"), text("b1"), text("b2"), text("a3"), text("b4")]
    by_path: list[str] = []

    def step(n: int, path: str, body: Any) -> Step:
        by_path.append(body["model"])
        return script[n - 1]

    with FaultServer(step) as server:
        h = Harness(
            tmp_path,
            [
                OpenAIChatProvider("a", base_url=server.openai_url, api_key="k"),
                OpenAIChatProvider("b", base_url=server.openai_url, api_key="k"),
            ],
            POLICY,
        )
        h.agent.parts.attempts.bench.clock = lambda: now[0]
        assert (await h.agent.run("one")).text == "b1"  # Retry-After 1000 s > retry max: no retry
        now[0] = 400.0  # past the 300 s cool-down, inside the server's 1000 s
        assert (await h.agent.run("two")).text == "b2"
        now[0] = 1001.0
        assert (await h.agent.run("three")).text == "a3"  # the head again
    assert by_path == ["a", "b", "b", "a"]


async def test_fallback_cooldown_zero_goes_back_to_the_head(tmp_path: Path) -> None:
    with FaultServer([status(401), text("1"), status(401), text("2")]) as server:
        h = Harness(tmp_path, [openai(server), anthropic(server)], POLICY)
        h.agent.apply_settings({"retry.fallback_cooldown_s": 0})
        await h.agent.run("one")
        await h.agent.run("two")
        paths = [r["path"] for r in server.requests]
    assert paths == ["/v1/chat/completions", "/v1/messages"] * 2


async def test_a_spent_chain_starts_at_the_head_again(tmp_path: Path) -> None:
    with FaultServer([status(401), status(401), text("head")]) as server:
        h = Harness(tmp_path, [openai(server), anthropic(server)], POLICY)
        with pytest.raises(RunError):
            await h.agent.run("one")
        assert (await h.agent.run("two")).text == "head"
        assert server.requests[-1]["path"] == "/v1/chat/completions"


# --- cancellation during a retry wait ---------------------------------------------------------


async def test_cancel_during_the_wait_persists_nothing_of_the_failed_attempt(
    tmp_path: Path,
) -> None:
    with FaultServer([error_after_200()]) as server:
        h = Harness(tmp_path, [openai(server)], POLICY)

        async def hang(_s: float) -> None:
            await asyncio.Event().wait()

        h.agent.parts.attempts.sleep = hang
        task = asyncio.ensure_future(h.agent.run("go"))
        while not h.of(RetryEvent):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # nothing of the failed attempt: the prompt, then only the empty reply that records the
    # cancel (the wire view renders it as the interruption note: `tether.wire.interrupts`)
    stored = h.stored()
    assert [t.role for t in stored] == ["user", "assistant"]
    assert is_cancelled_reply(stored[1])


# --- run limits through the server ------------------------------------------------------------


@BOTH
async def test_max_tokens_is_continued_into_one_answer(tmp_path: Path, make: Make) -> None:
    with FaultServer(
        [max_tokens("Part one, "), max_tokens("part two, "), text("the end.")]
    ) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        result = await h.agent.run("write a long answer")
        bodies = [r["body"] for r in server.requests]
    assert result.text == "Part one, part two, the end."
    assert h.events[-1].text == result.text  # type: ignore[union-attr]
    last_user = [m for m in bodies[1]["messages"] if m["role"] == "user"][-1]
    assert "Please continue." in json.dumps(last_user)
    roles = [t.role for t in h.stored()]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]


@BOTH
async def test_empty_continuations_stop_with_a_typed_error(tmp_path: Path, make: Make) -> None:
    with FaultServer([max_tokens("A"), max_tokens(""), max_tokens(""), text("never")]) as server:
        h = Harness(tmp_path, [make(server)], POLICY)
        with pytest.raises(LengthResumeExhausted):
            await h.agent.run("go")
        assert len(server.requests) == 3
    assert [e.type for e in h.events][-2:] == ["error", "done"]


async def test_thinking_budget_reaches_the_request(tmp_path: Path) -> None:
    from tether.testing import ScriptedProvider, call

    provider = ScriptedProvider([call("write", path="a", content="b"), "done"])
    h = Harness(
        tmp_path,
        [provider],
        POLICY,
        run={"thinking": {"budget_tokens": 8000, "decay": "step", "floor": 1024, "after_turn": 1}},
    )
    await h.agent.run("go")
    assert [r.thinking_budget_tokens for r in provider.requests] == [8000, 1024]
