"""`/tool NAME JSON` in the interactive session (issue 39, audit row 10): the user calls a tool
the model may not (a `secret` one) and sees its result; a bad call is one note."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, notes, scripted_app, send
from tether.tools.base import tool

ran: list[str] = []


@tool(secret=True)
def rotate_key(key: str) -> str:
    """Rotate a key.

    Args:
        key: which key.
    """
    ran.append(key)
    return f"rotated {key}"


async def test_tool_command_calls_a_secret_tool(tmp_path: Path) -> None:
    ran.clear()
    app, provider = scripted_app(tmp_path, [], tools=[rotate_key])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await send(pilot, '/tool rotate_key {"key": "db"}')
        await pilot.pause()
        assert "rotated db" in notes(app)
        await send(pilot, "/tool rotate_key {oops")
        await pilot.pause()
        assert "/tool rotate_key: the arguments are not JSON" in notes(app)
        await send(pilot, "/tool")
        await pilot.pause()
        assert "[secret]" in notes(app)
    assert ran == ["db"] and provider.requests == []
