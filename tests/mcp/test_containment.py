"""Stdio MCP servers under the OS sandbox, like `bash`: writes only under the working folder,
network on by default and off per server, provider key variables hidden unless the server's
`env` names them; without a sandbox, stdio servers are not started."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.mcp import DEMO
from tether.mcp import McpTools
from tether.messages import TextBlock
from tether.sandbox.detect import detect_sandbox
from tether.settings.model import McpServerSettings
from tether.tools.context import ToolOutput

pytestmark = pytest.mark.timeout(120)
SANDBOX = detect_sandbox()
needs_sandbox = pytest.mark.skipif(SANDBOX is None, reason="no OS sandbox on this machine")


def text(out: ToolOutput) -> str:
    assert not isinstance(out.content, str)
    return "".join(p.text for p in out.content if isinstance(p, TextBlock))


def server(**kw: object) -> McpServerSettings:
    return McpServerSettings.model_validate(
        {"command": sys.executable, "args": [str(DEMO)], **kw}
    )


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on the host's loopback (its port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(sock.getsockname()[1])
    stop.set()
    thread.join(2)
    sock.close()


@needs_sandbox
async def test_writes_confined_to_the_working_folder(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    mcp = McpTools({"demo": server()}, root=root, sandbox=SANDBOX)
    try:
        await mcp.start()
        inside = await mcp.call("demo", "write_file", {"path": "inside.txt", "text": "ok"})
        escape = await mcp.call("demo", "write_file", {"path": str(outside), "text": "no"})
        home = Path.home() / f".tether-mcp-test-{tmp_path.name}"
        escape_home = await mcp.call("demo", "write_file", {"path": str(home), "text": "no"})
    finally:
        await mcp.aclose()
    assert text(inside) == "wrote inside.txt" and (root / "inside.txt").read_text() == "ok"
    # under /tmp the sandbox's private temp folder takes the write: the host's file is untouched
    assert not outside.exists(), text(escape)
    assert text(escape_home).startswith("refused") and not home.exists()


@needs_sandbox
async def test_provider_keys_hidden_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-servers")
    monkeypatch.setenv("TETHER_MCP_PLAIN", "plain")
    servers = {
        "plain": server(),
        "named": server(env={"OPENAI_API_KEY": "${OPENAI_API_KEY}"}),
    }
    mcp = McpTools(servers, root=tmp_path, sandbox=SANDBOX)
    try:
        await mcp.start()
        hidden = await mcp.call("plain", "env_value", {"var": "OPENAI_API_KEY"})
        other = await mcp.call("plain", "env_value", {"var": "TETHER_MCP_PLAIN"})
        named = await mcp.call("named", "env_value", {"var": "OPENAI_API_KEY"})
    finally:
        await mcp.aclose()
    assert text(hidden) == "<unset>"
    assert text(other) == "plain"
    assert text(named) == "sk-test-not-for-servers"


@needs_sandbox
async def test_network_on_by_default_off_per_server(tmp_path: Path, listener: int) -> None:
    servers = {"net": server(), "offline": server(network=False)}
    mcp = McpTools(servers, root=tmp_path, sandbox=SANDBOX)
    try:
        await mcp.start()
        on = await mcp.call("net", "connect", {"port": listener})
        off = await mcp.call("offline", "connect", {"port": listener})
    finally:
        await mcp.aclose()
    assert text(on) == "connected"
    assert text(off).startswith("no connection")


async def test_no_sandbox_no_stdio_server(tmp_path: Path) -> None:
    warnings: list[tuple[str, str]] = []
    mcp = McpTools(
        {"demo": server()},
        root=tmp_path,
        sandbox=None,
        on_warning=lambda k, m: warnings.append((k, m)),
    )
    assert await mcp.start() == []
    await mcp.aclose()
    assert warnings == [("mcp_server_failed", "MCP server `demo` skipped: no OS sandbox to run it in")]
