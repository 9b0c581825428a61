"""The `web_fetch` tool against a loopback page server: HTML to Markdown, text types, redirects
(each hop re-checked), the address guard (private and loopback refused unless
`tools.web.allow_private`), domain lists, size caps, content types, and the output gate."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.agents import make_agent
from kit.calls import make_call
from tether import AgentConfig
from tether.agent.sessions import AgentSession
from tether.errors import ToolError
from tether.messages import ToolResultBlock
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call
from tether.tools import ToolContext, ToolRegistry, run_tool_call, scrubbed_env
from tether.tools.builtin.web import page_markdown, web_fetch
from tether.tools.fetch import WebPolicy, fetch_page, refused_address, refused_domain

ARTICLE = b"""<!doctype html><html><head><title>The Page</title>
<style>body { color: red }</style><script>var secret = "SCRIPTBODY";</script></head>
<body><h1>Heading One</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<ul><li>first</li><li>second</li></ul><noscript>NOSCRIPTBODY</noscript>
<script>document.write("LATESCRIPT")</script></body></html>"""


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict[str, str])


class PageServer:
    """A loopback HTTP server serving fixed routes; records the paths and Host headers asked."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.seen.append((self.path, self.headers.get("Host", "")))
                route = outer.routes.get(self.path, Route(404, b"<p>no such page</p>"))
                self.send_response(route.status)
                headers = {"Content-Type": "text/html; charset=utf-8", **route.headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                # the client may stop reading at its size cap
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(route.body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pages() -> Iterator[PageServer]:
    server = PageServer({})
    yield server
    server.close()


def _ctx(root: Path, **policy: Any) -> ToolContext:
    return replace(ToolContext.create(root, env=scrubbed_env()), web=WebPolicy(**policy))


async def _fetch(ctx: ToolContext, url: str) -> ToolResultBlock:
    return await run_tool_call(ToolRegistry([web_fetch]), make_call("web_fetch", url=url), ctx)


async def test_html_page_becomes_markdown_without_scripts_or_styles(
    pages: PageServer, tmp_path: Path
) -> None:
    pages.routes["/a"] = Route(body=ARTICLE)
    result = await _fetch(_ctx(tmp_path, allow_private=True), pages.url("/a"))
    text = result.text
    assert not result.is_error
    assert "Title: The Page" in text
    assert "# Heading One" in text
    assert "**bold**" in text and "[link](/next)" in text
    assert "- first" in text and "- second" in text
    assert "Content-Type: text/html" in text and "Status: 200" in text
    for hidden in ("SCRIPTBODY", "LATESCRIPT", "NOSCRIPTBODY", "color: red"):
        assert hidden not in text


async def test_text_types_pass_as_they_are_and_binary_types_are_named(
    pages: PageServer, tmp_path: Path
) -> None:
    pages.routes["/t.json"] = Route(
        body=b'{"a": "<b>x</b>"}', headers={"Content-Type": "application/json"}
    )
    pages.routes["/img"] = Route(
        body=b"\x89PNG\r\n\x1a\n" + b"\x00" * 50, headers={"Content-Type": "image/png"}
    )
    ctx = _ctx(tmp_path, allow_private=True)
    text = (await _fetch(ctx, pages.url("/t.json"))).text
    assert '{"a": "<b>x</b>"}' in text
    img = await _fetch(ctx, pages.url("/img"))
    assert img.is_error and "image/png" in img.text and "HTML and text pages only" in img.text


async def test_an_http_error_status_is_an_error_result_with_the_page(
    pages: PageServer, tmp_path: Path
) -> None:
    result = await _fetch(_ctx(tmp_path, allow_private=True), pages.url("/missing"))
    assert result.is_error and "Status: 404" in result.text and "no such page" in result.text


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "not a url"])
async def test_anything_but_http_or_https_is_an_error_result(url: str, tmp_path: Path) -> None:
    result = await _fetch(_ctx(tmp_path, allow_private=True), url)
    assert result.is_error and "only http and https" in result.text


async def test_redirects_are_followed_and_reported(pages: PageServer, tmp_path: Path) -> None:
    pages.routes["/old"] = Route(302, headers={"Location": "/mid"})
    pages.routes["/mid"] = Route(301, headers={"Location": pages.url("/new", "localhost")})
    pages.routes["/new"] = Route(body=b"<p>arrived</p>")
    result = await _fetch(_ctx(tmp_path, allow_private=True), pages.url("/old"))
    assert not result.is_error and "arrived" in result.text
    assert f"URL: {pages.url('/new', 'localhost')}" in result.text
    assert "Redirected from: " + pages.url("/old") + " → " + pages.url("/mid") in result.text
    # the request went to the checked address; the Host header kept the name
    assert pages.seen[-1] == ("/new", f"localhost:{pages.port}")


async def test_redirects_are_capped(pages: PageServer, tmp_path: Path) -> None:
    for i in range(5):
        pages.routes[f"/r{i}"] = Route(302, headers={"Location": f"/r{i + 1}"})
    result = await _fetch(_ctx(tmp_path, allow_private=True, max_redirects=3), pages.url("/r0"))
    assert result.is_error and "more than 3 redirects" in result.text
    assert [p for p, _ in pages.seen] == ["/r0", "/r1", "/r2", "/r3"]


