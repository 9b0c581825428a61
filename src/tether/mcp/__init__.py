"""MCP: the tools of Model Context Protocol servers, over stdio and streamable HTTP, with OAuth.

The protocol, transports and OAuth are the official `mcp` SDK's; this package is the harness
side. The API a run uses is `McpTools` (`tether.mcp.tools`):

    mcp = McpTools(settings.mcp.servers, root=root, session_dir=..., sandbox=..., on_warning=...)
    tools = await mcp.start(taken=builtin_names)   # Tool objects: mcp__<server>__<tool>, ...
    mcp.attach(agent.registry)                     # kept current on tools/list_changed
    ...
    await mcp.aclose()

Modules: `config` (settings → `ServerSpec`, names, `${VAR}`), `convert` (results → parts),
`connection` (one server's lifecycle), `oauth` (token store, loopback redirect), `tools`.
"""

from tether.mcp.config import ServerSpec, resolve_server, tool_names
from tether.mcp.connection import McpServerError, ServerConnection
from tether.mcp.tools import READ_RESOURCE_TOOL, McpTools

__all__ = [
    "READ_RESOURCE_TOOL",
    "McpServerError",
    "McpTools",
    "ServerConnection",
    "ServerSpec",
    "resolve_server",
    "tool_names",
]
