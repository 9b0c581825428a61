"""A stored session as one self-contained HTML page (`tether sessions export --format html`).

Owns: `html_page`: the style sheet and the page; text rendered as Markdown (markdown-it-py,
raw HTML in the text escaped, never passed through), code highlighted by Pygments (fenced code
in replies, a tool call's arguments as JSON), thinking and each tool call and result in a
collapsible `<details>`, images inline as `data:` URIs, a compaction marker as a marked
section naming what it replaced, each assistant turn's usage and cost and the session's total.
Does not own: what every format shares (`tether.session.export_text`: labels, usage lines).

Pure: a `LoadedSession` in, text out. The page loads nothing: no script, no external style,
font or image.
"""

from __future__ import annotations

import importlib
from html import escape
from typing import TYPE_CHECKING, Any

from markdown_it import MarkdownIt

from tether.messages import (
    CompactSummaryBlock,
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
)
from tether.session.export_text import (
    CANCELLED_TEXT,
    Redactor,
    arguments_text,
    compaction_label,
    created_text,
    data_uri,
    image_label,
    session_usage_line,
    tool_names,
    turn_usage_line,
)
from tether.wire.interrupts import is_cancelled_reply

if TYPE_CHECKING:
    from tether.session.model import LoadedSession

# Pygments ships partial types: its API is used as Any (as plotext's in `tether.tui.chart`)
_PYGMENTS: Any = importlib.import_module("pygments")
_LEXERS: Any = importlib.import_module("pygments.lexers")
_FORMATTERS: Any = importlib.import_module("pygments.formatters")
_UTIL: Any = importlib.import_module("pygments.util")
_FORMATTER: Any = _FORMATTERS.HtmlFormatter(cssclass="hl", nowrap=True)