async def test_every_redirect_hop_is_checked_again(pages: PageServer, tmp_path: Path) -> None:
    pages.routes["/go"] = Route(302, headers={"Location": pages.url("/x", "localhost")})
    pages.routes["/file"] = Route(302, headers={"Location": "file:///etc/passwd"})
    ctx = _ctx(tmp_path, allow_private=True, denied_domains=("localhost",))
    denied = await _fetch(ctx, pages.url("/go"))
    assert denied.is_error and "denied by tools.web.denied_domains" in denied.text
    scheme = await _fetch(ctx, pages.url("/file"))
    assert scheme.is_error and "only http and https" in scheme.text
    assert [p for p, _ in pages.seen] == ["/go", "/file"]  # neither target was requested


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_is_refused_without_allow_private(
    pages: PageServer, tmp_path: Path, host: str
) -> None:
    pages.routes["/a"] = Route(body=ARTICLE)
    result = await _fetch(_ctx(tmp_path), pages.url("/a", host))
    assert result.is_error and "loopback address" in result.text
    assert "tools.web.allow_private" in result.text
    assert pages.seen == []  # refused before connecting


async def test_a_name_is_refused_when_any_of_its_addresses_is_private(
    pages: PageServer,
) -> None:
    async def resolve(host: str, port: int) -> Sequence[str]:
        return {"mixed.test": ["93.184.216.34", "10.1.2.3"]}[host]

    with pytest.raises(ToolError, match=r"10\.1\.2\.3, a private address"):
        await fetch_page(pages.url("/", "mixed.test"), WebPolicy(), resolve=resolve)
    assert pages.seen == []


async def test_a_huge_page_is_cut_at_max_bytes(pages: PageServer, tmp_path: Path) -> None:
    pages.routes["/big"] = Route(body=b"x" * 3_000_000, headers={"Content-Type": "text/plain"})
    page = await fetch_page(pages.url("/big"), WebPolicy(allow_private=True, max_bytes=100_000))
    assert page.truncated and len(page.body) == 100_000
    result = await _fetch(_ctx(tmp_path, allow_private=True, max_bytes=1000), pages.url("/big"))
    assert "Cut: only the first 1000 bytes" in result.text
    assert result.text.split("\n\n", 1)[1] == "x" * 1000


async def test_a_long_page_goes_through_the_output_gate(pages: PageServer, tmp_path: Path) -> None:
    body = "".join(f"<p>paragraph {i} " + "word " * 20 + "</p>" for i in range(400)).encode()
    pages.routes["/long"] = Route(body=body)
    store = SessionStore(tmp_path / "sessions")
    writer = store.create("s1", cwd=str(tmp_path))
    provider = ScriptedProvider([call("web_fetch", id="c1", url=pages.url("/long")), "read it"])
    agent = make_agent(
        provider,
        tmp_path,
        config=AgentConfig.model_validate(
            {"tools": {"output_threshold_chars": 5_000, "web": {"allow_private": True}}}
        ),
        tools=[web_fetch],
        session=AgentSession(sink=writer, session_dir=store.session_dir("s1")),
    )
    await agent.run("fetch it")
    writer.close()
    sent = next(
        b
        for m in provider.requests[-1].messages
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ).text
    m = re.match(r'<persisted-output size_bytes="(\d+)" path="([^"]+)">', sent)
    assert m is not None and len(sent) < 10_000
    saved = Path(m.group(2)).read_text()
    assert "paragraph 0 " in saved and "paragraph 399 " in saved


def test_from_settings_offers_web_fetch_unless_turned_off(tmp_path: Path) -> None:
    from tether import Agent

    on = Agent.from_settings(tmp_path, model=ScriptedProvider(["x"]))
    off = Agent.from_settings(
        tmp_path, model=ScriptedProvider(["x"]), overrides={"tools.web.fetch": False}
    )
    assert "web_fetch" in on.parts.registry.names()
    assert "web_fetch" not in off.parts.registry.names()
    assert on.parts.tool_context.web == WebPolicy()


# ---- the pure checks -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("192.168.1.20", "private"),
        ("172.16.5.5", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("100.64.0.1", "non-global"),
        ("224.0.0.1", "multicast"),
        ("fc00::1", "private"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_address_kinds(address: str, kind: str | None) -> None:
    assert refused_address(address) == kind


@given(st.ip_addresses())
def test_only_global_addresses_pass(ip: object) -> None:
    import ipaddress

    parsed = ipaddress.ip_address(str(ip))
    mapped = getattr(parsed, "ipv4_mapped", None)
    judged = mapped if mapped is not None else parsed
    assert (refused_address(str(ip)) is None) == (
        judged.is_global
        and not judged.is_multicast
        and not judged.is_reserved
        and not judged.is_private
    )


def test_domain_lists_match_hosts_and_subdomains() -> None:
    policy = WebPolicy(allowed_domains=("example.com",), denied_domains=("bad.example.com",))
    assert refused_domain("example.com", policy) is None
    assert refused_domain("Docs.Example.COM.", policy) is None
    assert refused_domain("notexample.com", policy) is not None
    assert "denied" in (refused_domain("x.bad.example.com", policy) or "")
    assert refused_domain("anything.org", WebPolicy()) is None


def test_page_markdown_keeps_text_order_and_drops_head() -> None:
    title, text = page_markdown(ARTICLE)
    assert title == "The Page"
    assert text.index("Heading One") < text.index("first") < text.index("second")
    assert "The Page" not in text  # the <head> is gone; the title is returned apart
