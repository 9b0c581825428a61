"""OAuth for remote MCP servers: the SDK's client auth, with tether's token store and a loopback
redirect listener.

Owns: `CredentialTokenStorage` (the SDK's `TokenStorage` over `tether.credentials`: one JSON
entry `mcp.<server>` in the system keyring or the 0600 credential file, holding the tokens,
their expiry time and the client registration), `LoopbackCallback` (a one-shot HTTP listener on
127.0.0.1, random port, that receives the authorization redirect), `TetherOAuthProvider` (the
SDK's `OAuthClientProvider` plus the stored expiry, so an expired access token is refreshed
before it is sent, and a headless mode that never opens a browser), `build_auth` and
`forget_tokens`.
Does not own: the flow itself — discovery (RFC 9728 protected-resource metadata, RFC 8414
authorization-server metadata), dynamic client registration (RFC 7591), PKCE (S256), the
`state` check, the token exchange and refresh are the SDK's (`mcp.client.auth`).

Flow (interactive, `tether mcp login NAME`): the listener binds 127.0.0.1:0; the redirect URI
`http://127.0.0.1:<port>/callback` goes into the client metadata; on the server's 401 the SDK
discovers, registers (unless `oauth.client_id` is configured: then that static client is used),
and hands the authorization URL to `open_url` (default: print it and try a browser); the
listener returns `code` and `state` from the redirect; the SDK refuses a `state` that differs
from the one it sent, then exchanges the code with the PKCE verifier and stores the tokens.
Headless (`tether run`): no listener, and a server asking for authorization makes the start fail
with `login_required` set, so the caller can skip it with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from tether.credentials import find_key, remove_key, store_key
from tether.errors import ConfigError
from tether.mcp.config import ServerSpec

CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT_S = 300.0
"""How long `tether mcp login` waits for the browser to come back (s)."""
HEADLESS_REDIRECT = "http://127.0.0.1/callback"
"""The redirect URI registered when no listener runs (headless: the flow never gets that far)."""

OpenUrl = Callable[[str], Awaitable[None]]


def credential_name(server: str) -> str:
    """The credential-store entry of a server's OAuth state: `mcp.<server>`."""
    return f"mcp.{server}"


class LoginRequiredError(Exception):
    """A remote MCP server asks for OAuth authorization and the run is headless."""


