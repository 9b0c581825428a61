"""What an agent takes from the process it runs in, as one injectable object.

Owns: `Runtime` — the environment tool subprocesses start from, extra secret values to redact,
the tool-worker argv hook, and the sources of waiting, jitter and ids. Everyday code never
passes one (the defaults are the real process); tests and embedding hosts do, e.g.
`tether.testing.deterministic()` (instant sleeps, fixed jitter, counting ids).
Does not own: anything a settings file can say (that is `tether.AgentConfig`).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from tether.tools.context import Wrap
from tether.tracing import Tracing


def default_id_factory() -> Callable[[], str]:
    """Turn ids `<8 hex>-<n>`: a random prefix per run, then a counter (unique, sortable)."""
    prefix = secrets.token_hex(4)
    counter = itertools.count(1)
    return lambda: f"{prefix}-{next(counter)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """The process-facing parts of an agent (all optional).

    Attributes:
        env: the base environment for tool subprocesses (API keys and the config's refused
            names are always scrubbed from it); None for this process's environment. Also the
            environment the retry overrides (`TETHER_RETRY_*`) and key lookups read.
        secret_texts: more values redacted from tool output (e.g. keys read from a vault).
        wrap: rewrites a tool worker's argv before it starts (replaces the OS sandbox hook).
        sleep: the async sleep between retries, in seconds.
        rng: the retry jitter source, floats in [0, 1).
        new_id: mints turn ids; None: a fresh `default_id_factory()` per agent.
        tracing: where spans go (e.g. `tether.tracing.otel.OtelTracing(provider)` over your
            own OpenTelemetry `TracerProvider`); None: as the config's `tracing` section says.
    """

    env: Mapping[str, str] | None = None
    secret_texts: tuple[str, ...] = ()
    wrap: Wrap | None = field(default=None, compare=False)
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False)
    rng: Callable[[], float] = field(default=random.random, compare=False)
    new_id: Callable[[], str] | None = field(default=None, compare=False)
    tracing: Tracing | None = field(default=None, compare=False)
