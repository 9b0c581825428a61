"""Plan usage: what a provider learned of its account's limits from the rate-limit headers of
its replies (the seed's `reportPlanUsage`), and how it is shown.

Owns: `RateLimit` and `PlanUsage` (the readout), `parse_rate_limits` (pure: headers → limits),
`PlanWatch` (a provider's latest readout, kept in the user cache so `tether models --usage`
can show it from another process), `plan_usage_of` (any provider: its readout, or the one-line
reason it has none), `usage_lines` (the text `tether models --usage` and the TUI's `/usage`
print).
Does not own: reading the headers off a response (`tether.providers.streaming.drive_stream`
hands them over), the commands.

Header families read (names case-insensitive):
    anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}
        Anthropic's API (reset: an RFC 3339 time);
    anthropic-ratelimit-unified-[WINDOW-]{utilization,reset,status}
        Anthropic's subscription plans (utilization: a fraction; reset: Unix seconds);
    x-ratelimit-{limit,remaining,reset}-{requests,tokens,...}
        OpenAI, Groq and the servers that copy them (reset: a duration, `6m0s`, `12ms`);
    x-ratelimit-{limit,remaining,reset} and ratelimit-{limit,remaining,reset}
        OpenRouter, gateways, the IETF draft (reset: Unix seconds or milliseconds, or seconds
        from now when small).
A value that does not parse is left out; no header raises.

Providers that support it (the Anthropic, OpenAI Chat and Responses adapters, and the
settings-declared compatible endpoints built on them) have a `plan_usage()` method; a library
provider adds one to support it (`PlanWatch` does the work). Without one, `plan_usage_of` says
it is not supported, in one line.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from tether.durations import header_seconds

SAVE_EVERY_S = 5.0
"""A provider's readout is written to the cache at most this often (and always when a limit is
reached), so a busy run does not write a file per request."""

_ANTHROPIC = re.compile(
    r"^anthropic-ratelimit-(?!unified)(?P<what>[a-z0-9-]+?)-(?P<field>limit|remaining|reset)$"
)
_UNIFIED = re.compile(
    r"^anthropic-ratelimit-unified(?:-(?P<what>[a-z0-9_-]+?))?-(?P<field>utilization|reset|status)$"
)
_SUFFIXED = re.compile(r"^x-ratelimit-(?P<field>limit|remaining|reset)-(?P<what>[a-z0-9_-]+)$")
_PLAIN = re.compile(r"^(?:x-)?ratelimit-(?P<field>limit|remaining|reset)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """One limit of the account, as the last reply's headers stated it.

    Attributes:
        name: what is limited: `requests`, `tokens`, `input-tokens`, `output-tokens`, a plan's
            window (`5h`, `7d`; `plan` for the whole plan), or `rate limit` (unnamed).
        limit: the allowance in its window, when stated.
        remaining: what is left of it, when stated.
        used: the fraction used (0-1), when stated (subscription plans state only this).
        resets_at: when it is whole again, Unix seconds, when stated.
        status: the plan's own word (`allowed`, `allowed_warning`, `rejected`), when stated.
    """

    name: str
    limit: int | None = None
    remaining: int | None = None
    used: float | None = None
    resets_at: float | None = None
    status: str | None = None

    @property
    def left_fraction(self) -> float | None:
        """The fraction left (0-1), when it can be told."""
        if self.used is not None:
            return max(0.0, 1.0 - self.used)
        if self.limit and self.remaining is not None:
            return max(0.0, min(1.0, self.remaining / self.limit))
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanUsage:
    """A provider's plan usage as its last reply with rate-limit headers stated it.

    Attributes:
        provider: the provider name (`anthropic`, a `providers.<name>`).
        limits: the limits, in the order the headers named them.
        seen_at: when that reply arrived, Unix seconds.
        status: its HTTP status (429: the limit was hit).
    """

    provider: str
    limits: tuple[RateLimit, ...]
    seen_at: float
    status: int = 200

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "limits": [asdict(x) for x in self.limits]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanUsage:
        """Raises: KeyError, TypeError, ValueError: not a stored readout."""
        limits = tuple(RateLimit(**cast(dict[str, Any], x)) for x in data["limits"])
        return cls(
            provider=str(data["provider"]),
            limits=limits,
            seen_at=float(data["seen_at"]),
            status=int(data.get("status", 200)),
        )


@runtime_checkable
class ReportsPlanUsage(Protocol):
    """The optional provider method: the latest readout, or None when nothing was seen yet."""

    def plan_usage(self) -> PlanUsage | None: ...


def _int(value: str) -> int | None:
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return int(number) if math.isfinite(number) and number >= 0 else None


def _float(value: str) -> float | None:
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _rfc3339(value: str) -> float | None:
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _epoch_or_delta(value: str, now: float) -> float | None:
    """A reset stated as Unix milliseconds, Unix seconds, or seconds from now (small values)."""
    number = _float(value)
    if number is None or number < 0:
        return _rfc3339(value)
    if number > 1e12:
        return number / 1000
    if number > 1e9:
        return number
    return now + number


def parse_rate_limits(headers: Mapping[str, str], now: float) -> tuple[RateLimit, ...]:
    """The limits `headers` state (see the module docstring for the families); `now` (Unix
    seconds) turns relative resets into times. Pure; never raises; empty when there are none."""
    found: dict[str, dict[str, Any]] = {}

    def put(name: str, key: str, value: object) -> None:
        if value is not None:
            found.setdefault(name, {})[key] = value

    for raw_name, raw_value in headers.items():
        name, value = raw_name.lower(), str(raw_value)
        if m := _UNIFIED.match(name):
            what = m["what"] or "plan"
            field = m["field"]
            if field == "utilization":
                used = _float(value)
                put(what, "used", used if used is None or used <= 1 else used / 100)
            elif field == "reset":
                put(what, "resets_at", _epoch_or_delta(value, now))
            else:
                put(what, "status", value.strip() or None)
        elif m := _ANTHROPIC.match(name):
            what, field = m["what"], m["field"]
            if field == "reset":
                put(what, "resets_at", _rfc3339(value) or _epoch_or_delta(value, now))
            else:
                put(what, field, _int(value))
        elif m := _SUFFIXED.match(name):
            what, field = m["what"].replace("_", "-"), m["field"]
            if field == "reset":
                delta = header_seconds(value)
                put(what, "resets_at", None if delta is None else now + delta)
            else:
                put(what, field, _int(value))
        elif m := _PLAIN.match(name):
            field = m["field"]
            if field == "reset":
                put("rate limit", "resets_at", _epoch_or_delta(value, now))
            else:
                put("rate limit", field, _int(value))
    return tuple(RateLimit(name=name, **fields) for name, fields in found.items())


def _in(seconds: float) -> str:
    if seconds < 1:
        return "now"
    if seconds < 120:
        return f"in {seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"in {seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"in {seconds / 3600:.1f} h"
    return f"in {seconds / 86400:.1f} days"


def _ago(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    return _in(seconds).replace("in ", "", 1) + " ago"


def limit_line(limit: RateLimit, now: float) -> str:
    """`requests        42 of 50 left (84 %), resets in 34 s`."""
    parts: list[str] = []
    if limit.remaining is not None and limit.limit is not None:
        parts.append(f"{limit.remaining:,} of {limit.limit:,} left")
    elif limit.remaining is not None:
        parts.append(f"{limit.remaining:,} left")
    elif limit.limit is not None:
        parts.append(f"limit {limit.limit:,}")
    if limit.used is not None:
        parts.append(f"{limit.used * 100:.0f} % used")
    elif (left := limit.left_fraction) is not None:
        parts[-1] += f" ({left * 100:.0f} %)"
    if limit.status:
        parts.append(limit.status.replace("_", " "))
    if limit.resets_at is not None:
        parts.append(f"resets {_in(limit.resets_at - now)}")
    return f"{limit.name:<15} {', '.join(parts) or 'stated without figures'}"


def usage_lines(usage: PlanUsage, now: float | None = None) -> list[str]:
    """The readout as text: a heading line (whose reply, how long ago), then one line a limit."""
    now = time.time() if now is None else now
    when = datetime.fromtimestamp(usage.seen_at).astimezone().strftime("%H:%M:%S")
    hit = ", which was refused: limit reached (429)" if usage.status == 429 else ""
    head = (
        f"{usage.provider}: plan usage from the rate-limit headers of its last reply "
        f"({when}, {_ago(now - usage.seen_at)}){hit}"
    )
    return [head, *("  " + limit_line(x, now) for x in usage.limits)]


def not_supported(name: str) -> str:
    """The one line a provider without `plan_usage` gets."""
    return f"{name}: plan usage is not supported by this provider (it states no rate limits)"


def nothing_seen(name: str) -> str:
    """The one line before any reply stated its limits."""
    return (
        f"{name}: no plan usage seen yet: it is read from the rate-limit headers of the "
        f"provider's replies (run a request first)"
    )


def plan_usage_of(provider: object) -> PlanUsage | str:
    """`provider`'s readout, or the one line saying why there is none (not supported, nothing
    seen yet)."""
    name = str(getattr(provider, "name", type(provider).__name__))
    if not isinstance(provider, ReportsPlanUsage):
        return not_supported(name)
    usage = provider.plan_usage()
    return usage if usage is not None else nothing_seen(name)


def cache_file(name: str, cache_dir: Path) -> Path:
    """Where a provider's latest readout is kept: `<cache>/plan-usage/<name>.json`."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return cache_dir / "plan-usage" / f"{safe}.json"


