"""Cache-aware idle compaction: the decision (pure).

Owns: `cache_lifetime_s` (how long a provider keeps a prompt prefix cached after its last use,
as documented), `IdlePolicy` and `idle_compaction_due` (compact, or prune, before the first
request after a pause that outlived the cache, when that request would re-send many tokens
uncached anyway).

Why: after a coffee break the provider's prompt cache has expired and the next request re-sends
the whole context at the full input price (Anthropic also charges the cache write again). That
request costs the same whatever its prefix looks like, so it is the cheapest moment to make the
context smaller: pruning or a summary then breaks no cache that still exists, and every later
request is smaller.

Documented lifetimes (seconds after the last use that read or wrote the cache):
    anthropic          300 (the default `ephemeral` breakpoint, refreshed on each use), or
                       3,600 when the breakpoints are sent with `"ttl": "1h"` (`extended`)
    openai-chat,       300: OpenAI's default in-memory retention clears cached prefixes after
    openai-responses   5 to 10 minutes of inactivity (at most an hour); the lower bound is
                       used. 86,400 with `prompt_cache_retention: "24h"` (`extended`)
    google             300: Gemini's implicit caching states no lifetime (requests "in a
                       short amount of time" hit); explicit caches default to 3,600
                       (`extended`)
    ollama, local      None: the server's own KV cache does not expire on a clock

Imports nothing from tether; no I/O, no clock (the caller passes the idle time).
"""

from __future__ import annotations

from dataclasses import dataclass

ANTHROPIC_TTL_S = 300.0
ANTHROPIC_EXTENDED_TTL_S = 3_600.0
OPENAI_TTL_S = 300.0
OPENAI_EXTENDED_TTL_S = 86_400.0
GOOGLE_TTL_S = 300.0
GOOGLE_EXTENDED_TTL_S = 3_600.0


def cache_lifetime_s(name: str, target: str, *, extended: bool = False) -> float | None:
    """How long `target`'s prompt cache outlives its last use, in seconds; None when it does
    not expire on a clock (a local model: `name` "local", or an Ollama server).

    Args:
        name: the provider's name (`Provider.name`: `local`, `anthropic`, a custom endpoint...).
        target: the wire API (`Provider.target`).
        extended: the requests ask for the longer retention (Anthropic's 1 h TTL, OpenAI's
            24 h retention, a Gemini explicit cache).
    """
    if name == "local" or target == "ollama":
        return None
    if target == "anthropic":
        return ANTHROPIC_EXTENDED_TTL_S if extended else ANTHROPIC_TTL_S
    if target in ("openai-chat", "openai-responses"):
        return OPENAI_EXTENDED_TTL_S if extended else OPENAI_TTL_S
    if target == "google":
        return GOOGLE_EXTENDED_TTL_S if extended else GOOGLE_TTL_S
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class IdlePolicy:
    """Settings of idle compaction (`context.idle_compact`).

    Attributes:
        min_tokens: act only when the next request would re-send more than this many tokens
            uncached.
        lifetime_s: the cache lifetime in seconds, overriding the provider's documented one
            (`cache_lifetime_s`); None: the documented one.
    """

    min_tokens: int = 50_000
    lifetime_s: float | None = None


def idle_compaction_due(
    *, idle_s: float | None, lifetime_s: float | None, tokens: int, policy: IdlePolicy
) -> bool:
    """Whether to make the context smaller before the next request.

    True when the session has been idle (since the last reply) longer than the cache lifetime
    (the policy's, else `lifetime_s`) and the request would send more than `policy.min_tokens`
    tokens (all of them uncached now). False when nothing was sent yet (`idle_s` None) or the
    cache does not expire (`lifetime_s` None and no override).
    """
    life = policy.lifetime_s if policy.lifetime_s is not None else lifetime_s
    if idle_s is None or life is None:
        return False
    return idle_s > life and tokens > policy.min_tokens


class IdleWatch:
    """When the session last heard from the provider (pure: the caller passes the time, e.g.
    `time.monotonic()`, so tests inject a clock).

    Args:
        policy: the thresholds (`IdlePolicy`).
    """

    def __init__(self, policy: IdlePolicy) -> None:
        self.policy = policy
        self._last: float | None = None

    def replied(self, now: float) -> None:
        """A reply arrived at `now` (it read or wrote the cache, so its lifetime restarts)."""
        self._last = now

    def idle_s(self, now: float) -> float | None:
        """Seconds since the last reply, or None before the first."""
        return None if self._last is None else max(0.0, now - self._last)

    def due(self, now: float, *, lifetime_s: float | None, tokens: int) -> bool:
        """`idle_compaction_due` for a request sent at `now`."""
        return idle_compaction_due(
            idle_s=self.idle_s(now), lifetime_s=lifetime_s, tokens=tokens, policy=self.policy
        )
