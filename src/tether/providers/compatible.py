"""Endpoints declared in the settings, not in Python: a `providers.<name>` entry of type
`openai-compatible` or `anthropic-compatible` (a gateway, a proxy, a self-hosted server), with
its `base_url`, extra `headers`, an `auth` scheme and a `models_url`; and the connection test
`tether models --test NAME` runs.

Owns: `OpenAICompatibleProvider` and `AnthropicCompatibleProvider` (the built-in adapters with
the endpoint's headers and auth), `compatible_provider` (one from a settings entry),
`ConnectionResult` and `test_connection`.

A library provider for a new endpoint subclasses `OpenAICompatibleProvider` and overrides only
what differs — `auth_headers` (another scheme, a signed gateway), `models_url`,
`list_models`, `test_connection` — and keeps the rest: the Chat Completions request, the stream
translation, the error taxonomy, the wire passes (the seed's "provider class completed with
OpenAI-compatible defaults").
Does not own: where the key comes from (`tether.credentials`, through
`tether.providers.registry`), the request conversion (`openai_chat_request`,
`anthropic_request`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import anthropic
import httpx
import openai

from tether.errors import ConfigError
from tether.messages import text_turn
from tether.providers.anthropic import AnthropicProvider
from tether.providers.base import ModelRequest, Provider, StreamError
from tether.providers.errors import classify_exception, classify_status
from tether.providers.openai_chat import OpenAIChatProvider
from tether.settings.model import AuthScheme, ProviderSettings

COMPATIBLE_TYPES = ("openai-compatible", "anthropic-compatible")


def auth_headers(scheme: AuthScheme, key: str | None) -> dict[str, str]:
    """The headers that carry `key` under `scheme` (none without a key or for `none`)."""
    if not key or scheme == "none":
        return {}
    if scheme == "bearer":
        return {"Authorization": f"Bearer {key}"}
    return {scheme: key}  # `x-api-key`, `api-key`


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionResult:
    """What a connection test found.

    Attributes:
        ok: the endpoint answered.
        how: `models` (the model list was read) or `request` (a one-token request answered).
        models: the model ids listed (empty for `request`).
        ms: how long it took, milliseconds.
        error: the failure (kind from the taxonomy, message), or None.
    """

    ok: bool
    how: str
    models: tuple[str, ...] = ()
    ms: float = 0.0
    error: StreamError | None = None


async def _get_models(url: str, headers: Mapping[str, str], timeout_s: float) -> list[str]:
    """GET a model list (`{"data": [{"id"}]}`, or `{"models": [{"name"|"id"}]}`).

    Raises:
        _Refused: a non-2xx answer. httpx errors: the transport failed.
    """
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        response = await client.get(url, headers=dict(headers))
    if response.status_code >= 300:
        try:
            body: object = response.json()
        except ValueError:
            body = response.text
        raise _Refused(response.status_code, body)
    data = cast(dict[str, Any], response.json())
    items = cast(list[dict[str, Any]], data.get("data") or data.get("models") or [])
    return [str(m.get("id") or m.get("name")) for m in items if m.get("id") or m.get("name")]


class _OpenAIClient(openai.AsyncOpenAI):
    """The SDK client sending only the endpoint's own headers (its key as `auth` says)."""

    @property
    def auth_headers(self) -> dict[str, str]:
        return {}

    def _auth_headers(self, *args: Any, **kwargs: Any) -> dict[str, str]:
        del args, kwargs
        return {}

    def _validate_headers(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs  # the endpoint's headers carry the auth, whatever the scheme


class _AnthropicClient(anthropic.AsyncAnthropic):
    """As `_OpenAIClient`, for the Messages API."""

    @property
    def auth_headers(self) -> dict[str, str]:
        return {}

    def _validate_headers(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs


class _Refused(Exception):
    def __init__(self, status: int, body: object) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


class _Endpoint:
    """What both compatible providers add to their API's provider: the endpoint's address,
    headers and auth scheme, its model list and the connection test. A library subclass
    overrides only what differs (`auth_headers`, `list_models`, `test_connection`)."""

    default_auth: ClassVar[AuthScheme] = "bearer"
    models_path: ClassVar[str] = "/models"
    base_url: str
    auth: AuthScheme
    models_url: str
    headers: dict[str, str]

    def _endpoint(
        self,
        base_url: str,
        api_key: str | None,
        headers: Mapping[str, str] | None,
        auth: AuthScheme | None,
        models_url: str | None,
    ) -> dict[str, str]:
        """Set the endpoint's fields; the headers every request sends (the key's included)."""
        self.base_url = base_url.rstrip("/")
        self.auth = auth or self.default_auth
        self.models_url = models_url or self.base_url + self.models_path
        self.headers = {**(headers or {}), **self.auth_headers(api_key)}
        return self.headers

    def auth_headers(self, key: str | None) -> dict[str, str]:
        """The headers that carry the key (override for another scheme or a signed gateway)."""
        return auth_headers(self.auth, key)

    async def list_models(self, timeout_s: float = 10.0) -> list[str]:
        """The endpoint's models (GET `models_url` with the endpoint's headers)."""
        return await _get_models(self.models_url, self.headers, timeout_s)

    async def test_connection(self, timeout_s: float = 10.0) -> ConnectionResult:
        """List the models; where the endpoint has no list (404, 405), send a one-token
        request instead. Never raises for an endpoint fault: it is in the result."""
        provider = cast("OpenAICompatibleProvider | AnthropicCompatibleProvider", self)
        return await test_connection(provider, timeout_s)


class OpenAICompatibleProvider(_Endpoint, OpenAIChatProvider):
    """Chat Completions at any endpoint, with its own headers and auth scheme.

    Args:
        model: the model name the endpoint knows.
        base_url: the endpoint (`https://gateway.example/v1`).
        api_key: the key, sent as `auth` says; None: none sent.
        headers: extra headers on every request.
        auth: the scheme (default `default_auth`).
        models_url: the model list (default `base_url` + `models_path`).
        name: the provider name (the settings entry's).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth: AuthScheme | None = None,
        models_url: str | None = None,
        name: str = "openai-compatible",
    ) -> None:
        sent = self._endpoint(base_url, api_key, headers, auth, models_url)
        client = _OpenAIClient(
            api_key="unused", base_url=base_url, default_headers=sent, max_retries=0
        )
        super().__init__(model, client=client, name=name)


class AnthropicCompatibleProvider(_Endpoint, AnthropicProvider):
    """The Messages API at any endpoint, with its own headers and auth scheme (default
    `x-api-key`; `bearer` sends `Authorization: Bearer`). Same arguments as
    `OpenAICompatibleProvider`."""

    default_auth: ClassVar[AuthScheme] = "x-api-key"
    models_path: ClassVar[str] = "/v1/models"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        auth: AuthScheme | None = None,
        models_url: str | None = None,
        name: str = "anthropic-compatible",
    ) -> None:
        sent = self._endpoint(base_url, api_key, headers, auth, models_url)
        client = _AnthropicClient(
            api_key="unused", base_url=base_url, default_headers=sent, max_retries=0
        )
        super().__init__(model, client=client, name=name)


def compatible_provider(
    name: str, model: str, endpoint: ProviderSettings, api_key: str | None
) -> Provider:
    """The provider a settings entry of a compatible type declares.

    Raises:
        ConfigError: the entry is of another type or has no `base_url`.
    """
    if endpoint.type not in COMPATIBLE_TYPES or not endpoint.base_url:
        raise ConfigError(f"providers.{name}: not a compatible endpoint with a base_url")
    cls = (
        OpenAICompatibleProvider
        if endpoint.type == "openai-compatible"
        else AnthropicCompatibleProvider
    )
    return cls(
        model,
        base_url=endpoint.base_url,
        api_key=api_key,
        headers=endpoint.headers,
        auth=endpoint.auth,
        models_url=endpoint.models_url,
        name=name,
    )


async def test_connection(
    provider: OpenAICompatibleProvider | AnthropicCompatibleProvider, timeout_s: float = 10.0
) -> ConnectionResult:
    """The connection test both compatible providers run (their `test_connection`)."""
    start = time.perf_counter()

    def ms() -> float:
        return (time.perf_counter() - start) * 1e3

    try:
        found = await provider.list_models(timeout_s)
        return ConnectionResult(ok=True, how="models", models=tuple(found), ms=ms())
    except _Refused as exc:
        if exc.status not in (404, 405):
            kind = classify_status(exc.status, exc.body)
            error = StreamError(kind=kind, message=f"{exc} from {provider.models_url}")
            return ConnectionResult(ok=False, how="models", ms=ms(), error=error)
    except httpx.HTTPError as exc:
        return ConnectionResult(ok=False, how="models", ms=ms(), error=classify_exception(exc))
    # no model list here: one request of one token
    request = ModelRequest(
        model=provider.model, messages=(text_turn("t", "user", "ping"),), max_output_tokens=1
    )
    async for event in provider.stream(request):
        if isinstance(event, StreamError):
            return ConnectionResult(ok=False, how="request", ms=ms(), error=event)
    return ConnectionResult(ok=True, how="request", ms=ms())