class CredentialTokenStorage:
    """The SDK's `TokenStorage` kept in tether's credential store (keyring, else the 0600
    credential file), as one line of JSON under `mcp.<server>`:
    `{"url", "tokens", "expires_at" (epoch s or null), "client_info"}`. State stored for a
    different URL is ignored (a server entry pointed elsewhere logs in again).

    Args:
        server: the server name.
        url: the server's URL.
        static_client: a configured client registration (`oauth.client_id`), used instead of
            a stored or dynamically registered one.
        fresh: ignore what is stored (an explicit login starts over: a registration made for
            an earlier loopback port may not accept the new one); writes still go to the store.
        clock: the current time (epoch seconds) an access token's lifetime counts from.
    """

    def __init__(
        self,
        server: str,
        url: str,
        static_client: OAuthClientInformationFull | None = None,
        *,
        fresh: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.server = server
        self.url = url
        self.static_client = static_client
        self.fresh = fresh
        self.clock = clock
        self.place: str | None = None
        self._written: set[str] = set()

    def _load(self) -> dict[str, Any]:
        data = self._load_all()
        if self.fresh:
            return {k: v for k, v in data.items() if k in self._written}
        return data

    def _load_all(self) -> dict[str, Any]:
        try:
            found = find_key(credential_name(self.server), environ={})
        except ConfigError:
            return {}
        if found is None:
            return {}
        try:
            data: Any = json.loads(found.key)
        except ValueError:
            return {}
        if not isinstance(data, dict) or cast(dict[str, Any], data).get("url") != self.url:
            return {}
        return cast(dict[str, Any], data)

    def _save(self, data: dict[str, Any]) -> None:
        self._written |= set(data) - {"url"}
        data = {**self._load_all(), **data}
        data["url"] = self.url
        _, self.place = store_key(credential_name(self.server), json.dumps(data, sort_keys=True))

    def expires_at(self) -> float | None:
        """When the stored access token expires (epoch seconds), or None when unknown."""
        value = self._load().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._load().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._load()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = self.clock() + tokens.expires_in if tokens.expires_in else None
        self._save(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.static_client is not None:
            return self.static_client
        raw = self._load().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.static_client is not None:
            return
        data = self._load()
        data["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._save(data)


class TetherOAuthProvider(OAuthClientProvider):
    """The SDK's OAuth provider with the stored token expiry applied at load (so an expired
    access token is refreshed before use, even in a new process) and `login_required` set
    when a headless flow wanted the user. The scopes the settings name (`oauth.scopes`) are the
    ones asked for: the SDK otherwise replaces them by the server's challenge or advertised
    scopes (the MCP spec's selection order for a client that names none)."""

    def __init__(
        self,
        *args: Any,
        storage: CredentialTokenStorage,
        scope: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, storage=storage, **kwargs)
        self.tether_storage = storage
        self.tether_scope = scope
        self.login_required = False

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if self.tether_scope is not None:
            self.context.client_metadata.scope = self.tether_scope
        return await super()._perform_authorization_code_grant()

    async def _initialize(self) -> None:
        await super()._initialize()
        expires_at = self.tether_storage.expires_at()
        if expires_at is not None and self.context.current_tokens is not None:
            self.context.token_expiry_time = expires_at


class LoopbackCallback:
    """A one-shot HTTP listener on 127.0.0.1 (random port) receiving the authorization redirect
    (`GET /callback?code=…&state=…`, or `?error=…`). The SDK compares the `state`.

    Use: `await start()`, read `redirect_uri`, `await wait()` for the result, `close()`.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{CALLBACK_PATH}"

    async def start(self) -> None:
        """Bind the listener (port chosen by the OS)."""
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, self.host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("ascii", "replace")
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path != CALLBACK_PATH:
                status, body = "404 Not Found", "not found"
            elif "error" in query:
                status, body = "400 Bad Request", f"authorization failed: {query['error']}"
                self._finish(
                    OAuthFlowError(
                        f"authorization refused: {query['error']} "
                        f"{query.get('error_description', '')}".strip()
                    )
                )
            elif "code" not in query:
                status, body = "400 Bad Request", "no authorization code"
                self._finish(OAuthFlowError("the redirect carried no authorization code"))
            else:
                status, body = "200 OK", "tether: authorized. You can close this window."
                self._finish(
                    AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                )
            data = body.encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                + data
            )
            await writer.drain()
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()

    def _finish(self, value: AuthorizationCodeResult | Exception) -> None:
        if self._result is None or self._result.done():
            return
        if isinstance(value, Exception):
            self._result.set_exception(value)
        else:
            self._result.set_result(value)

    async def wait(self, timeout_s: float = LOGIN_TIMEOUT_S) -> AuthorizationCodeResult:
        """The redirect's code and state.

        Raises:
            OAuthFlowError: the redirect carried an error, or none came within `timeout_s`.
        """
        assert self._result is not None, "start() first"
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(self._result)
        except TimeoutError:
            raise OAuthFlowError(
                f"no authorization redirect within {timeout_s:g} s"
            ) from None

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


async def print_url(url: str) -> None:
    """The default `open_url`: print the authorization URL on stderr and try a browser."""
    print(f"tether: open this URL to authorize:\n  {url}", file=sys.stderr, flush=True)
    with contextlib.suppress(Exception):
        import webbrowser

        await asyncio.to_thread(webbrowser.open, url)


def build_auth(
    spec: ServerSpec,
    *,
    callback: LoopbackCallback | None = None,
    open_url: OpenUrl = print_url,
    fresh: bool = False,
    clock: Callable[[], float] = time.time,
) -> TetherOAuthProvider | None:
    """The OAuth provider of a remote server, or None when the settings give an
    `Authorization` header (which bypasses OAuth) or the server is not remote.

    Args:
        spec: the server.
        callback: a started listener (interactive login); None: headless (a server asking
            for authorization fails the start with `login_required` set).
        open_url: shows the authorization URL to the user (interactive only).
        fresh: start over, ignoring stored tokens and registration (see
            `CredentialTokenStorage`).
        clock: the current time (epoch seconds) for the stored token expiry.
    """
    if spec.url is None or spec.has_authorization:
        return None
    redirect = callback.redirect_uri if callback is not None else HEADLESS_REDIRECT
    oauth = spec.oauth
    scope = " ".join(oauth.scopes) if oauth and oauth.scopes else None
    secret = oauth.client_secret if oauth else None
    metadata = OAuthClientMetadata(
        client_name="tether",
        redirect_uris=[AnyUrl(redirect)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
        token_endpoint_auth_method="client_secret_post" if secret else "none",
    )
    static = None
    if oauth is not None and oauth.client_id:
        static = OAuthClientInformationFull(
            client_id=oauth.client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="client_secret_post" if secret else "none",
            scope=scope,
        )
    storage = CredentialTokenStorage(spec.name, spec.url, static, fresh=fresh, clock=clock)
    provider: TetherOAuthProvider | None = None

    async def redirect_handler(url: str) -> None:
        if callback is None:
            assert provider is not None
            provider.login_required = True
            raise LoginRequiredError(
                f"MCP server `{spec.name}` needs authorization: run `tether mcp login {spec.name}`"
            )
        await open_url(url)

    async def callback_handler() -> AuthorizationCodeResult:
        if callback is None:
            raise LoginRequiredError(f"MCP server `{spec.name}` needs authorization")
        return await callback.wait()

    provider = TetherOAuthProvider(
        spec.url,
        metadata,
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        scope=scope,
    )
    return provider


def forget_tokens(server: str) -> list[str]:
    """Remove a server's stored OAuth state (`tether mcp logout`); the places it was removed
    from (`keyring`, `file`), empty when there was none."""
    return remove_key(credential_name(server))


async def login(
    spec: ServerSpec,
    root: Path,
    *,
    open_url: OpenUrl = print_url,
    clock: Callable[[], float] = time.time,
) -> tuple[int, str | None]:
    """Run the OAuth flow for a remote server now (`tether mcp login NAME`): listen on the
    loopback, connect, let the SDK discover, register, authorize (via `open_url`) and exchange
    the code; the tokens land in the credential store, their expiry counted from `clock()`
    (epoch seconds). Then the tools are listed as a check.

    Returns:
        (the number of tools the server lists, where the tokens were stored, or None when the
        server did not ask for authorization).

    Raises:
        ConfigError: a stdio server, or one with an `Authorization` header (OAuth bypassed).
        McpServerError: the flow or the connection failed (a wrong `state` included).
    """
    from tether.mcp.connection import ServerConnection

    if spec.url is None:
        raise ConfigError(f"MCP server `{spec.name}` is a stdio server: there is no login")
    if spec.has_authorization:
        raise ConfigError(
            f"MCP server `{spec.name}` has an Authorization header in its settings, which "
            "bypasses OAuth: remove it to log in"
        )
    callback = LoopbackCallback()
    await callback.start()
    try:
        auth = build_auth(spec, callback=callback, open_url=open_url, fresh=True, clock=clock)
        assert auth is not None
        patient = dataclasses.replace(spec, startup_timeout_s=LOGIN_TIMEOUT_S)
        conn = ServerConnection(patient, root=root, auth=auth)
        try:
            await conn.start()
        finally:
            await conn.aclose()
    finally:
        callback.close()
    return len(conn.tools), auth.tether_storage.place