def load_saved(name: str, cache_dir: Path) -> PlanUsage | None:
    """The readout kept for provider `name`, None when there is none or it is unreadable."""
    try:
        data = json.loads(cache_file(name, cache_dir).read_text(encoding="utf-8"))
        return PlanUsage.from_dict(cast(dict[str, Any], data))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


class PlanWatch:
    """A provider's latest readout: `observe` each reply's headers (`drive_stream`'s
    `on_response`); `latest` is this process's newest, else the one kept in the cache.

    Args:
        name: the provider name (the cache file's).
        cache_dir: the user cache (`tether.providers.models.default_cache_dir()` when None,
            read when first needed).
    """

    def __init__(self, name: str, cache_dir: Path | None = None) -> None:
        self.name = name
        self._cache_dir = cache_dir
        self._latest: PlanUsage | None = None
        self._saved_at = 0.0

    @property
    def cache_dir(self) -> Path:
        if self._cache_dir is None:
            from tether.providers.models import default_cache_dir

            self._cache_dir = default_cache_dir()
        return self._cache_dir

    def observe(self, headers: Mapping[str, str], status: int) -> None:
        """Take a reply's headers (a refused one's too): a new readout when they state limits.
        Never raises (a cache that cannot be written is skipped)."""
        now = time.time()
        limits = parse_rate_limits(headers, now)
        if not limits:
            return
        self._latest = PlanUsage(provider=self.name, limits=limits, seen_at=now, status=status)
        exhausted = status == 429 or any(x.remaining == 0 for x in limits)
        if exhausted or now - self._saved_at >= SAVE_EVERY_S:
            self._saved_at = now
            self._save(self._latest)

    def _save(self, usage: PlanUsage) -> None:
        from tether.atomic import write_atomic

        path = cache_file(self.name, self.cache_dir)
        with contextlib.suppress(OSError):  # a cache: a failed write loses nothing needed
            write_atomic(path, json.dumps(usage.to_dict()).encode(), durable=False, folder_mode=0o700)

    def latest(self) -> PlanUsage | None:
        """This process's newest readout, else the cached one (another run's), else None."""
        return self._latest or load_saved(self.name, self.cache_dir)
