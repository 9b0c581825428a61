"""Model listings for `tether models`: live from the provider, else cached, else bundled.

Owns: asking a provider for its models through its SDK (`models.list` of openai / anthropic /
google-genai, `list` of ollama = `GET /api/tags`), the per-provider cache of the last successful
listing, and the bundled list of known models used when neither is available.
Does not own: credentials (`tether.credentials.lookup_key`, as for `tether run`) or the CLI.

Cache: `<cache dir>/models/<provider>.json` (`<provider>-<sha256(base_url)[:12]>.json` for a
`base_url`), `{"provider", "base_url", "fetched_ms", "models": [...]}`, written atomically after
each successful live listing. The cache dir is `$TETHER_HOME/cache` when `TETHER_HOME` is set,
else `platformdirs.user_cache_path("tether")`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

import platformdirs

from tether.atomic import write_atomic
from tether.errors import AuthError, ConfigError
from tether.providers.catalog import listed_models
from tether.providers.errors import classify_exception

ModelSource = Literal["provider", "cache", "bundled", "settings"]

MODEL_PROVIDERS = ("openai", "openai-responses", "anthropic", "google", "ollama", "local")

BUNDLED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {provider: listed_models(provider) for provider in MODEL_PROVIDERS}
)
"""Models known when this tether was released, per provider (a fallback; the provider's list
wins): the catalog's entries listed for it (`tether.providers.catalog.ModelInfo.listed`)."""

Fetcher = Callable[[str, str | None, float], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelList:
    """One provider's models and where the list came from.

    Attributes:
        provider: the provider name (as in `--model provider/model`).
        models: model names, sorted.
        source: `provider` (listed live), `cache` (the last live listing), `bundled`, or
            `settings` (a settings endpoint's configured model, its listing having failed).
        fetched_ms: when the list was fetched from the provider (Unix ms), None for bundled.
        note: why the live listing was not used (no key, unreachable, ...), or None.
    """

    provider: str
    models: tuple[str, ...]
    source: ModelSource
    fetched_ms: int | None = None
    note: str | None = None


def default_cache_dir() -> Path:
    """`$TETHER_HOME/cache` when `TETHER_HOME` is set, else the user cache dir (platformdirs)."""
    home = os.environ.get("TETHER_HOME", "")
    if home:
        return Path(home).expanduser() / "cache"
    return platformdirs.user_cache_path("tether")


def cache_path(provider: str, base_url: str | None, cache_dir: Path) -> Path:
    """The cache file of one provider (and base URL)."""
    name = provider
    if base_url:
        name += "-" + hashlib.sha256(base_url.encode()).hexdigest()[:12]
    return cache_dir / "models" / f"{name}.json"


def _key(provider: str, base_url: str | None) -> str | None:
    """The provider's key by tether's lookup order (environment, keyring, credential file); for
    another endpoint (`base_url`) the environment's only: a key `tether login` stored goes only
    to its provider's own endpoint."""
    from tether.credentials import lookup_key

    return lookup_key(provider, type_=provider, stored=base_url is None)


async def fetch_models(
    provider: str, base_url: str | None, timeout_s: float, *, key: str | None = None
) -> list[str]:
    """Ask the provider for its models through its SDK, with `key` (default: the provider's
    own, by tether's lookup order; with a `base_url`, only from the environment).

    Raises:
        AuthError: no API key for a provider's official endpoint.
        ConfigError: a provider without a listing (`local`) or unknown.
        Exception: whatever the SDK raises (unreachable, HTTP errors).
    """
    if provider in ("openai", "openai-responses"):
        import openai

        key = key or _key(provider, base_url)
        if key is None and base_url is None:
            raise AuthError("no OpenAI API key (OPENAI_API_KEY)")
        oc = openai.AsyncOpenAI(
            api_key=key or "not-needed", base_url=base_url, max_retries=0, timeout=timeout_s
        )
        return [m.id async for m in oc.models.list()]
    if provider == "anthropic":
        import anthropic

        key = key or _key(provider, base_url)
        if key is None and base_url is None and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            raise AuthError("no Anthropic API key (ANTHROPIC_API_KEY)")
        ac = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s
        )
        return [m.id async for m in ac.models.list()]
    if provider == "google":
        from google import genai
        from google.genai import types as gt

        key = key or _key(provider, base_url)
        if key is None:
            raise AuthError("no Gemini API key (GEMINI_API_KEY or GOOGLE_API_KEY)")
        options = gt.HttpOptions(base_url=base_url, timeout=int(timeout_s * 1000))
        gc = genai.Client(api_key=key, http_options=options)
        pager = await gc.aio.models.list()
        return [(m.name or "").removeprefix("models/") async for m in pager if m.name]
    if provider == "ollama":
        import ollama

        host = base_url or os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
        listing = await ollama.AsyncClient(host=host, timeout=timeout_s).list()
        return [m.model for m in listing.models if m.model]
    raise ConfigError(f"provider {provider!r} has no model listing")


