"""The `web_fetch` tool: one web page as Markdown.

Owns: the tool (`{"url": ...}`), which content types it reads (`TEXT_TYPES`, `HTML_TYPES`),
and the page → Markdown conversion (`page_markdown`: markdownify over BeautifulSoup, scripts,
styles and other non-content elements dropped). Its result passes the output gate like every
tool result (a long page is saved to the session's folder behind a stub).
Does not own: the fetch and its guard (`tether.tools.fetch`), the policy's settings
(`tools.web`, `tether.settings.model.WebSettings`), asking the user (the approval gate: the
tool is not `safe`, since a URL can carry data out).
"""

from __future__ import annotations

import re
from typing import Any, cast

from tether.errors import ToolError
from tether.tools.base import tool
from tether.tools.context import ToolContext, ToolOutput
from tether.tools.fetch import Page, WebPolicy, fetch_page

__all__ = ["HTML_TYPES", "TEXT_TYPES", "page_markdown", "web_fetch"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/x-markdown",
        "text/csv",
        "text/xml",
        "application/json",
        "application/xml",
        "application/ld+json",
        "application/javascript",
        "text/javascript",
        "text/css",
        "application/x-yaml",
        "application/yaml",
        "text/yaml",
    }
)
DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "object", "embed")
"""Elements removed with their content before conversion."""
WEB_FETCH_TIMEOUT_S = 180.0


def _is_text(media: str) -> bool:
    return (
        media in TEXT_TYPES
        or media.endswith(("+json", "+xml"))
        or (media.startswith("text/") and media not in HTML_TYPES)
    )


def page_markdown(html: bytes | str, *, charset: str | None = None) -> tuple[str | None, str]:
    """`(title, markdown)` of an HTML document: `<script>`, `<style>` and the other
    `DROPPED_TAGS` removed with their content, `<head>` dropped (its `<title>` returned),
    headings as `#`, runs of blank lines collapsed. `charset` is the header's (None: the
    document's own `<meta charset>`, else detected)."""
    from bs4 import BeautifulSoup  # imported on first use: a start-up without a fetch skips it
    from markdownify import MarkdownConverter  # pyright: ignore[reportMissingTypeStubs]

    soup = BeautifulSoup(
        html, "html.parser", from_encoding=charset if isinstance(html, bytes) else None
    )
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    for tag in soup.find_all([*DROPPED_TAGS, "head"]):
        tag.decompose()
    converter = cast(Any, MarkdownConverter)(heading_style="ATX", bullets="-")
    text = cast(str, converter.convert_soup(soup))
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return title or None, text


def _render(page: Page, policy: WebPolicy) -> ToolOutput:
    media = page.media_type
    if media in HTML_TYPES:
        title, body = page_markdown(page.body, charset=page.charset)
    elif _is_text(media) or (not media and b"\x00" not in page.body[:1024]):
        title, body = None, page.body.decode(page.charset or "utf-8", errors="replace")
    else:
        raise ToolError(
            f"{page.url} is {media or 'of no stated type'} ({len(page.body)} bytes read): "
            "web_fetch reads HTML and text pages only"
        )
    head = [f"URL: {page.url}"]
    if page.redirects:
        head.append(f"Redirected from: {' → '.join(page.redirects)}")
    head.append(f"Status: {page.status} · Content-Type: {media or 'none'}")
    if title:
        head.insert(0, f"Title: {title}")
    if page.truncated:
        head.append(
            f"Cut: only the first {policy.max_bytes} bytes of the page were read "
            "(tools.web.max_bytes)"
        )
    text = "\n".join(head) + "\n\n" + (body or "(empty page)")
    return ToolOutput(text, is_error=not 200 <= page.status < 300)


@tool(name="web_fetch", timeout_s=WEB_FETCH_TIMEOUT_S)
async def web_fetch(url: str, *, ctx: ToolContext) -> ToolOutput:
    """Fetch one web page (http or https) and return it as Markdown (HTML converted, scripts
    and styles dropped; text types as they are), with its final URL, status and content type.
    Private and local network addresses are refused unless the user allows them.

    Args:
        url: the page's full URL, e.g. `https://docs.python.org/3/library/json.html`.
    """
    policy = ctx.web or WebPolicy()
    page = await fetch_page(url, policy)
    return _render(page, policy)