_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1b1b1b;background:#fff}
header{border-bottom:1px solid #ddd;margin-bottom:1rem}
.turn{margin:1rem 0;padding:.5rem 1rem;border-left:4px solid #ccc}
.turn.user{border-color:#3b82f6;background:#f5f9ff}
.turn.assistant{border-color:#10b981}
.turn.results{border-color:#a3a3a3;background:#fafafa}
.role{font-weight:600;text-transform:capitalize}
.usage{color:#666;font-size:.85em;margin-left:.5rem}
details{margin:.5rem 0;border:1px solid #e5e5e5;border-radius:4px;padding:.25rem .5rem}
details.thinking{color:#555;font-style:italic}
details.error summary{color:#b91c1c}
summary{cursor:pointer;font-weight:500}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;
border-radius:4px;overflow:auto}
img{max-width:100%;border:1px solid #ddd;border-radius:4px;display:block;margin:.5rem 0}
.compaction{margin:1.5rem 0;padding:.5rem 1rem;border:2px dashed #f59e0b;background:#fffbeb}
.compaction h2{font-size:1rem;margin:.25rem 0;color:#b45309}
.chip{display:inline-block;font-size:.85em;background:#eee;border-radius:3px;padding:0 .4rem}
"""


def _code(code: str, lang: str) -> str:
    """`code` highlighted as `lang` (plain text when Pygments does not know it)."""
    lexer: Any
    try:
        lexer = _LEXERS.get_lexer_by_name(lang) if lang else _LEXERS.TextLexer()
    except _UTIL.ClassNotFound:
        lexer = _LEXERS.TextLexer()
    return f'<pre class="hl">{_PYGMENTS.highlight(code, lexer, _FORMATTER)}</pre>\n'


def _markdown() -> MarkdownIt:
    """CommonMark with raw HTML escaped (markdown-it's link check drops `javascript:` and
    the like) and fenced code highlighted."""
    return MarkdownIt("commonmark", {"html": False, "highlight": _highlight})


def _highlight(code: str, lang: str, _attrs: str) -> str:
    return _code(code, lang)


def _image(block: ImageBlock) -> str:
    uri = data_uri(block)
    label = escape(image_label(block))
    if uri is None:
        return f'<span class="chip">image: {label}</span>'
    return f'<img src="{uri}" alt="{label}" title="{label}">'


def _block(block: object, names: dict[str, str], md: MarkdownIt, redact: Redactor) -> str:
    if isinstance(block, TextBlock):
        return md.render(redact(block.text)) if block.text.strip() else ""
    if isinstance(block, ThinkingBlock):
        text = block.text or "\n".join(block.summary)
        if not text.strip():
            return ""
        return (
            '<details class="thinking"><summary>Thinking</summary>'
            f"{md.render(redact(text))}</details>"
        )
    if isinstance(block, RedactedThinkingBlock):
        return '<details class="thinking"><summary>Thinking (encrypted)</summary></details>'
    if isinstance(block, ToolCallBlock):
        args = _code(redact(arguments_text(block)), "json")
        return (
            f'<details class="call"><summary>Tool call <code>{escape(block.name)}</code> '
            f'<span class="usage">{escape(block.id)}</span></summary>{args}</details>'
        )
    if isinstance(block, ToolResultBlock):
        name = escape(names.get(block.tool_call_id, "?"))
        cls = "result error" if block.is_error else "result"
        what = "Error from" if block.is_error else "Result of"
        body = f"<pre>{escape(redact(block.text))}</pre>"
        body += "".join(_image(p) for p in block.content if isinstance(p, ImageBlock))
        return (
            f'<details class="{cls}"><summary>{what} <code>{name}</code> '
            f'<span class="usage">{escape(block.tool_call_id)}</span></summary>{body}</details>'
        )
    if isinstance(block, ImageBlock):
        return _image(block)
    if isinstance(block, DocumentBlock):
        return f'<span class="chip">document: {escape(block.title or block.media_type)}</span>'
    if isinstance(block, ServerToolBlock):
        return _search(block, redact)
    if isinstance(block, CompactSummaryBlock):
        return (
            f'<section class="compaction"><h2>{escape(compaction_label(block))}</h2>'
            f"{md.render(redact(block.summary))}</section>"
        )
    return ""


def _search(block: ServerToolBlock, redact: Redactor) -> str:
    """A server-side web search: the query as the summary, the results as links (their href
    only when http(s)), or the error."""
    if block.error:
        body = f"<p>error {escape(block.error)}</p>"
    else:
        items: list[str] = []
        for h in block.results:
            url, title = escape(redact(h.url)), escape(redact(h.title or h.url))
            safe = h.url.startswith(("https://", "http://"))
            items.append(f'<li><a href="{url}">{title}</a></li>' if safe else f"<li>{title}</li>")
        body = f"<ul>{''.join(items)}</ul>" if items else "<p>no results</p>"
    return (
        f'<details class="call"><summary>Web search <code>{escape(redact(block.query))}</code> '
        f'<span class="usage">{escape(block.id)}</span></summary>{body}</details>'
    )


def _turn(turn: Turn, names: dict[str, str], md: MarkdownIt, redact: Redactor) -> str:
    if is_cancelled_reply(turn):  # no empty assistant box
        return f'<p class="usage">{escape(CANCELLED_TEXT)}</p>'
    body = "".join(_block(b, names, md, redact) for b in turn.content)
    if any(isinstance(b, CompactSummaryBlock) for b in turn.content):
        return body  # the marker is its own section
    results = turn.role == "user" and bool(turn.content) and all(
        isinstance(b, ToolResultBlock) for b in turn.content
    )
    cls = "turn results" if results else f"turn {escape(turn.role)}"
    role = "tool results" if results else escape(turn.role)
    usage = turn_usage_line(turn)
    extra = f'<span class="usage">{escape(usage)}</span>' if usage else ""
    return f'<div class="{cls}"><div class="role">{role}{extra}</div>{body}</div>'


def html_page(loaded: LoadedSession, redact: Redactor) -> str:
    """The page: a header (id, folder, created, turns, the session's usage and cost), then each
    turn (module docstring). Self-contained: styles inline, images as `data:` URIs."""
    h = loaded.header
    md = _markdown()
    names = tool_names(loaded.turns)
    turns = "\n".join(_turn(t, names, md, redact) for t in loaded.turns)
    parent = f"<li>forked from {escape(h.parent_session)}</li>" if h.parent_session else ""
    style = _CSS + str(_FORMATTER.get_style_defs(".hl"))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>tether session {escape(h.id)}</title><style>{style}</style></head><body>\n"
        f"<header><h1>Session {escape(h.id)}</h1><ul>"
        f"<li>folder: <code>{escape(redact(h.cwd))}</code></li>"
        f"<li>created: {escape(created_text(loaded))}</li>"
        f"<li>turns: {len(loaded.turns)}</li>"
        f'<li>usage: <span class="total">{escape(session_usage_line(loaded.turns))}</span></li>'
        f"{parent}</ul></header>\n<main>\n{turns}\n</main></body></html>\n"
    )
