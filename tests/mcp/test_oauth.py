"""OAuth for remote MCP servers against a loopback authorization server built from the SDK's
server-side auth (`oauth_server.py`): the full code flow with PKCE through `tether mcp login`'s
function, tokens stored 0600, refresh of an expired token in a later (headless) run, refusal
of a redirect with a wrong `state`, a headless run skipping an unauthenticated server with a
warning, an `Authorization` header bypassing OAuth, and a client registered beforehand
(`oauth.client_id`, its secret from `${VAR}`, its scopes) used by login, run and refresh alike."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2
import pytest
from oauth_server import LoopbackClient, OAuthDemo
from pydantic import AnyUrl

from kit.mcp import free_port
from tether.credentials import credentials_path
from tether.mcp import McpServerError, McpTools, resolve_server
from tether.mcp.oauth import credential_name, forget_tokens, login
from tether.settings.model import McpOAuthSettings, McpServerSettings

pytestmark = pytest.mark.timeout(120)

TTL_S = 60
"""An access token's lifetime, as the server grants it."""


@pytest.fixture
def server() -> Iterator[OAuthDemo]:
    demo = OAuthDemo(free_port(), token_ttl_s=TTL_S).start()
    yield demo
    demo.stop()


def browser(tamper_state: bool = False, seen: list[str] | None = None):
    """Stands in for the user's browser: opens the authorization URL (the server approves at
    once and redirects), then follows the redirect to tether's loopback listener."""

    async def open_url(url: str) -> None:
        if seen is not None:
            seen.append(url)
        async with httpx2.AsyncClient() as client:
            r = await client.get(url)
            assert r.status_code in (302, 303, 307), r.text
            location = r.headers["location"]
            if tamper_state:
                parts = urlsplit(location)
                query = dict(parse_qsl(parts.query))
                query["state"] = "forged-" + query["state"]
                location = urlunsplit(parts._replace(query=urlencode(query)))
            await client.get(location)

    return open_url


def stored() -> dict[str, object]:
    path = credentials_path()
    if not path.exists():
        return {}
    keys = json.loads(path.read_text())["keys"]
    raw = keys.get(credential_name("protected"))
    return json.loads(raw) if raw else {}


def tools_for(tmp_path: Path, settings: McpServerSettings) -> tuple[McpTools, list[tuple[str, str]]]:
    warnings: list[tuple[str, str]] = []
    mcp = McpTools(
        {"protected": settings},
        root=tmp_path,
        on_warning=lambda k, m: warnings.append((k, m)),
    )
    return mcp, warnings


async def test_full_code_flow_with_pkce_stores_tokens_0600_and_refreshes(
    server: OAuthDemo, tmp_path: Path
) -> None:
    spec = resolve_server("protected", McpServerSettings(url=server.url), tmp_path)
    seen: list[str] = []
    issued_long_ago = lambda: time.time() - 2 * TTL_S  # noqa: E731 - the login's clock
    count, place = await login(spec, tmp_path, open_url=browser(seen=seen), clock=issued_long_ago)
    assert count == 1 and place == str(credentials_path())
    query = dict(parse_qsl(urlsplit(seen[0]).query))
    assert query["code_challenge_method"] == "S256" and query["state"]
    assert query["redirect_uri"].startswith("http://127.0.0.1:")
    assert query["redirect_uri"] != "http://127.0.0.1/callback"  # a real, random port
    assert server.provider.grants == ["authorization_code"]  # PKCE verified by the server
    mode = stat.S_IMODE(credentials_path().stat().st_mode)
    assert mode == 0o600
    first = stored()
    tokens = first["tokens"]
    assert isinstance(tokens, dict) and tokens["access_token"] and tokens["refresh_token"]
    assert first["client_info"]  # dynamic client registration, kept for the refresh
    expires_at = first["expires_at"]
    assert isinstance(expires_at, float) and expires_at < time.time()  # expired by now

    mcp, warnings = tools_for(tmp_path, McpServerSettings(url=server.url))
    try:
        tools = await mcp.start()
        assert warnings == []
        result = await mcp.call("protected", "whoami", {})
    finally:
        await mcp.aclose()
    assert [t.name for t in tools] == ["mcp__protected__whoami", "mcp_read_resource"]
    assert result.content[0].text == "hello, authorized client"  # type: ignore[union-attr]
    assert server.provider.grants == ["authorization_code", "refresh_token"]
    again = stored()["tokens"]
    assert isinstance(again, dict) and again["access_token"] != tokens["access_token"]

    assert forget_tokens("protected") == ["file"]
    assert stored() == {}


