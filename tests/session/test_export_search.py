"""A server-side web search in a stored session: exported to Markdown, HTML and JSONL, shown
by the TUI's history rows and replayed to an ACP client, with the query and the pages found."""

from __future__ import annotations

import json
from pathlib import Path

from tether.acp.convert import replay_updates
from tether.messages import Provenance, SearchHit, ServerToolBlock, TextBlock, Turn, text_turn
from tether.session import SessionStore
from tether.session.export import export_session
from tether.session.export_html import html_page
from tether.session.export_text import markdown
from tether.tui.rows import history_rows, search_text

PROV = Provenance(provider="anthropic", api="anthropic", model="claude-sonnet-4-5")
USE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://docs.python.org/3/",
            "title": "Python docs <3>",
            "encrypted_content": "ENC",
        }
    ],
}
SEARCH = ServerToolBlock(
    name="web_search",
    producer="anthropic",
    id="srvtoolu_1",
    query="python asyncio docs",
    results=(
        SearchHit(url="https://docs.python.org/3/", title="Python docs <3>"),
        SearchHit(url="javascript:alert(1)", title="bad"),
    ),
    raw=(USE, RESULT),
)
FAILED = ServerToolBlock(
    name="web_search", producer="anthropic", id="srvtoolu_2", query="x", error="unavailable"
)


def turns() -> list[Turn]:
    return [
        text_turn("u1", "user", "find the asyncio docs"),
        Turn(
            id="a1",
            role="assistant",
            content=(SEARCH, FAILED, TextBlock(text="Here they are.")),
            provenance=PROV,
            stop_reason="end_turn",
        ),
    ]


def loaded(tmp_path: Path):
    store = SessionStore(tmp_path)
    with store.create(session_id="s1", cwd="/work") as w:
        for turn in turns():
            w.append(turn)
    return store.load("s1")


def keep(text: str) -> str:
    return text


def test_exports_show_the_search(tmp_path: Path) -> None:
    session = loaded(tmp_path)
    assert session.turns[1].content[0] == SEARCH  # stored whole
    md = markdown(session, keep)
    assert "**Web search** `python asyncio docs` (srvtoolu_1)" in md
    assert "- [Python docs <3>](https://docs.python.org/3/)" in md
    assert "**Web search** `x` (srvtoolu_2) — error unavailable" in md
    page = html_page(session, keep)
    assert "Web search <code>python asyncio docs</code>" in page
    assert '<a href="https://docs.python.org/3/">Python docs &lt;3&gt;</a>' in page
    assert 'href="javascript:' not in page and "<li>bad</li>" in page
    assert "<p>error unavailable</p>" in page
    rows = [json.loads(x) for x in export_session(session, "jsonl", redact=keep).splitlines()]
    block = rows[2]["turn"]["content"][0]
    assert block["type"] == "server_tool" and block["raw"] == [USE, RESULT]


def test_tui_and_acp_show_the_search() -> None:
    text = search_text(SEARCH.query, SEARCH.results, None)
    assert text.splitlines() == [
        "searched: python asyncio docs",
        "  Python docs <3> — https://docs.python.org/3/",
        "  bad — javascript:alert(1)",
    ]
    assert search_text("x", (), "unavailable").splitlines() == [
        "searched: x",
        "  error unavailable",
    ]
    assert len(history_rows(turns())) == 4  # the user text, two searches, the answer
    updates = list(replay_updates(turns(), Path("/work")))
    calls = [u for u in updates if u.session_update == "tool_call"]
    assert [(c.tool_call_id, c.kind, c.status) for c in calls] == [
        ("srvtoolu_1", "fetch", "completed"),
        ("srvtoolu_2", "fetch", "failed"),
    ]
    assert calls[0].title == "web_search: python asyncio docs"
