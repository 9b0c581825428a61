"""Exporting a stored session (`tether.session.export`): a session with a tool call, thinking,
a compaction and an image, as Markdown, as one self-contained HTML page (parsed with
html.parser) and as JSON lines; secrets masked in every format, raw HTML never passed through."""

from __future__ import annotations

import base64
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from tether.messages import (
    CompactSummaryBlock,
    ImageBlock,
    Provenance,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    Turn,
    Usage,
)
from tether.session import SessionStore
from tether.session.export import export_session
from tether.session.export_html import html_page
from tether.session.export_text import markdown
from tether.session.model import LoadedSession, LoadReport, SessionHeader
from tether.tools.env import redact_secrets

SECRET = "sk-ant-" + "a1B2" * 8  # secret-shaped: masked like tool output
ENV_VALUE = "hunter2-correct-horse"  # a known secret value


def png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (12, 9), "green").save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


PNG = png()
PROV = Provenance(provider="anthropic", api="anthropic", model="claude-sonnet-4-5")


def turns() -> list[Turn]:
    return [
        Turn(
            id="u1",
            role="user",
            content=(
                TextBlock(text=f"What is in the picture? key {SECRET} <script>alert(1)</script>"),
                ImageBlock(media_type="image/png", data=PNG),
            ),
        ),
        Turn(
            id="a1",
            role="assistant",
            content=(
                ThinkingBlock(text="I should list the folder first.", signature="sig"),
                ToolCallBlock(id="c1", name="bash", arguments={"command": f"echo {ENV_VALUE}"}),
            ),
            usage=Usage(input_tokens=1000, output_tokens=50),
            provenance=PROV,
            stop_reason="tool_use",
        ),
        Turn(
            id="u2",
            role="user",
            content=(ToolResultBlock(tool_call_id="c1", content=(TextBlock(text=ENV_VALUE),)),),
        ),
        Turn(
            id="m1",
            role="user",
            content=(
                CompactSummaryBlock(summary="The user asked about a picture.", replaces_turn_ids=("u1", "a1")),
            ),
        ),
        Turn(
            id="a2",
            role="assistant",
            content=(TextBlock(text="A green square.\n\n```python\nprint('green')\n```"),),
            usage=Usage(input_tokens=1200, output_tokens=20, cache_read_tokens=900),
            provenance=PROV,
            stop_reason="end_turn",
        ),
    ]


@pytest.fixture
def loaded(tmp_path: Path) -> LoadedSession:
    store = SessionStore(tmp_path)
    with store.create(session_id="s1", cwd="/work") as w:
        for turn in turns():
            w.append(turn)
    return store.load("s1")


def redact(text: str) -> str:
    return redact_secrets(text, (ENV_VALUE,))


class Page(HTMLParser):
    """Collects what the checks read, and fails on a tag left open at the end."""

    VOID = frozenset({"meta", "img", "br", "hr", "link", "input"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.summaries: list[str] = []
        self._in_summary = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)
        self._in_summary = tag == "summary" or self._in_summary

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))  # `<br />`: opens and closes

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag == "summary":
            self._in_summary = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_summary:
            self.summaries.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    assert parser.stack == [], f"unclosed: {parser.stack}"
    return parser


def test_the_html_page_parses_and_shows_every_part(loaded: LoadedSession) -> None:
    page = html_page(loaded, redact)
    parsed = parse(page)
    tags = [t for t, _ in parsed.tags]
    assert "script" not in tags  # the user's <script> is text, not markup
    assert "<script>alert(1)</script>" in "".join(parsed.text)
    summaries = " ".join(parsed.summaries)
    assert "Thinking" in summaries and "Tool call" in summaries and "Result of" in summaries
    assert tags.count("details") == 3  # thinking, the call, the result: collapsible
    (img,) = [a for t, a in parsed.tags if t == "img"]
    assert img["src"] == f"data:image/png;base64,{PNG}"  # inline: the page loads nothing
    assert not [a for t, a in parsed.tags if t in ("link", "script") or "href" in a]
    sections = [a for t, a in parsed.tags if t == "section"]
    assert sections == [{"class": "compaction"}]
    assert "Compaction 1: a summary replaces 2 earlier turns" in parsed.text
    assert any(a.get("class") == "hl" for t, a in parsed.tags if t == "pre")  # highlighted
    assert "in 3100 (cache 900, 29 % hit) / 70 out · $" in page  # the session's usage and cost
    assert SECRET not in page and ENV_VALUE not in page and "[REDACTED]" in page


def test_markdown_shows_every_part(loaded: LoadedSession) -> None:
    text = markdown(loaded, redact)
    assert text.startswith("# Session s1\n")
    assert "> **Thinking**\n>\n> I should list the folder first." in text
    assert "**Tool call** `bash` (c1)\n\n```json\n" in text
    assert "**Result** of `bash` (c1)" in text
    assert "[image: image/png, " in text and "s1/images/" in text
    assert "## Compaction\n\n> **Compaction 1: a summary replaces 2 earlier turns**" in text
    assert "*anthropic/claude-sonnet-4-5 · in 1000 / 50 out · $" in text
    assert SECRET not in text and ENV_VALUE not in text


def test_jsonl_holds_the_turns_with_images_inline(loaded: LoadedSession) -> None:
    rows = [json.loads(x) for x in export_session(loaded, "jsonl", redact=redact).splitlines()]
    head, *rest = rows
    assert head["type"] == "session" and head["id"] == "s1"
    assert head["usage"]["input_tokens"] == 2200 and head["cost_usd"] > 0
    assert [r["turn"]["id"] for r in rest] == ["u1", "a1", "u2", "m1", "a2"]
    image = rest[0]["turn"]["content"][1]
    assert image == {"type": "image", "media_type": "image/png", "data": PNG}
    assert rest[1]["turn"]["content"][0]["signature"] == "sig"  # provider tokens kept
    dumped = json.dumps(rows)
    assert SECRET not in dumped and ENV_VALUE not in dumped


def test_an_unknown_format_is_refused(loaded: LoadedSession) -> None:
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        export_session(loaded, "pdf", redact=redact)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.text(max_size=60))
def test_any_text_renders_to_a_page_that_parses(text: str, name: str) -> None:
    loaded_turns = (
        Turn(id="u", role="user", content=(TextBlock(text=text),)),
        Turn(id="a", role="assistant", content=(ToolCallBlock(id="c", name=name or "t"),)),
        Turn(
            id="r",
            role="user",
            content=(ToolResultBlock(tool_call_id="c", content=(TextBlock(text=text),)),),
        ),
    )
    session = LoadedSession(
        header=SessionHeader(id="p", created_ms=0, cwd="/"),
        path=Path("/p.jsonl"),
        turns=loaded_turns,
        turn_ts_ms=(0, 0, 0),
        events=(),
        last_entry_id=None,
        report=LoadReport(path=Path("/p.jsonl")),
    )
    parsed = parse(html_page(session, lambda s: s))
    assert "script" not in [t for t, _ in parsed.tags]
