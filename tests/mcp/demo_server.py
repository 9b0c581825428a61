"""A real MCP server built with the SDK's MCPServer (FastMCP in SDK 1.x), for the MCP tests.

Run: `python demo_server.py` (stdio) or `python demo_server.py http PORT` (streamable HTTP on
127.0.0.1:PORT, path /mcp). With `MARK_DIR` set, it writes marker files there: `started-<pid>`
at start, `hanging` when a `hang` call starts, `cancelled` when one is cancelled. stderr gets a line at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import mcp_types as mt
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel

server = MCPServer("demo")
MARKS = Path(os.environ["MARK_DIR"]) if os.environ.get("MARK_DIR") else None
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)


def mark(name: str, text: str = "") -> None:
    if MARKS is not None:
        (MARKS / name).write_text(text)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool()
def weather(city: str) -> Weather:
    """The weather in a city (structured)."""
    return Weather(city=city, celsius=21.5)


@server.tool()
def structured_only() -> mt.CallToolResult:
    """A result with structuredContent and no text."""
    return mt.CallToolResult(content=[], structured_content={"answer": 42})


@server.tool()
def fail(message: str) -> str:
    """Always fails."""
    raise ValueError(message)


@server.tool()
def pic() -> Image:
    """A 1x1 PNG."""
    return Image(data=PNG, format="png")


@server.tool()
def embedded() -> list[mt.ContentBlock]:
    """An embedded text resource and a resource link."""
    return [
        mt.EmbeddedResource(
            resource=mt.TextResourceContents(uri="note://one", mime_type="text/plain", text="hi")
        ),
        mt.ResourceLink(name="readme", uri="note://readme", mime_type="text/plain"),
    ]


@server.tool()
def big(n: int) -> str:
    """n lines of text."""
    return "\n".join(f"line {i} of the big output" for i in range(n))


@server.tool()
async def hang(seconds: float) -> str:
    """Sleeps; marks `hanging` first and `cancelled` when cancelled."""
    mark("hanging", "yes")
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        mark("cancelled", "yes")
        raise
    return "woke up"


@server.tool()
def crash() -> str:
    """Exits the process mid-call."""
    print("crashing now", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def env_value(var: str) -> str:
    """The value of an environment variable, or <unset>."""
    return os.environ.get(var, "<unset>")


@server.tool()
def write_file(path: str, text: str) -> str:
    """Write text to a file (relative to the server's cwd)."""
    try:
        Path(path).write_text(text)
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return f"wrote {path}"


@server.tool()
def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1:port."""
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "connected"
    except OSError as exc:
        return f"no connection: {exc.strerror or exc}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `extra` and announces the change."""

    @server.tool()
    def extra() -> str:
        """Added later."""
        return "extra!"

    with contextlib.suppress(Exception):
        await ctx.session.send_tool_list_changed()  # 2025 protocol
    with contextlib.suppress(Exception):
        await ctx.notify_tools_changed()  # 2026-07-28: subscriptions/listen
    return "grown"


@server.resource("note://readme", mime_type="text/plain")
def readme() -> str:
    return "the readme text"


if __name__ == "__main__":
    print(f"demo server starting ({sys.argv[1:]})", file=sys.stderr, flush=True)
    mark(f"started-{os.getpid()}")
    if os.environ.get("START_SLEEP"):  # a server that hangs before its handshake (trial4)
        import time

        time.sleep(float(os.environ["START_SLEEP"]))
    if os.environ.get("BANNER"):  # a server that greets on stdout (trial4's noisy server)
        print(os.environ["BANNER"], flush=True)
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
