"""Fetching one URL for the `web_fetch` tool, in tether's own process, behind an address guard.

Owns: `WebPolicy` (the `tools.web` settings as the tool reads them), the checks every hop passes
(`refused_domain`, `refused_address`: pure), `fetch_page` (resolve, check every address, connect
to a checked address only, follow redirects one hop at a time, read at most `max_bytes`) and
`Page`, what a fetch returns.
Does not own: turning a page into Markdown and the tool itself (`tether.tools.builtin.web`), the
settings schema (`tether.settings.model.WebSettings`).

The server-side request forgery guard: a host is resolved here, every address it resolves to
must be global (not private, loopback, link-local, shared, reserved, multicast or unspecified;
an IPv4-mapped IPv6 address is judged as its IPv4 address) unless `allow_private`, and the
request then goes to that checked address (the URL's host rewritten to the address, the `Host`
header and the TLS server name kept as the host), so a second lookup cannot answer differently.
Redirects are not followed by the HTTP client: each `Location` is a new hop, checked again.
Proxy environment variables are ignored (the request goes to the checked address).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from tether.errors import ToolError

if TYPE_CHECKING:
    from tether.settings.model import WebSettings

__all__ = [
    "REDIRECT_STATUSES",
    "Page",
    "Resolver",
    "WebPolicy",
    "fetch_page",
    "refused_address",
    "refused_domain",
    "system_resolve",
]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "tether-web-fetch/0.1"
ACCEPT = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.8,*/*;q=0.5"
CHUNK_BYTES = 64 * 1024

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""`(host, port) -> addresses` (IP literals); raises `OSError` when the name does not resolve."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WebPolicy:
    """What `web_fetch` may reach and how much it reads (from `tools.web`).

    Attributes:
        allow_private: allow non-global addresses (private, loopback, link-local, ...).
        allowed_domains: when not empty, only these hosts and their subdomains.
        denied_domains: refused hosts and their subdomains (checked first).
        timeout_s: the time limit of each request's connect and each read (s).
        max_bytes: the most body bytes read; the rest of a page is cut.
        max_redirects: redirects followed per fetch.
    """

    allow_private: bool = False
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    timeout_s: float = 30.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5

    @classmethod
    def of(cls, web: WebSettings) -> WebPolicy:
        """The policy of the `tools.web` settings."""
        return cls(
            allow_private=web.allow_private,
            allowed_domains=tuple(_norm_host(d) for d in web.allowed_domains),
            denied_domains=tuple(_norm_host(d) for d in web.denied_domains),
            timeout_s=web.timeout_s,
            max_bytes=web.max_bytes,
            max_redirects=web.max_redirects,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One fetched page.

    Attributes:
        url: the URL finally fetched (after redirects).
        status: its HTTP status code.
        media_type: the `Content-Type` without parameters, lowercased (`""` when absent).
        charset: the `charset` parameter, or None.
        body: at most `max_bytes` bytes of the body.
        truncated: True when the body was longer and was cut at `max_bytes`.
        redirects: the URLs redirected from, in order.
    """

    url: str
    status: int
    media_type: str
    charset: str | None
    body: bytes
    truncated: bool
    redirects: tuple[str, ...] = ()