async def test_wrong_state_is_refused(server: OAuthDemo, tmp_path: Path) -> None:
    spec = resolve_server("protected", McpServerSettings(url=server.url), tmp_path)
    with pytest.raises(McpServerError, match=r"(?i)state"):
        await login(spec, tmp_path, open_url=browser(tamper_state=True))
    assert server.provider.grants == []  # the code was never exchanged
    assert "tokens" not in stored()


async def test_headless_unauthenticated_server_is_skipped_with_a_warning(
    server: OAuthDemo, tmp_path: Path
) -> None:
    mcp, warnings = tools_for(tmp_path, McpServerSettings(url=server.url))
    try:
        assert await mcp.start() == []
    finally:
        await mcp.aclose()
    assert [k for k, _ in warnings] == ["mcp_login_required"]
    assert "tether mcp login protected" in warnings[0][1]


async def test_authorization_header_bypasses_oauth(server: OAuthDemo, tmp_path: Path) -> None:
    spec = resolve_server("protected", McpServerSettings(url=server.url), tmp_path)
    await login(spec, tmp_path, open_url=browser())
    tokens = stored()["tokens"]
    assert isinstance(tokens, dict)
    forget_tokens("protected")
    settings = McpServerSettings(
        url=server.url, headers={"Authorization": "Bearer ${PROTECTED_TOKEN}"}
    )
    mcp = McpTools(
        {"protected": settings},
        root=tmp_path,
        lookup=lambda name: (
            str(cast("dict[str, object]", tokens)["access_token"]) if name == "PROTECTED_TOKEN" else None
        ),
    )
    try:
        await mcp.start()
        result = await mcp.call("protected", "whoami", {})
    finally:
        await mcp.aclose()
    assert not result.is_error
    assert server.provider.grants == ["authorization_code"]  # no new flow, no refresh
    assert stored() == {}


async def test_a_second_login_starts_over(server: OAuthDemo, tmp_path: Path) -> None:
    spec = resolve_server("protected", McpServerSettings(url=server.url), tmp_path)
    await login(spec, tmp_path, open_url=browser())
    first = stored()
    await login(spec, tmp_path, open_url=browser())  # a new loopback port, a new registration
    second = stored()
    assert server.provider.grants == ["authorization_code", "authorization_code"]
    assert len(server.provider.clients) == 2
    assert first["tokens"] != second["tokens"] and first["client_info"] != second["client_info"]


async def test_a_pre_registered_client_and_its_scopes_serve_login_run_and_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server takes no registrations: the client the user registered by hand
    (`oauth.client_id`, a confidential client whose secret comes from `${VAR}`) is the only
    way in, for the login, the run that uses its tokens and the refresh after they expire."""
    client = LoopbackClient(
        client_id="tether-desktop",
        client_secret="s3cret-value",
        redirect_uris=[AnyUrl("http://127.0.0.1/callback")],
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method="client_secret_post",
        scope="read write",
    )
    demo = OAuthDemo(free_port(), token_ttl_s=TTL_S, registration=False, clients=(client,)).start()
    try:
        monkeypatch.setenv("DEMO_CLIENT_SECRET", "s3cret-value")
        settings = McpServerSettings(
            url=demo.url,
            oauth=McpOAuthSettings(
                client_id="tether-desktop", client_secret="${DEMO_CLIENT_SECRET}", scopes=["read"]
            ),
        )
        spec = resolve_server("protected", settings, tmp_path)
        seen: list[str] = []
        issued_long_ago = lambda: time.time() - 2 * TTL_S  # noqa: E731 - the login's clock
        await login(spec, tmp_path, open_url=browser(seen=seen), clock=issued_long_ago)
        query = dict(parse_qsl(urlsplit(seen[0]).query))
        assert query["client_id"] == "tether-desktop" and query["scope"] == "read"
        assert list(demo.provider.clients) == ["tether-desktop"]  # nothing registered
        assert demo.provider.grants == ["authorization_code"]

        mcp, warnings = tools_for(tmp_path, settings)
        try:
            await mcp.start()
            result = await mcp.call("protected", "whoami", {})
        finally:
            await mcp.aclose()
        assert warnings == [] and not result.is_error
        assert demo.provider.grants == ["authorization_code", "refresh_token"]  # same client
        assert all(t.client_id == "tether-desktop" for t in demo.provider.access.values())
        assert all(t.scopes == ["read"] for t in demo.provider.access.values())
    finally:
        demo.stop()
