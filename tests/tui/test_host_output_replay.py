"""Host command output persisted and replayed (issue 39): what `/tool` and `!cmd` showed comes
back, in its place, when the session is resumed; `/tool`'s output is a session event the model
never sees, `!cmd`'s is its stored message shown as it was live (the `!cmd` line, its output)."""

from __future__ import annotations

from pathlib import Path

from kit.sandbox import sandbox_or_skip
from kit.tui import SIZE, idle, notes, scripted_app, send, until
from tether.agent.sessions import HOST_OUTPUT_EVENT
from tether.session import SessionStore
from tether.tools.base import tool
from tether.tui.shell_commands import BANG_LEAD, bang_context, parse_bang
from tether.tui.widgets import UserRow


@tool(secret=True)
def rotate_key(key: str) -> str:
    """Rotate a key.

    Args:
        key: which key.
    """
    return f"rotated {key}"


def user_rows(app: object) -> list[str]:
    return [r.text for r in app.query(UserRow)]  # type: ignore[attr-defined]


def test_a_bang_message_reads_back() -> None:
    assert parse_bang(bang_context("ls -a", "a\n</bash-stdout>b", 1000)) == (
        "ls -a",
        "a\n</bash-stdout>b",
    )
    assert parse_bang("hello") is None and parse_bang(BANG_LEAD) is None


async def test_tool_output_is_stored_and_shown_again_on_resume(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    app, provider = scripted_app(tmp_path, ["hi back"], store=store, tools=[rotate_key])
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await idle(app, pilot)
        await send(pilot, '/tool rotate_key {"key": "db"}')
        await until(pilot, lambda: "rotated db" in notes(app))
        assert app.opened is not None
        await app.opened.aclose()
    [event] = [e for e in store.load("s1").events if e.kind == HOST_OUTPUT_EVENT]
    assert event.data["command"] == '/tool rotate_key {"key": "db"}'
    assert "rotated db" in event.data["text"] and event.data["is_error"] is False
    assert all("rotated" not in str(r) for r in provider.requests)  # not the model's

    again, _ = scripted_app(tmp_path, [], store=store, tools=[rotate_key], resume="s1")
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "/tool rotate_key:\nrotated db" in notes(again))
        order = [type(w).__name__ for w in again.transcript.query("UserRow, AssistantRow, NoteRow")]
        texts = [
            str(getattr(w, "text", "")) for w in again.transcript.query("UserRow, AssistantRow")
        ]
        assert texts[:2] == ["hello", "hi back"]
        assert order.index("NoteRow") > order.index("AssistantRow")  # after the turn it followed


async def test_bang_output_is_shown_again_on_resume(tmp_path: Path) -> None:
    sandbox_or_skip()
    store = SessionStore(tmp_path / "sessions")
    app, _ = scripted_app(tmp_path, [], store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!echo replay-me")
        await idle(app, pilot)
        await until(pilot, lambda: "replay-me" in notes(app))
        assert app.opened is not None
        await app.opened.aclose()
    again, _ = scripted_app(tmp_path, [], store=store, resume="s1")
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "replay-me" in notes(again))
        assert user_rows(again) == ["!echo replay-me"]
        assert BANG_LEAD not in "".join(user_rows(again))