def _norm_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def _matches(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def refused_domain(host: str, policy: WebPolicy) -> str | None:
    """Why `host` is refused by the domain lists, or None when it is allowed (pure)."""
    h = _norm_host(host)
    for d in policy.denied_domains:
        if _matches(h, d):
            return f"{h} is denied by tools.web.denied_domains ({d})"
    if policy.allowed_domains and not any(_matches(h, d) for d in policy.allowed_domains):
        return f"{h} is not in tools.web.allowed_domains"
    return None


def refused_address(address: str) -> str | None:
    """What kind of non-global address `address` is (`"loopback"`, `"private"`, ...), or None
    for a global one (pure). An unparseable address is refused as `"unparseable"`."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "unparseable"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, flag in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
    ):
        if flag:
            return kind
    return None if ip.is_global else "non-global"


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the system resolver), in its order, de-duplicated.

    Raises:
        OSError: the name does not resolve.
    """
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _checked_address(url: httpx.URL, policy: WebPolicy, resolve: Resolver) -> str:
    """The address to connect to for `url`, after the scheme, domain and address checks."""
    if url.scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs are fetched, not {url.scheme or 'none'}:")
    host = _norm_host(url.host)
    if not host:
        raise ToolError(f"no host in {url}")
    if why := refused_domain(host, policy):
        raise ToolError(f"refused: {why}")
    port = url.port or (443 if url.scheme == "https" else 80)
    if _is_ip(host):
        addresses: Sequence[str] = [host]
    else:
        try:
            addresses = await resolve(host, port)
        except OSError as e:
            raise ToolError(f"{host} does not resolve: {e}") from None
        if not addresses:
            raise ToolError(f"{host} does not resolve")
    if not policy.allow_private:
        for address in addresses:
            if kind := refused_address(address):
                raise ToolError(
                    f"refused: {host} resolves to {address}, a {kind} address (set "
                    "tools.web.allow_private to reach private networks)"
                )
    return addresses[0]


def _media_type(value: str | None) -> tuple[str, str | None]:
    if not value:
        return "", None
    parts = [p.strip() for p in value.split(";")]
    charset = None
    for p in parts[1:]:
        key, _, val = p.partition("=")
        if key.strip().lower() == "charset" and val.strip():
            charset = val.strip().strip('"').lower()
    return parts[0].lower(), charset


async def fetch_page(
    url: str,
    policy: WebPolicy,
    *,
    resolve: Resolver = system_resolve,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Page:
    """GET `url` under `policy`: each hop's scheme, host and addresses checked, redirects
    followed up to `policy.max_redirects`, at most `policy.max_bytes` of the body read.

    Args:
        url: an `http://` or `https://` URL.
        policy: the limits and the guard.
        resolve: the name resolver (default: the system's).
        transport: the HTTP transport (default: httpx's own).

    Returns:
        The final page, whatever its status (a 404 is a page).

    Raises:
        ToolError: another scheme, a refused domain or address, a name that does not resolve,
            too many redirects, a timeout, a connection failure.
    """
    try:
        current = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError) as e:
        raise ToolError(f"invalid URL {url!r}: {e}") from None
    redirects: list[str] = []
    timeout = httpx.Timeout(policy.timeout_s)
    async with httpx.AsyncClient(
        timeout=timeout, follow_redirects=False, trust_env=False, transport=transport
    ) as client:
        while True:
            address = await _checked_address(current, policy, resolve)
            host = _norm_host(current.host)
            target = current.copy_with(host=address, fragment=None)
            netloc = current.netloc.decode("ascii")
            extensions = {"sni_hostname": host} if current.scheme == "https" else {}
            headers = {"Host": netloc, "User-Agent": USER_AGENT, "Accept": ACCEPT}
            try:
                async with client.stream(
                    "GET", target, headers=headers, extensions=extensions
                ) as resp:
                    location = resp.headers.get("location")
                    if resp.status_code in REDIRECT_STATUSES and location:
                        if len(redirects) >= policy.max_redirects:
                            raise ToolError(
                                f"more than {policy.max_redirects} redirects (tools.web."
                                f"max_redirects), last to {location}"
                            )
                        redirects.append(str(current.copy_with(fragment=None)))
                        try:
                            current = current.join(location)
                        except httpx.InvalidURL as e:
                            raise ToolError(f"invalid redirect {location!r}: {e}") from None
                        continue
                    body, truncated = await _read_capped(resp, policy.max_bytes)
                    media, charset = _media_type(resp.headers.get("content-type"))
                    return Page(
                        url=str(current.copy_with(fragment=None)),
                        status=resp.status_code,
                        media_type=media,
                        charset=charset,
                        body=body,
                        truncated=truncated,
                        redirects=tuple(redirects),
                    )
            except httpx.TimeoutException:
                raise ToolError(
                    f"timed out after {policy.timeout_s:g}s fetching {current} (tools.web.timeout)"
                ) from None
            except httpx.HTTPError as e:
                raise ToolError(f"fetching {current} failed: {type(e).__name__}: {e}") from None


async def _read_capped(resp: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes(CHUNK_BYTES):
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False
