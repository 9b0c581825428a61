"""One model request as the loop sees it: attempts, retries and fallback over a provider chain.

Owns: running a request against each provider of the chain in turn, retrying one provider under
a `RetryPolicy`, a fresh `Assembler` per attempt, discarding a failed attempt's partial turn,
emitting `retry` / `fallback` / `error` events, and raising `RunError` when the chain is spent.
Does not own: the retry and fallback rules (`tether.providers.retry`, `tether.providers.fallback`),
building the request (the loop passes a builder: the wire view differs per target), persisting
the turn (the loop does, after success).

Sticky fallback: a chain position that failed over is benched (`Bench`) for the policy's
`fallback_cooldown_s` (a longer Retry-After wins), so the agent's later requests (the rest of
the run, and of a chat or ACP session: the agent keeps its `Attempts`) start at the first
position not benched instead of paying the head's retries every turn; the benched positions
are still tried, last, when every other one fails. A spent chain clears the bench (the next
request starts at the head again); a model switch makes a new one.

Guarantees: a failed attempt's events never reach the session; its partial turn is dropped
before any wait, so a cancellation during the wait persists nothing of it. `current` is the
assembler of the attempt in flight (the loop persists its partial turn on cancellation).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from tether.agent.events import (
    AgentEvent,
    DiscardEvent,
    EnvEvent,
    ErrorEvent,
    FallbackEvent,
    RetryEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    WarningEvent,
)
from tether.errors import RunError
from tether.messages import Provenance, Usage
from tether.providers.assemble import Assembler
from tether.providers.base import (
    EnvNotice,
    ModelRequest,
    Provider,
    StreamError,
    TextDelta,
    ThinkingDelta,
)
from tether.providers.base import StreamWarning as ProviderWarning
from tether.providers.fallback import falls_back
from tether.providers.retry import Delay, RetryPolicy, is_retryable, with_retries
from tether.providers.streaming import incomplete
from tether.tracing import NO_TRACING, Tracing

_EMITTED: frozenset[type] = frozenset((TextDelta, ThinkingDelta, ProviderWarning, EnvNotice))
"""The stream events `Attempts._attempt` turns into agent events (the others only feed the
assembler)."""

SIDE_TURN_ID = "side-request"
"""The id of a side request's assembled reply (never persisted)."""

RequestBuilder = Callable[[int, Provider], ModelRequest]
"""(index in the chain, provider) → the request for that provider (its own wire view)."""


def provenance_of(provider: Provider) -> Provenance:
    """Provider name, target and model, as recorded on an assistant turn."""
    return Provenance(provider=provider.name, api=provider.target, model=provider.model)


def _label(provider: Provider) -> str:
    return f"{provider.name}/{provider.model}"


