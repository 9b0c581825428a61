"""A loopback MCP server that is its own OAuth authorization server, built from the SDK's
server-side auth pieces (`MCPServer(auth_server_provider=..., auth=AuthSettings(...))`: the
metadata, /register, /authorize, /token routes and bearer checks are the SDK's; the in-memory
provider below only stores codes and tokens). It approves every authorization at once (no
login page) and records the grants it served. Runs uvicorn in a thread on a free port."""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from typing import Any

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import InvalidRedirectUriError, OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl


class LoopbackClient(OAuthClientInformationFull):
    """A client registered by hand (not RFC 7591) for a native app: any port of the loopback
    redirect it registered is accepted (RFC 8252 §7.3), as real authorization servers do."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host != "127.0.0.1" or redirect_uri.scheme != "http":
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' is not a loopback URI")
        return redirect_uri


class MemoryAuthProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """In-memory `OAuthAuthorizationServerProvider`; access tokens live `token_ttl_s`."""

    def __init__(self, token_ttl_s: int = 3600) -> None:
        self.token_ttl_s = token_ttl_s
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.grants: list[str] = []  # "authorization_code" / "refresh_token", in order
        self.challenges: list[str] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.challenges.append(params.code_challenge)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_hex(16), secrets.token_hex(16)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.token_ttl_s,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.token_ttl_s,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants.append("authorization_code")
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.grants.append("refresh_token")
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)


class OAuthDemo:
    """The protected MCP server (one tool, `whoami`) on 127.0.0.1:<port>/mcp."""

    def __init__(
        self,
        port: int,
        token_ttl_s: int = 3600,
        *,
        registration: bool = True,
        clients: tuple[OAuthClientInformationFull, ...] = (),
    ) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"
        self.provider = MemoryAuthProvider(token_ttl_s)
        for client in clients:  # registered beforehand, by hand
            assert client.client_id is not None
            self.provider.clients[client.client_id] = client
        server = MCPServer(
            "protected",
            auth_server_provider=self.provider,
            auth=AuthSettings(
                issuer_url=self.base,  # type: ignore[arg-type]
                resource_server_url=self.url,  # type: ignore[arg-type]
                client_registration_options=ClientRegistrationOptions(enabled=registration),
                validate_token_resource=True,
            ),
        )

        @server.tool()
        def whoami() -> str:
            """Says hello to an authorized client."""
            return "hello, authorized client"

        app = server.streamable_http_app()
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve()), daemon=True)

    def start(self) -> OAuthDemo:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the OAuth demo server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