def read_cache(path: Path) -> tuple[list[str], int | None] | None:
    """The models and fetch time in a cache file, or None when absent or unreadable."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        models: object = data["models"]
        fetched: object = data.get("fetched_ms")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(models, list):
        return None
    names = [m for m in cast(list[object], models) if isinstance(m, str)]
    if len(names) != len(cast(list[object], models)):
        return None
    return names, fetched if isinstance(fetched, int) else None


def write_cache(
    path: Path, provider: str, base_url: str | None, models: list[str], fetched_ms: int
) -> None:
    """Write a cache file atomically (`tether.atomic.write_atomic`: temporary file,
    fsync, rename; mode 0o600). Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "provider": provider,
        "base_url": base_url,
        "fetched_ms": fetched_ms,
        "models": models,
    }
    write_atomic(path, json.dumps(payload).encode(), mode=0o600)


def why_failed(exc: Exception) -> str:
    """A listing's failure in one line: a settings problem as it is, else its kind and message."""
    if isinstance(exc, ConfigError):
        return str(exc)
    event = classify_exception(exc)
    return f"{event.kind}: {event.message}"


async def list_models(
    provider: str,
    *,
    base_url: str | None = None,
    cache_dir: Path | None = None,
    timeout_s: float = 10.0,
    fetch: Fetcher = fetch_models,
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> ModelList:
    """One provider's models: live when reachable (and then cached), else the cache, else the
    bundled `BUNDLED`.

    Args:
        provider: one of `MODEL_PROVIDERS`.
        base_url: the provider's endpoint (an OpenAI-compatible server, an Ollama host, ...).
        cache_dir: defaults to `default_cache_dir()`.
        timeout_s: the live listing's timeout, in seconds.
        fetch, clock_ms: injected for tests.

    Raises:
        ConfigError: an unknown provider.
    """
    if provider not in MODEL_PROVIDERS:
        raise ConfigError(
            f"unknown provider {provider!r}; use one of: {', '.join(MODEL_PROVIDERS)}"
        )
    if provider == "local":
        return ModelList(provider=provider, models=BUNDLED["local"], source="bundled")
    return await live_or_cached(
        provider,
        provider,
        base_url,
        fetch(provider, base_url, timeout_s),
        (BUNDLED[provider], "bundled"),
        cache_dir=cache_dir,
        clock_ms=clock_ms,
    )


async def live_or_cached(
    name: str,
    kind: str,
    base_url: str | None,
    live: Awaitable[list[str]],
    fallback: tuple[tuple[str, ...], ModelSource],
    *,
    cache_dir: Path | None = None,
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    raised: tuple[type[Exception], ...] = (),
) -> ModelList:
    """The listing `name` gets from `live` (then cached under `kind` and `base_url`); when it
    fails (but with one of `raised`, which propagates; so does CancelledError), the cache, else
    `fallback` (models, source), with the failure as the note."""
    path = cache_path(kind, base_url, cache_dir or default_cache_dir())
    try:
        models = sorted(set(await live))
    except raised:
        raise
    except Exception as exc:  # any other failure falls back
        note = why_failed(exc)
    else:
        now = clock_ms()
        with contextlib.suppress(OSError):
            write_cache(path, kind, base_url, models, now)
        return ModelList(provider=name, models=tuple(models), source="provider", fetched_ms=now)
    cached = read_cache(path)
    if cached is not None:
        return ModelList(
            provider=name,
            models=tuple(sorted(cached[0])),
            source="cache",
            fetched_ms=cached[1],
            note=note,
        )
    return ModelList(provider=name, models=fallback[0], source=fallback[1], note=note)


def listing_to_dict(listing: ModelList) -> dict[str, Any]:
    """A listing as the JSON object `tether models` prints."""
    return {
        "provider": listing.provider,
        "source": listing.source,
        "fetched_ms": listing.fetched_ms,
        "note": listing.note,
        "models": list(listing.models),
    }


async def list_all(
    providers: tuple[str, ...] = MODEL_PROVIDERS,
    *,
    base_url: str | None = None,
    cache_dir: Path | None = None,
) -> list[ModelList]:
    """`list_models` for several providers at once, in order."""
    return list(
        await asyncio.gather(
            *(list_models(p, base_url=base_url, cache_dir=cache_dir) for p in providers)
        )
    )