class Bench:
    """Chain positions that failed over, each skipped until a time of `clock` (seconds).

    Args:
        clock: monotonic seconds (tests inject one).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.until: dict[int, float] = {}

    def order(self, size: int) -> list[int]:
        """The positions of a chain of `size` in the order to try them: those not benched, in
        chain order, then the benched ones (a last resort); expired benches are dropped."""
        now = self.clock()
        self.until = {i: t for i, t in self.until.items() if t > now and i < size}
        if not self.until:
            return list(range(size))
        free = [i for i in range(size) if i not in self.until]
        return free + [i for i in range(size) if i in self.until]

    def bench(self, index: int, seconds: float) -> None:
        """Skip `index` for `seconds` from now (no-op for 0)."""
        if seconds > 0:
            self.until[index] = self.clock() + seconds

    def clear(self) -> None:
        self.until.clear()


class Attempts:
    """Runs requests over a provider chain.

    Args:
        chain: providers in fallback order (at least one).
        policy: retries per provider.
        emit: receives `text_delta`, `thinking_delta`, `retry`, `fallback`, `error`, `warning`
            and `env` events (a provider's `EnvNotice`).
        sleep: the async sleep between attempts, in seconds (tests inject a recorder).
        rng: the jitter source, floats in [0, 1).
        tracing: opens a `chat` span per provider tried (retries included); off by default.
        bench: the positions that failed over (sticky fallback, module docstring); a new one
            by default, the previous `Attempts`' when the chain is the same (a settings
            change).
    """

    def __init__(
        self,
        chain: Sequence[Provider],
        *,
        policy: RetryPolicy,
        emit: Callable[[AgentEvent], None],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
        tracing: Tracing = NO_TRACING,
        bench: Bench | None = None,
    ) -> None:
        if not chain:
            raise ValueError("a provider chain needs at least one provider")
        self.chain = tuple(chain)
        self.policy = policy
        self.emit = emit
        self.sleep = sleep
        self.rng = rng
        self.tracing = tracing
        self.bench = bench if bench is not None else Bench()
        self.current: Assembler | None = None

    async def request(
        self,
        turn_id: str,
        build: RequestBuilder,
        *,
        quiet: Sequence[str] | bool = (),
        deltas: bool = True,
    ) -> tuple[Provider, Assembler]:
        """Get one complete reply.

        Args:
            turn_id: the id the assembled turn gets (the same for every attempt).
            build: makes the request for a chain position.
            quiet: error kinds raised without the `error` event (the caller handles them, e.g.
                `context_overflow` answered by a compaction, and emits the event if it cannot);
                True for every kind.
            deltas: emit `text_delta` / `thinking_delta` events (False for side requests such
                as a compaction summary, which the host does not show as the answer).

        Returns:
            The provider that answered and the finished assembler (its `done` is set).

        Raises:
            RunError: every provider of the chain failed (or a failure does not fall back);
                kind and message are the last fault's. An `error` event is emitted first.
            asyncio.CancelledError: propagated; `current` holds the attempt in flight, if any.
        """
        self.current = None
        last: StreamError | None = None
        failed: Provider | None = None
        order = self.bench.order(len(self.chain))
        for n, i in enumerate(order):
            provider = self.chain[i]
            if last is not None and failed is not None:
                self.emit(
                    FallbackEvent(
                        from_model=_label(failed),
                        to_model=_label(provider),
                        kind=last.kind,
                        message=last.message,
                    )
                )
            request = build(i, provider)
            result = await self._on_provider(provider, request, turn_id, deltas)
            if not isinstance(result, StreamError):
                self.bench.until.pop(i, None)
                return provider, result
            last, failed = result, provider
            if not falls_back(last):
                break
            if n + 1 == len(order):  # the chain is spent: the next request starts at the head
                self.bench.clear()
            else:
                wait = max(self.policy.fallback_cooldown_s, last.retry_after_s or 0.0)
                self.bench.bench(i, wait)
        assert last is not None
        message = self._explain(last)
        if quiet is not True and (quiet is False or last.kind not in quiet):
            self.emit(ErrorEvent(kind=last.kind, message=message))
        raise RunError(last.kind, message)

    async def _on_provider(
        self, provider: Provider, request: ModelRequest, turn_id: str, deltas: bool
    ) -> Assembler | StreamError:
        """`provider`'s reply under the retry policy, or its last fault; one `chat` span per
        provider tried, its retries included."""
        with self.tracing.request(provider, request) as span:

            def on_retry(attempt: int, event: StreamError, delay: Delay) -> None:
                span.retry(attempt, event.kind, delay.delay_s)
                self.emit(
                    RetryEvent(
                        attempt=attempt,
                        kind=event.kind,
                        delay_s=delay.delay_s,
                        from_retry_after=delay.from_retry_after,
                        provider=provider.name,
                        model=provider.model,
                        message=event.message,
                    )
                )

            result = await with_retries(
                lambda: self._attempt(provider, request, turn_id, deltas),
                self.policy,
                sleep=self.sleep,
                rng=self.rng,
                on_retry=on_retry,
            )
            if isinstance(result, StreamError):
                span.failed(result.kind, result.message)
            else:
                span.request_done(result)
            return result

    async def _attempt(
        self, provider: Provider, request: ModelRequest, turn_id: str, deltas: bool = True
    ) -> Assembler | StreamError:
        """One attempt: stream into a fresh assembler; its fault as a value, after dropping the
        partial turn."""
        assembler = Assembler(turn_id, provenance_of(provider))
        self.current = assembler
        text_chars = thinking_chars = 0
        feed = assembler.feed
        async for event in provider.stream(request):
            feed(event)
            if type(event) not in _EMITTED:  # final classes: one lookup, not four isinstance
                continue
            if deltas and isinstance(event, TextDelta):
                text_chars += len(event.text)
                self.emit(TextDeltaEvent(text=event.text))
            elif deltas and isinstance(event, ThinkingDelta):
                thinking_chars += len(event.text)
                self.emit(ThinkingDeltaEvent(text=event.text))
            if isinstance(event, ProviderWarning):
                self.emit(WarningEvent(kind=event.kind, message=event.message))
            elif isinstance(event, EnvNotice):  # the provider's environment changed
                self.emit(
                    EnvEvent(
                        what=event.what,
                        name=event.name,
                        state=event.state,
                        detail=event.detail,
                        data=dict(event.data),
                    )
                )
        if assembler.error is None and assembler.done is not None:
            return assembler
        self.current = None  # discarded: never persisted, no tool runs from it
        failure = assembler.error or incomplete("terminal event")
        if text_chars or thinking_chars:  # hosts already showed them: tell them to drop them
            self.emit(
                DiscardEvent(
                    kind=failure.kind, text_chars=text_chars, thinking_chars=thinking_chars
                )
            )
        return failure

    def _explain(self, event: StreamError) -> str:
        """The final message; says when to come back if the server's wait exceeded the cap."""
        after = event.retry_after_s
        if after is not None and is_retryable(event) and after > self.policy.retry_max_s:
            return (
                f"{event.message} (the server asks to retry after {after:g} s, beyond "
                f"retry_max {self.policy.retry_max_s:g} s; try again later)"
            )
        return event.message


def summary_call(attempts: Attempts) -> Callable[[ModelRequest], Awaitable[tuple[str, Usage | None]]]:
    """A side request (no tools, e.g. a compaction summary) through `attempts`: the same
    retries, Retry-After waits and fallback as every turn; `retry` / `fallback` events are
    emitted, text deltas and the final `error` event are not (the caller decides).

    The returned function takes a request (its `model` is replaced by each provider's own)
    and returns the reply's text and usage.

    Raises (from the returned function):
        RunError: the chain is spent (kind and message of the last fault).
    """

    async def call(request: ModelRequest) -> tuple[str, Usage | None]:
        def build(_i: int, provider: Provider) -> ModelRequest:
            return replace(request, model=provider.model)

        _, assembler = await attempts.request(SIDE_TURN_ID, build, quiet=True, deltas=False)
        turn = assembler.turn()
        return turn.text, turn.usage

    return call
